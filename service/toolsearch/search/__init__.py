"""Search over one catalog's tools.

The catalog layer builds one `SearchIndex` per distinct set of tools (`build`) and asks it for
ranked positions; it knows nothing of how ranking works. Text analysis lives in `text`, what text
a tool contributes in `documents`, lexical (BM25F) ranking in `lexical`, embeddings of tools in
`semantic`. A hybrid search (`hybrid`) reads a request (`request`), computes its signals
(`signals`), scores them (`scoring`: the hand-set fusion, or the learned ranking of `ranking`),
judges abstention (`abstention`) and selects the answer (`selection`, shared with lexical search,
and `sentences` for long requests). Measurement and training sit beside serving: `inspection`,
`evaluation`, `training`, `abstention_training`.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol


class SearchHit(NamedTuple):
    position: int
    """Index of the tool in the sequence the index was built from."""
    score: float
    """Higher is better; comparable only within one query's answer."""
    weak: bool = False
    """The index doubts that this tool serves the query: shown as the closest, not as a match."""


class SearchIndex(Protocol):
    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; fewer (or none) when few match."""
        ...

    def unknown_words(self, query: str) -> list[str]:
        """The words of `query` that no tool's text has (`LexicalIndex.unknown_words`)."""
        ...
