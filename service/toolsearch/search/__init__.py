"""Search over one catalog's tools.

The catalog layer builds one `SearchIndex` per distinct set of tools and asks it for ranked
positions; it knows nothing of how ranking works. Lexical (BM25) ranking lives in `lexical`,
text analysis in `text`, and what text a tool contributes in `documents`.
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
