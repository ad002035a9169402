"""Hybrid ranking: BM25F and embeddings fused, named tools first, and abstention when nothing fits.

A query is ranked in these steps (`HybridIndex.evidence`, then `HybridIndex.scores`):

1. The request is separated from its data: quoted text, URLs and e-mail addresses are the
   arguments of the task (a page title, a record's name), not what tool it needs, so both
   rankers see the query without them (`intent`). Tool names are still looked for in the whole
   query.
2. Dense: the cosines of the query's embedding to each tool's two passages, blended
   (`SemanticIndex.similarities`).
3. Lexical: BM25F of the query's words, plus, at `EXPANSION_WEIGHT`, of the `EXPANSION_WORDS`
   catalog words nearest to the query's embedding: the catalog's own words for what was asked,
   whatever the language, so that lexical search matches requests written in other words.
4. Fusion: `LEXICAL_WEIGHT` x BM25 / its best score + `DENSE_WEIGHT` x the dense similarity's
   z-score over the catalog, + `COMPANION_WEIGHT` x the z-score of each further model's (a
   `Companion`, unless the query is in a language that model does not know). Normalised scores,
   not reciprocal rank fusion: they keep how far apart the candidates are (one tool far ahead on
   BM25 stays ahead) and carry the absolute evidence abstention needs.
5. Abstention (without a trained `Abstainer`): when no tool is named and the best tool's passage
   cosine is below the model's calibrated `AbstentionThreshold.cosine` and the best lexical score
   below `.lexical` (with dictionaries: the score with the translations of step 6 below
   `.translated_lexical`), every hit is weak.
6. Translation, for a query not in English: each of its words that no tool has
   (`LexicalIndex.unknown_words`; in Chinese and Japanese, whose words no space separates, the
   words `text.cjk_words` cuts from the query with the model's own tokenizer) is read in English
   by the profile's bilingual dictionary of its language (`search.dictionaries`), for the catalog
   words it gives; a word no dictionary knows is embedded alone and read as the catalog word
   nearest to it, when that one is at the model's calibrated `translation_cosine` or closer. The
   lexical part of the fusion then counts those words too, at `DICTIONARY_WEIGHT` and
   `TRANSLATION_WEIGHT`. The best tool abstention judges is the one before translation (a
   translation may be wrong and pull another tool up); with dictionaries, the words translated
   count in the lexical score it judges: without them a request not in English looks unservable
   to BM25F.
7. Ranking: with a `Ranker` trained for the index's models (`search.ranking`), the learned
   re-ranker orders the fusion's candidates; without one, the fusion does. A tool the query names
   (`LexicalIndex.name_matches`) ranks above all others either way. With an `Abstainer` trained
   for the ranker (`search.abstention`), it decides abstention from the request's evidence and
   ranking instead of step 5's thresholds; a request that names a tool is never abstained on.
8. Long requests: a request of several sentences (background, the ask, thanks) is also ranked
   sentence by sentence, each tool adding its best sentence's score to the whole request's
   (`search.sentences`).

Every model run these steps need (each model's of the request, e5's of the words to translate,
and the same for a long request's sentences) depends on the text alone, so they start together
before ranking (`embed_at_once`): a request costs about its longest run, not their sum.

The weights were tuned on the dev set, the ranker trained on the training set; what each step
gained is in docs/search-quality.md.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor, wait
from dataclasses import dataclass
from typing import Literal

import numpy as np
from cachetools import LRUCache

from toolsearch.embedding import Embedder
from toolsearch.embedding.embedder import usable_cores
from toolsearch.naming import split_qualified_name
from toolsearch.search import SearchHit, SearchIndex, text
from toolsearch.search.abstention import Abstainer, Words, request_features
from toolsearch.search.dictionaries import Dictionaries, digest_of
from toolsearch.search.lexical import LexicalIndex
from toolsearch.search.profile import Profile
from toolsearch.search.progressive import EmbeddingWorker, ProgressiveIndex
from toolsearch.search.ranking import (
    Ranker,
    ServerGroups,
    Signals,
    adapt,
    named_first,
    one_word_names,
    relative,
    standardised,
)
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.sentences import combined, sentences
from toolsearch.search.vectors import MemoryVectorCache, VectorCache
from toolsearch.tool import Tool

Mode = Literal["bm25", "dense", "hybrid"]

LEXICAL_WEIGHT = 0.35
DENSE_WEIGHT = 0.065
"""Per standard deviation of the cosine: 0.65 of the weight, over a z-score of ~10 at the top."""
COMPANION_WEIGHT = 0.02
"""Per standard deviation of a companion model's dense score (tuned with USE-m beside e5)."""
EXPANSION_WORDS = 8
EXPANSION_WEIGHT = 0.6
TRANSLATED_WORDS = 12
"""At most this many words of a query are translated by the model: each costs it a model run, once."""
LOOKED_UP_WORDS = 64
"""At most this many words of a query are looked up in a dictionary (tens of microseconds each)."""
TRANSLATION_WEIGHT = 1.5
"""A translated word's weight, a query word's being 1 (tuned on the dev set)."""
DICTIONARY_WEIGHT = 2.0
"""The weight of a word a dictionary gave: it reads a word better than the model guesses one."""
_MAX_QUERY_CHARS = 4096
EMBEDDING_WAIT_SECONDS = 1.0
"""How long building an index waits for its hybrid form before serving BM25F meanwhile."""

# Quoted spans in the quotation marks of the languages served, then URLs and e-mail addresses.
_QUOTED = re.compile(
    r"\"[^\"\n]{1,200}\"|“[^”\n]{1,200}”|„[^“”\n]{1,200}[“”]|«[^»\n]{1,200}»|‘[^’\n]{1,200}’"
    r"|「[^」\n]{1,200}」|『[^』\n]{1,200}』|`[^`\n]{1,200}`|(?<!\w)'[^'\n]{1,200}'(?!\w)"
)
_ADDRESSES = re.compile(r"\b(?:https?://|www\.)\S+|[\w.+-]+@[\w-]+\.[\w.]+")
_SPACES = re.compile(r"\s+")
_MIN_INTENT_CHARS = 3


@dataclass(frozen=True, slots=True)
class AbstentionThreshold:
    cosine: float
    """Below this cosine (of the best fused tool to the query) the match is doubtful..."""
    lexical: float
    """...and, with a lexical score (BM25 plus expansion, of the request's own words) below this, weak."""
    translated_lexical: float | None = None
    """With dictionaries, the lexical score judged counts the request's translated words too, and
    weak is below this instead."""


@dataclass(frozen=True, slots=True)
class Calibration:
    """What a model's cosines mean, measured on the dev set: cosines are not comparable across models."""

    abstention: AbstentionThreshold
    translation_cosine: float
    """A query word no tool has is read as the catalog word nearest to it at this cosine or above."""


_E5_SMALL = Calibration(
    # About the 5th percentile of the tune half's servable queries' cosine and the 30th of their
    # lexical score; with dictionaries (the profile), the lexical score with the translated words
    # (chosen on the dev set: docs/search-quality.md, "Abstention").
    AbstentionThreshold(cosine=0.808, lexical=22.7, translated_lexical=30.0),
    # The middle of the range where the tuning half's recall@5 is flat; lower, wrong translations
    # come in (`visus`, Lithuanian for `all`, as `visuals`).
    translation_cosine=0.9,
)
CALIBRATIONS: dict[str, Calibration] = {
    "multilingual-e5-small-q4": _E5_SMALL,
    # The same model fetched from the hub (full precision, int8): assumed to share the 4-bit
    # import's calibration, which could not be checked here (no hub).
    "multilingual-e5-small": _E5_SMALL,
    "multilingual-e5-small-int8": _E5_SMALL,
}
"""Per model name. A model without an entry never abstains and never translates words."""


def intent(query: str) -> str:
    """The query without its data (quoted text, URLs, e-mail addresses): what it asks to be done.
    The whole query when nothing else is left."""
    stripped = _SPACES.sub(" ", _ADDRESSES.sub(" ", _QUOTED.sub(" ", query))).strip()
    return stripped if len(stripped) >= _MIN_INTENT_CHARS else query


class QueryVectors:
    """Query embeddings, the `max_queries` most recently used kept: agents repeat their queries."""

    def __init__(self, embedder: Embedder, max_queries: int = 4096) -> None:
        self.embedder = embedder
        self._vectors: LRUCache[str, np.ndarray] = LRUCache(max_queries)
        self._lock = threading.Lock()  # searches run in worker threads

    def __call__(self, query: str) -> np.ndarray:
        return self._vectors_of([query])[query]

    def many(self, queries: Sequence[str]) -> np.ndarray:
        """One row per query; those not cached are embedded together, in one model call."""
        if not queries:
            return np.zeros((0, self.embedder.dimensions), dtype=np.float32)
        found = self._vectors_of(queries)
        return np.stack([found[query] for query in queries])

    def missing(self, queries: Sequence[str]) -> list[str]:
        """Those of `queries` whose vectors are not cached, each once."""
        with self._lock:
            return [query for query in dict.fromkeys(queries) if query not in self._vectors]

    def _vectors_of(self, queries: Sequence[str]) -> dict[str, np.ndarray]:
        with self._lock:
            cached = {query: self._vectors.get(query) for query in queries}
        found = {query: vector for query, vector in cached.items() if vector is not None}
        missing = [query for query in cached if query not in found]
        if missing:
            found.update(zip(missing, self.embedder.embed_queries(missing), strict=True))
            with self._lock:
                self._vectors.update((query, found[query]) for query in missing)
        return found

    def __len__(self) -> int:
        return len(self._vectors)


QUERY_RUNS = ThreadPoolExecutor(usable_cores(), thread_name_prefix="toolsearch-query")
"""Where a request's further model runs go while its first runs on the searching thread, for indexes
built outside a proxy (eval, `toolsearch search`); a proxy's go to its `EmbeddingWorker.query_runs`."""


def embed_at_once(runs: Sequence[tuple[QueryVectors, Sequence[str]]], executor: Executor | None) -> None:
    """Fill each `QueryVectors` with the vectors of those of its texts it lacks, one model run
    each: the first on this thread, the others meanwhile on `executor` (one after another without
    one). onnxruntime lets the GIL go while it runs, so a request's runs (e5's, USE's, its words')
    take about as long as the longest of them rather than all of them together."""
    wanted = [(vectors, missing) for vectors, texts in runs if (missing := vectors.missing(texts))]
    if not wanted:
        return
    if executor is None:
        for vectors, texts in wanted:
            vectors.many(texts)
        return
    (vectors, texts), *others = wanted
    pending = [executor.submit(each.many, its_texts) for each, its_texts in others]
    try:
        vectors.many(texts)
    finally:
        wait(pending)  # none is left running when this returns, whatever happened here
    for each in pending:
        each.result()


@dataclass(frozen=True, slots=True)
class Evidence:
    signals: Signals
    scores: np.ndarray
    """Every tool's final score (`HybridIndex.scores`)."""
    weak: bool
    """The best tool is a poor match: search abstains."""


@dataclass(frozen=True, slots=True)
class Ranking:
    evidence: Evidence
    """Of the whole request."""
    whole: np.ndarray
    """Every tool's score for the whole request."""
    scores: np.ndarray
    """The final scores: `whole`, plus each tool's best sentence score for a long request."""
    weak: bool
    """No tool fits the request or any of its sentences well."""


@dataclass(frozen=True, slots=True)
class Companion:
    """A further embedding model in the fusion: its vectors of the catalog and its query cache."""

    semantic: SemanticIndex
    query_vectors: QueryVectors

    def knows(self, language: str) -> bool:
        """Whether the model was trained on `language` (a model that lists none knows them all)."""
        languages = self.query_vectors.embedder.manifest.languages
        return not languages or language in languages

    def similarities(self, vector: np.ndarray) -> np.ndarray:
        """Every tool's similarity (both passages blended) to a query vector of this model."""
        return self.semantic.similarities(vector)


class HybridIndex:
    """A catalog's lexical and semantic indexes, ranked together; thread-safe."""

    def __init__(
        self,
        lexical: LexicalIndex,
        semantic: SemanticIndex,
        query_vectors: QueryVectors,
        *,
        mode: Literal["dense", "hybrid"] = "hybrid",
        abstention: AbstentionThreshold | None = None,
        translation_cosine: float | None = None,
        companions: Sequence[Companion] = (),
        ranker: Ranker | None = None,
        dictionaries: Dictionaries | None = None,
        query_runs: Executor | None = QUERY_RUNS,
        abstainer: Abstainer | None = None,
    ) -> None:
        """`dense` ranks by the first model's similarity alone (for measurement). `abstention` and
        `translation_cosine` default to the model's `CALIBRATIONS`. `ranker` re-ranks the fusion
        (`search.ranking`) when it was trained for these models and `dictionaries`; else the
        fusion ranks. `abstainer` decides abstention when it was trained for the ranker that
        ranks; else `abstention`'s thresholds do. A request's model runs go to `query_runs` at
        once (`embed_at_once`)."""
        self.lexical = lexical
        self.semantic = semantic
        self.companions = tuple(companions)
        self._query_vectors = query_vectors
        self.mode = mode
        fingerprints = [query_vectors.embedder.fingerprint] + [
            companion.query_vectors.embedder.fingerprint for companion in self.companions
        ]
        self.dictionaries = dictionaries
        self._query_runs = query_runs
        self.ranker = ranker if ranker is not None and ranker.fits(fingerprints, dictionaries) else None
        ranked_by = self.ranker.digest if self.ranker is not None else None
        self.abstainer = (
            abstainer
            if abstainer is not None and abstainer.fits(fingerprints, digest_of(dictionaries), ranked_by)
            else None
        )
        parts = [split_qualified_name(name) for name in lexical.tool_names]
        self.groups = ServerGroups([server for server, _ in parts])
        self.one_word_names = one_word_names([bare for _, bare in parts])
        calibration = CALIBRATIONS.get(query_vectors.embedder.name)
        if calibration is not None:
            abstention = abstention or calibration.abstention
            if translation_cosine is None:
                translation_cosine = calibration.translation_cosine
        self._abstention = abstention
        self._translation_cosine = translation_cosine

    def unknown_words(self, query: str) -> list[str]:
        return self.lexical.unknown_words(query)

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; all marked weak when none fits well."""
        if limit <= 0 or not len(self.semantic):
            return []
        if self.mode == "dense":
            query_vector = self._query_vectors(intent(query[:_MAX_QUERY_CHARS]))
            dense = self.semantic.similarities(query_vector)
            cosine = self.semantic.passage_cosine(int(np.argmax(dense)), query_vector)
            return _best(dense, limit, weak=self._weak(cosine, 0.0, 0.0, named=False))
        ranking = self.ranking(query)
        return _best(ranking.scores, limit, weak=ranking.weak)

    def explain(self, query: str, limit: int) -> list[tuple[SearchHit, dict[str, float]]]:
        """The best `limit` tools for `query`, each with what every signal added to its score: the
        learned ranking's features times their weights, or the fusion's three parts, and for a long
        request what its best sentence added (`best_sentence`)."""
        ranking = self.ranking(query)
        signals = ranking.evidence.signals
        hits = _best(ranking.scores, limit, weak=ranking.weak)
        positions = np.array([hit.position for hit in hits], dtype=np.int64)
        if self.ranker is not None:
            rows = self.ranker.contributions(signals, positions, self.groups, self.one_word_names)
            parts = [dict(zip(self.ranker.features, map(float, row), strict=True)) for row in rows]
        else:
            lexical = LEXICAL_WEIGHT * relative(signals.lexical)
            dense = DENSE_WEIGHT * standardised(signals.dense)
            companions = signals.fusion - lexical - dense
            parts = [
                {"lexical": float(lexical[p]), "dense": float(dense[p]), "companions": float(companions[p])}
                for p in positions
            ]
        named = set(signals.named.tolist())
        for hit, part in zip(hits, parts, strict=True):
            part["best_sentence"] = float(ranking.scores[hit.position] - ranking.whole[hit.position])
            part["named"] = float(hit.position in named)
        return list(zip(hits, parts, strict=True))

    def ranking(self, query: str) -> Ranking:
        """`query` ranked whole, and for a long request by its sentences too (`search.sentences`)."""
        asked = self._asked(query)
        parts = [self._asked(part) for part in sentences(asked.query)]
        self._embed_ahead(asked, parts)
        evidence = self._evidence(asked)
        whole = evidence.scores
        if not parts:
            return Ranking(evidence, whole, whole, evidence.weak)
        by_sentence = [self._evidence(part) for part in parts]
        scores = combined(whole, [each.scores for each in by_sentence])
        weak = evidence.weak and all(each.weak for each in by_sentence)
        return Ranking(evidence, whole, scores, weak)

    def scores(self, signals: Signals) -> np.ndarray:
        """Every tool's final score: the learned ranking's where the index has one, else the fusion's;
        named tools above all others either way."""
        if self.ranker is not None:
            return self.ranker.scores(signals, self.groups, self.one_word_names)
        return fused_scores(signals)

    def evidence(self, query: str) -> Evidence:
        """What the index knows of `query`: every signal over the catalog, and whether to abstain."""
        return self._evidence(self._asked(query))

    def _asked(self, query: str) -> _Asked:
        """`query` read once for every step that needs it: its intent, language and words to
        translate."""
        query = query[:_MAX_QUERY_CHARS]
        request = intent(query)
        language = text.language_of(request)
        # The catalog is English: a word of an English query that no tool has is a name or data
        # (`Lisbon`), not a word to translate.
        if language != "en":
            read, unread, words = self._looked_up(request, language)
            return _Asked(query, request, language, tuple(read), tuple(unread), words)
        words = Words(len(self._words(request)), len(self.lexical.unknown_words(request)))
        return _Asked(query, request, language, (), (), words)

    def _evidence(self, asked: _Asked) -> Evidence:
        query, request, language = asked.query, asked.request, asked.language
        query_vector = self._query_vectors(request)
        adapted_dense = None
        if self.ranker is None:
            dense = self.semantic.similarities(query_vector)
        else:  # the adapted query's similarities in the same pass over the tools
            moved = adapt(query_vector, self.ranker.adapters[0])
            dense, adapted_dense = self.semantic.similarities(np.stack([query_vector, moved]))
        own, server_share = self.lexical.bm25_parts(request)
        lexical = own + server_share
        expansion = self.semantic.nearest_words(query_vector, EXPANSION_WORDS)
        if expansion:
            lexical = lexical + EXPANSION_WEIGHT * self.lexical.bm25_scores(" ".join(expansion))
        semantic = DENSE_WEIGHT * standardised(dense)
        companions = []
        for each in self.companions:
            # A model sits out a language it does not know: its query is not even embedded.
            similarity = np.zeros_like(dense)
            if each.knows(language):
                similarity = each.similarities(each.query_vectors(request))
                semantic += COMPANION_WEIGHT * standardised(similarity)
            companions.append(similarity)
        fusion = semantic + LEXICAL_WEIGHT * relative(lexical)
        named = self.lexical.name_matches(query)
        # The best tool abstention judges is this ranking's: translations (below) are guesses and may
        # pull a wrong tool up; the words they give count in the lexical score it judges.
        untranslated = (
            self.semantic.passage_cosine(int(np.argmax(fusion)), query_vector),
            float(lexical.max()),
        )
        read, guessed = list(asked.read), self._guessed(asked.unread)
        for words, weight in ((read, DICTIONARY_WEIGHT), (guessed, TRANSLATION_WEIGHT)):
            if words:
                lexical = lexical + weight * self.lexical.bm25_scores(" ".join(words))
        if read or guessed:
            fusion = semantic + LEXICAL_WEIGHT * relative(lexical)
        signals = Signals(
            fusion=fusion,
            lexical=lexical,
            server_lexical=server_share,
            dense=dense,
            companions=tuple(companions),
            named=named,
            english=language == "en",
            vector=query_vector,
            adapted_dense=adapted_dense,
            untranslated=untranslated,
        )
        scores = self.scores(signals)
        if self.abstainer is None:
            weak = self._weak(*untranslated, float(lexical.max()), named=bool(len(named)))
        else:
            weak = not len(named) and self.abstainer.abstains(self._features(asked, signals, scores))
        return Evidence(signals, scores, weak)

    def abstention_features(self, query: str, signals: Signals, scores: np.ndarray) -> np.ndarray:
        """The abstention model's features (`search.abstention`) of `query`, whose `signals` the
        `scores` rank (for training: by a ranker that did not see it)."""
        return self._features(self._asked(query), signals, scores)

    def _features(self, asked: _Asked, signals: Signals, scores: np.ndarray) -> np.ndarray:
        top_cosine = self.semantic.passage_cosine(int(np.argmax(scores)), signals.vector)
        return request_features(signals, scores, top_cosine, self.groups, asked.words)

    def adapted(self, signals: Signals, adapters: Sequence[np.ndarray]) -> Signals:
        """`signals` with the first model's similarities to the request's vector moved by its adapter."""
        moved = adapt(signals.vector, adapters[0])
        return dataclasses.replace(signals, adapted_dense=self.semantic.similarities(moved))

    def translations(self, query: str, language: str) -> list[str]:
        """The catalog's words for the words of `query` that no tool has (`LexicalIndex.unknown_words`,
        then `text.cjk_words`): what the dictionary of `language` gives for each of the first
        `LOOKED_UP_WORDS`, and for the first `TRANSLATED_WORDS` of those it lacks, the nearest
        catalog word by the model, if near enough."""
        read, unread, _ = self._looked_up(query, language)
        return read + self._guessed(unread)

    def _guessed(self, unread: Sequence[str]) -> list[str]:
        """The catalog words the model reads `unread` words as, where near enough."""
        if not unread or self._translation_cosine is None:
            return []
        vectors = self._query_vectors.many(unread)
        return self.semantic.closest_words(vectors, self._translation_cosine)

    def _words(self, query: str) -> list[str]:
        """The distinct words of `query` that could name what it asks: content words of four
        letters or more, and its CJK words."""
        spelled = dict.fromkeys(word.lower() for word in text.spelled_words(query) if text.analyze(word))
        return [*spelled, *text.cjk_words(query, self._query_vectors.embedder.pieces)]

    def _looked_up(self, query: str, language: str) -> tuple[list[str], list[str], Words]:
        """The catalog words the dictionary of `language` gives for the words of `query` that no
        tool has, the first `TRANSLATED_WORDS` of those words it lacks, for the model to guess
        (none where the model has no `translation_cosine`), and how many of the query's words
        remain unknown."""
        cjk = text.cjk_words(query, self._query_vectors.embedder.pieces)
        unknown = [*self.lexical.unknown_words(query), *filter(self.lexical.is_unknown, cjk)][
            :LOOKED_UP_WORDS
        ]
        read: list[str] = []
        unread = []
        for word in unknown:
            english = self.dictionaries.english(language, word) if self.dictionaries is not None else ()
            known = [each for each in english if not self.lexical.is_unknown(each)]
            if known:
                read.extend(known)
            else:
                unread.append(word)
        words = Words(len(self._words(query)), len(unread))
        if self._translation_cosine is None:
            return read, [], words
        return read, unread[:TRANSLATED_WORDS], words

    def _embed_ahead(self, asked: _Asked, parts: Sequence[_Asked]) -> None:
        """Fill the query caches with every vector that ranking the request `asked` and its
        sentences `parts` will read, the models' runs at once (`embed_at_once`): each model's of
        the whole request, of its sentences together, and of the words to translate, which all
        depend on the text alone."""
        runs: list[tuple[QueryVectors, list[str]]] = []
        for chosen in ([asked], parts):
            texts = [each.request for each in chosen]
            runs.append((self._query_vectors, texts))
            for companion in self.companions:
                known = [each.request for each in chosen if companion.knows(each.language)]
                runs.append((companion.query_vectors, known))
            # A one-word request may be its own word to guess: its run above embeds it.
            words = [word for each in chosen for word in each.unread if word not in texts]
            runs.append((self._query_vectors, words))
        embed_at_once(runs, self._query_runs)

    def _weak(self, cosine: float, own_lexical: float, translated_lexical: float, *, named: bool) -> bool:
        """Whether the best tool is a poor match by the calibrated thresholds: nothing named, and
        both rankers doubtful of it (its passage's `cosine` to the query, and the best lexical
        score: with dictionaries, that with the request's translated words)."""
        threshold = self._abstention
        if threshold is None or named:
            return False
        if self.dictionaries is not None and threshold.translated_lexical is not None:
            return cosine < threshold.cosine and translated_lexical < threshold.translated_lexical
        return cosine < threshold.cosine and own_lexical < threshold.lexical


@dataclass(frozen=True, slots=True)
class _Asked:
    """A request as the index reads it (`HybridIndex._asked`)."""

    query: str
    """The query, cut to `_MAX_QUERY_CHARS`: tool names are looked for in all of it."""
    request: str
    """What it asks (`intent`): what the models and BM25F read."""
    language: str
    read: tuple[str, ...]
    """Catalog words the dictionary gave for its words that no tool has."""
    unread: tuple[str, ...]
    """Its words that no tool has and no dictionary knows, for the model to guess."""
    words: Words
    """How much of it the catalog's words cover (for abstention)."""


def fused_scores(signals: Signals) -> np.ndarray:
    """The hand-set fusion's ranking: its scores, with the tools the query names above all others."""
    return named_first(signals.fusion.copy(), signals.named)


def _best(scores: np.ndarray, limit: int, *, weak: bool) -> list[SearchHit]:
    """The `limit` best positions by score, best first (ties by position)."""
    limit = min(limit, len(scores))
    if limit <= 0:
        return []
    candidates = np.argpartition(-scores, limit - 1)[:limit]
    ranked = candidates[np.lexsort((candidates, -scores[candidates]))]
    return [SearchHit(int(position), float(scores[position]), weak) for position in ranked]


def build_index(
    tools: Sequence[Tool],
    embedder: Embedder | None = None,
    *,
    mode: Mode = "hybrid",
    cache: VectorCache | None = None,
    query_vectors: QueryVectors | None = None,
    companions: Sequence[QueryVectors] = (),
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    abstainer: Abstainer | None = None,
) -> SearchIndex:
    """The index of `tools`: BM25F alone without an embedder (or in mode bm25), else hybrid or
    dense, with the `companions`' models, the `ranker` and its `abstainer` (in hybrid mode) and
    the `dictionaries` that translate queries; tool vectors come from `cache` where it has them."""
    lexical = LexicalIndex.build(tools)
    if embedder is None or mode == "bm25":
        return lexical
    return _with_models(
        lexical,
        tools,
        query_vectors or QueryVectors(embedder),
        cache if cache is not None else MemoryVectorCache(),
        companions if mode == "hybrid" else (),
        ranker if mode == "hybrid" else None,
        dictionaries,
        mode,
        abstainer=abstainer if mode == "hybrid" else None,
    )


def profile_index(
    tools: Sequence[Tool], profile: Profile, *, mode: Mode = "hybrid", cache: VectorCache | None = None
) -> SearchIndex:
    """`build_index` with a profile's models (the first, then companions), ranker, abstainer and
    dictionaries; BM25F alone for a profile without models."""
    first, *companions = profile.models or (None,)
    return build_index(
        tools,
        first,
        mode=mode,
        cache=cache,
        companions=[QueryVectors(model) for model in companions],
        ranker=profile.ranker,
        dictionaries=profile.dictionaries,
        abstainer=profile.abstainer,
    )


def _with_models(
    lexical: LexicalIndex,
    tools: Sequence[Tool],
    query_vectors: QueryVectors,
    cache: VectorCache,
    companions: Sequence[QueryVectors],
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    mode: Literal["dense", "hybrid"] = "hybrid",
    query_runs: Executor | None = QUERY_RUNS,
    abstainer: Abstainer | None = None,
) -> HybridIndex:
    semantic = SemanticIndex.build(tools, query_vectors.embedder, cache)
    joined = [
        Companion(SemanticIndex.build(tools, queries.embedder, cache, words=False), queries)
        for queries in companions
    ]
    return HybridIndex(
        lexical,
        semantic,
        query_vectors,
        mode=mode,
        companions=joined,
        ranker=ranker,
        dictionaries=dictionaries,
        query_runs=query_runs,
        abstainer=abstainer,
    )


def index_builder(
    embedder: Embedder | None,
    cache: VectorCache | None = None,
    companions: Sequence[Embedder] = (),
    *,
    wait_seconds: float = EMBEDDING_WAIT_SECONDS,
    embedding: EmbeddingWorker | None = None,
    ranker: Ranker | None = None,
    dictionaries: Dictionaries | None = None,
    abstainer: Abstainer | None = None,
) -> Callable[[Sequence[Tool]], SearchIndex]:
    """What `CatalogService` builds each distinct catalog's index with: one vector cache and one
    query-vector cache per model, shared by every catalog of the process.

    With a model, each index is a `ProgressiveIndex`: BM25F at once, hybrid once the catalog is
    embedded in the background (by `embedding`, a new one by default); the build waits up to
    `wait_seconds` for the hybrid index."""
    if embedder is None:
        return LexicalIndex.build
    shared_cache = cache if cache is not None else MemoryVectorCache()
    shared_queries = QueryVectors(embedder)
    companion_queries = [QueryVectors(companion) for companion in companions]
    background = embedding or EmbeddingWorker()

    def build(tools: Sequence[Tool]) -> SearchIndex:
        lexical = LexicalIndex.build(tools)
        index = ProgressiveIndex(lexical)
        background.submit(
            index,
            functools.partial(
                _with_models,
                lexical,
                tools,
                shared_queries,
                shared_cache,
                companion_queries,
                ranker,
                dictionaries,
                abstainer=abstainer,
                query_runs=background.query_runs,
            ),
        )
        index.upgraded.wait(wait_seconds)
        return index

    return build
