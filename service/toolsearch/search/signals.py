"""A request's signals over a catalog: what every ranker and the abstention judgement read.

`request_signals` computes them, once per request (and per sentence of a long one), from the
request as read (`search.request`) and what the models made of it (`Embedded`):

- dense: the cosines of the request's embedding to each tool's two passages, blended
  (`SemanticIndex.similarities`), plus what the catalog learned from use (`search.learning`),
  and each companion model's, unless the request is in a
  language that model does not know;
- lexical: BM25F of the request's words, plus, at `EXPANSION_WEIGHT`, of the `EXPANSION_WORDS`
  catalog words nearest to its embedding (the catalog's own words for what was asked, whatever
  the language), plus its translated words (`DICTIONARY_WEIGHT` for a dictionary's,
  `TRANSLATION_WEIGHT` for the model's guesses);
- the hand-set fusion (`fused`): `LEXICAL_WEIGHT` x BM25 over its best score + `DENSE_WEIGHT` x
  the dense similarity's z-score over the catalog + `COMPANION_WEIGHT` x each companion's.
  Normalised scores, not reciprocal rank fusion: they keep how far apart the candidates are (one
  tool far ahead on BM25 stays ahead) and carry the absolute evidence abstention needs.

The fusion is also taken before the translated words count (`Signals.untranslated`): abstention
judges that ranking's best tool, since translations are guesses and may pull a wrong tool up.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.request import Request
from toolsearch.search.semantic import SemanticIndex

LEXICAL_WEIGHT = 0.35
DENSE_WEIGHT = 0.065
"""Per standard deviation of the cosine: 0.65 of the weight, over a z-score of ~10 at the top."""
COMPANION_WEIGHT = 0.02
"""Per standard deviation of a companion model's dense score (tuned with USE-m beside e5)."""
EXPANSION_WORDS = 8
EXPANSION_WEIGHT = 0.6
TRANSLATION_WEIGHT = 1.5
"""A translated word's weight, a query word's being 1 (tuned on the dev set)."""
DICTIONARY_WEIGHT = 2.0
"""The weight of a word a dictionary gave: it reads a word better than the model guesses one."""


@dataclass(frozen=True, slots=True)
class Signals:
    """One query's evidence over a catalog's tools, one entry per tool."""

    fusion: np.ndarray
    """The hand-set fusion's score (before named tools are put first)."""
    lexical: np.ndarray
    """BM25F with the query's expansion and translations, as the fusion weighs them."""
    server_lexical: np.ndarray
    """The part of BM25F that comes from the tool's server's words."""
    dense: np.ndarray
    """The first model's similarity (both passages blended)."""
    companions: tuple[np.ndarray, ...]
    """Each companion model's similarity; zeros where it sits out the query's language."""
    named: np.ndarray
    """Positions of the tools the query names."""
    english: bool
    vector: np.ndarray
    """The request's embedding by the first model, before its adapter."""

    adapted_dense: np.ndarray | None = None
    """The first model's similarity to the request's adapted vector (with a ranker only)."""
    untranslated: tuple[float, float] = (0.0, 0.0)
    """Before the request's words were translated: the best fused tool's passage cosine to the
    request, and the best lexical score (what abstention judges: translations are guesses)."""


@dataclass(frozen=True, slots=True)
class Embedded:
    """What the models made of a request (the models run before, all at once)."""

    vector: np.ndarray
    """The first model's embedding of the request."""
    adapted: np.ndarray | None
    """That embedding moved by the ranker's adapter (`ranking.adapt`); None without a ranker."""
    companions: tuple[np.ndarray | None, ...]
    """Each companion model's similarities to the request; None where it sits out its language."""
    guessed: tuple[str, ...]
    """The catalog words the first model reads the request's unread words as."""
    learned: np.ndarray | None = None
    """Each tool's learned evidence for the request (`search.learning`), in units of the first
    model's cosine; None when the catalog learned nothing (or learning is off)."""


def standardised(scores: np.ndarray) -> np.ndarray:
    """Scores as z-scores over the catalog (what the fusion adds, and what features compare)."""
    return (scores - float(scores.mean())) / max(float(scores.std()), 1e-9)


def relative(scores: np.ndarray) -> np.ndarray:
    """Scores over the best one."""
    return scores / max(float(scores.max()), 1e-9)


def fused(dense_part: np.ndarray, lexical: np.ndarray) -> np.ndarray:
    """The hand-set fusion: the models' weighted z-scores (`dense_part`) and the lexical scores
    over their best."""
    result: np.ndarray = dense_part + LEXICAL_WEIGHT * relative(lexical)
    return result


def request_signals(
    request: Request, embedded: Embedded, lexical: LexicalIndex, semantic: SemanticIndex
) -> Signals:
    """Every signal of `request` over the catalog of `lexical` and `semantic`."""
    vector = embedded.vector
    adapted_dense = None
    if embedded.adapted is None:
        dense = semantic.similarities(vector)
    else:  # the adapted query's similarities in the same pass over the tools
        dense, adapted_dense = semantic.similarities(np.stack([vector, embedded.adapted]))
    if embedded.learned is not None:  # what callers of this catalog taught it: the dense evidence's part
        dense = dense + embedded.learned
    own, server_share = lexical.bm25_parts(request.request)
    scores = own + server_share
    expansion = semantic.nearest_words(vector, EXPANSION_WORDS)
    if expansion:
        scores = scores + EXPANSION_WEIGHT * lexical.bm25_scores(" ".join(expansion))
    dense_part = DENSE_WEIGHT * standardised(dense)
    companions = []
    for similarity in embedded.companions:
        if similarity is None:
            companions.append(np.zeros_like(dense))
            continue
        dense_part += COMPANION_WEIGHT * standardised(similarity)
        companions.append(similarity)
    fusion = fused(dense_part, scores)
    untranslated = (semantic.passage_cosine(int(np.argmax(fusion)), vector), float(scores.max()))
    read, guessed = request.read, embedded.guessed
    for words, weight in ((read, DICTIONARY_WEIGHT), (guessed, TRANSLATION_WEIGHT)):
        if words:
            scores = scores + weight * lexical.bm25_scores(" ".join(words))
    if read or guessed:
        fusion = fused(dense_part, scores)
    return Signals(
        fusion=fusion,
        lexical=scores,
        server_lexical=server_share,
        dense=dense,
        companions=tuple(companions),
        named=request.named,
        english=request.language == "en",
        vector=vector,
        adapted_dense=adapted_dense,
        untranslated=untranslated,
    )
