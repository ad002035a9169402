"""Hybrid ranking: BM25F and embeddings fused, named tools first, and abstention when nothing fits.

A query is ranked in these steps: the index reads it and runs the models (`HybridIndex.embedded`,
the shell), then `rank` and `request_evidence` compute the rest as pure functions of the index,
the request as read and what the models made of it:

1. The request is read (`search.request`): its data (quoted text, URLs, e-mail addresses: the
   arguments of the task, not what tool it needs) set apart, so that both rankers see what it
   asks (`intent`); its language; the tools it names (looked for in the whole query); and, for a
   request not in English, its words that no tool has (`LexicalIndex.unknown_words`; in Chinese
   and Japanese, whose words no space separates, the words `text.cjk_words` cuts from it with the
   model's own tokenizer), read in English by the profile's bilingual dictionary of its language
   (`search.dictionaries`).
2. The models run (`Embedded`): each model's embedding of the request (a companion sits out a
   language it does not know), and the first model's reading of each word no dictionary knows as
   the catalog word nearest to it, when that one is at the model's calibrated
   `translation_cosine` or closer (`ModelDescription.calibration`); a model whose queries run a
   graph of their own embeds the words by its passage graph (`Embedder.embed_words`).
3. Its signals over the catalog (`search.signals`): dense and lexical scores and their hand-set
   fusion, the translated words counting in the lexical part.
4. Scoring (`search.scoring`): with a `Ranker` trained for the index's models (`search.ranking`),
   the learned re-ranker orders the fusion's candidates; without one, the fusion does. A tool the
   query names ranks above all others either way.
5. Abstention: with an `Abstainer` trained for the ranker (`search.abstention`), it decides from
   the request's evidence and ranking; without one, the model's calibrated thresholds do
   (`weak_by_thresholds`, judging the best tool before translation: a translation may be wrong and
   pull another tool up). A request that names a tool is never abstained on.
6. Long requests: a request of several sentences (background, the ask, thanks) is also ranked
   sentence by sentence, each tool adding its best sentence's score to the whole request's
   (`search.sentences`).

Every model run these steps need (each model's of the request, e5's of the words to translate,
and the same for a long request's sentences) depends on the text alone, so they start together
before ranking (`embed_at_once`): a request costs about its longest run, not their sum.

The weights were tuned on the dev set, the ranker trained on the training set; what each step
gained is in docs/search-quality.md.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from concurrent.futures import Executor, wait
from dataclasses import dataclass

import numpy as np
from cachetools import LRUCache

from toolsearch.embedding import Embedder
from toolsearch.embedding.manifest import AbstentionThreshold
from toolsearch.naming import split_qualified_name
from toolsearch.search import SearchHit
from toolsearch.search.abstention import Abstainer, request_features, weak_by_thresholds
from toolsearch.search.dictionaries import Dictionaries, digest_of
from toolsearch.search.learning import LearnedCatalog
from toolsearch.search.lexical import MAX_QUERY_CHARS, LexicalIndex
from toolsearch.search.ranking import Ranker, ServerGroups, adapt, one_word_names
from toolsearch.search.request import Request, intent, read_request
from toolsearch.search.scoring import Fusion, LearnedRanking, Scoring
from toolsearch.search.selection import best_hits
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.sentences import combined, sentences
from toolsearch.search.signals import Embedded, Signals, request_signals


class QueryVectors:
    """Query embeddings, the `max_queries` most recently used kept: agents repeat their queries.
    With `words`, of single words to translate instead (`Embedder.embed_words`)."""

    def __init__(self, embedder: Embedder, max_queries: int = 4096, *, words: bool = False) -> None:
        self.embedder = embedder
        self._words = words
        self._vectors: LRUCache[str, np.ndarray] = LRUCache(max_queries)
        self._lock = threading.Lock()  # searches run in worker threads
        self.words: QueryVectors = (
            self
            if words or embedder.manifest.query_model is None
            else QueryVectors(embedder, max_queries, words=True)
        )
        """The vectors of single words to translate: these when one graph embeds requests and words
        alike (a one-word request is its own word to translate); a cache of their own, kept as long
        as this one (every catalog's index shares it), when the queries run a graph of their own."""

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
            embed = self.embedder.embed_words if self._words else self.embedder.embed_queries
            found.update(zip(missing, embed(missing), strict=True))
            with self._lock:
                self._vectors.update((query, found[query]) for query in missing)
        return found

    def __len__(self) -> int:
        return len(self._vectors)


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
    """Every tool's final score (`HybridIndex.scoring`)."""
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
        abstention: AbstentionThreshold | None = None,
        translation_cosine: float | None = None,
        companions: Sequence[Companion] = (),
        ranker: Ranker | None = None,
        dictionaries: Dictionaries | None = None,
        query_runs: Executor | None = None,
        abstainer: Abstainer | None = None,
    ) -> None:
        """`abstention` and `translation_cosine` default to the first model's calibration (its
        manifest's). `ranker` re-ranks the fusion (`search.ranking`) when it was trained for these
        models and `dictionaries`; else the fusion ranks. `abstainer` decides abstention when it
        was trained for the ranker that ranks; else `abstention`'s thresholds do. A request's
        model runs go to `query_runs` at once (`embed_at_once`); without it, one after another."""
        self.lexical = lexical
        self.semantic = semantic
        self.companions = tuple(companions)
        self.query_vectors = query_vectors
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
        self.scoring: Scoring = (
            Fusion() if self.ranker is None else LearnedRanking(self.ranker, self.groups, self.one_word_names)
        )
        calibration = query_vectors.embedder.manifest.calibration
        if calibration is not None:
            abstention = abstention or calibration.abstention
            if translation_cosine is None:
                translation_cosine = calibration.translation_cosine
        self._abstention = abstention
        self.translation_cosine = translation_cosine
        self.learned: LearnedCatalog | None = None
        """What callers of this catalog taught it (`search.learning`), replaced whole as it learns."""

    def unknown_words(self, query: str) -> list[str]:
        return self.lexical.unknown_words(query)

    def search(self, query: str, limit: int) -> list[SearchHit]:
        """The best `limit` tools for `query`, best first; all marked weak when none fits well."""
        if limit <= 0 or not len(self.semantic):
            return []
        ranking = self.ranking(query)
        return best_hits(ranking.scores, limit, weak=ranking.weak)

    def ranking(self, query: str) -> Ranking:
        """`query` ranked whole, and for a long request by its sentences too (`search.sentences`):
        the request read, its models run (`embedded`), then ranked (`rank`, a pure function)."""
        request = self.request(query)
        parts = [self.request(part) for part in sentences(request.query)]
        return rank(self, request, parts, self.embedded(request, parts))

    def evidence(self, query: str) -> Evidence:
        """What the index knows of `query`: every signal over the catalog, and whether to abstain."""
        request = self.request(query)
        return request_evidence(self, request, self.embedded(request, ())[0])

    def request(self, query: str) -> Request:
        """`query` as this index reads it (`search.request`)."""
        return read_request(
            query,
            self.lexical,
            self.query_vectors.embedder.pieces,
            self.dictionaries,
            guesses=self.translation_cosine is not None,
        )

    def embedded(self, request: Request, parts: Sequence[Request]) -> list[Embedded]:
        """What the models make of `request` and its sentences `parts`, in that order: every model
        run they need started at once (`_embed_ahead`), then read from the query caches."""
        self._embed_ahead(request, parts)
        return [self._embedding_of(each) for each in (request, *parts)]

    def _embedding_of(self, request: Request) -> Embedded:
        vector = self.query_vectors(request.request)
        return Embedded(
            vector,
            adapt(vector, self.ranker.adapters[0]) if self.ranker is not None else None,
            tuple(
                # A model sits out a language it does not know: its query is not even embedded.
                each.similarities(each.query_vectors(request.request))
                if each.knows(request.language)
                else None
                for each in self.companions
            ),
            tuple(self.guessed(request.unread)),
            None if self.learned is None else self.learned.bonus(vector, len(self.semantic)),
        )

    def weak_by_thresholds(self, cosine: float, own_lexical: float, translated_lexical: float) -> bool:
        """Whether the best tool is a poor match by the calibrated thresholds (`weak_by_thresholds`)."""
        translating = self.dictionaries is not None
        return weak_by_thresholds(
            self._abstention, cosine, own_lexical, translated_lexical, translating=translating
        )

    def features(self, request: Request, signals: Signals, scores: np.ndarray) -> np.ndarray:
        """The abstention model's features (`search.abstention`) of `request`, whose `signals` the
        `scores` rank."""
        top_cosine = self.semantic.passage_cosine(int(np.argmax(scores)), signals.vector)
        return request_features(signals, scores, top_cosine, self.groups, request.words)

    def guessed(self, unread: Sequence[str]) -> list[str]:
        """The catalog words the model reads `unread` words as, where near enough."""
        if not unread or self.translation_cosine is None:
            return []
        vectors = self.query_vectors.words.many(unread)
        return self.semantic.closest_words(vectors, self.translation_cosine)

    def _embed_ahead(self, request: Request, parts: Sequence[Request]) -> None:
        """Fill the query caches with every vector that ranking `request` and its sentences `parts`
        will read, the models' runs at once (`embed_at_once`): each model's of the whole request,
        of its sentences together, and of the words to translate, which all depend on the text
        alone."""
        runs: list[tuple[QueryVectors, list[str]]] = []
        for chosen in ([request], parts):
            texts = [each.request for each in chosen]
            runs.append((self.query_vectors, texts))
            for companion in self.companions:
                known = [each.request for each in chosen if companion.knows(each.language)]
                runs.append((companion.query_vectors, known))
            words = [word for each in chosen for word in each.unread]
            if self.query_vectors.words is self.query_vectors:
                # A one-word request may be its own word to guess: its run above embeds it.
                words = [word for word in words if word not in texts]
            runs.append((self.query_vectors.words, words))
        embed_at_once(runs, self._query_runs)


def rank(
    index: HybridIndex, request: Request, parts: Sequence[Request], embedded: Sequence[Embedded]
) -> Ranking:
    """`request` ranked whole, and by its sentences `parts` when it has several, from what the
    models made of each (`embedded`: the request's, then each part's). A function of its inputs:
    it runs no model and reads no cache."""
    evidence = request_evidence(index, request, embedded[0])
    whole = evidence.scores
    if not parts:
        return Ranking(evidence, whole, whole, evidence.weak)
    by_sentence = [
        request_evidence(index, part, each) for part, each in zip(parts, embedded[1:], strict=True)
    ]
    scores = combined(whole, [each.scores for each in by_sentence])
    weak = evidence.weak and all(each.weak for each in by_sentence)
    return Ranking(evidence, whole, scores, weak)


def request_evidence(index: HybridIndex, request: Request, embedded: Embedded) -> Evidence:
    """Every signal of `request` over the index's catalog (`search.signals`), every tool's score
    and whether to abstain, from what the models made of it."""
    signals = request_signals(request, embedded, index.lexical, index.semantic)
    scores = index.scoring.scores(signals)
    if len(request.named):
        weak = False
    elif index.abstainer is None:
        weak = index.weak_by_thresholds(*signals.untranslated, float(signals.lexical.max()))
    else:
        weak = index.abstainer.abstains(index.features(request, signals, scores))
    return Evidence(signals, scores, weak)


class DenseIndex:
    """The first model's similarity alone ranks (to measure what it gives on its own); its
    calibrated cosine threshold says when nothing fits."""

    def __init__(self, hybrid: HybridIndex) -> None:
        self.hybrid = hybrid

    def search(self, query: str, limit: int) -> list[SearchHit]:
        semantic = self.hybrid.semantic
        if limit <= 0 or not len(semantic):
            return []
        vector = self.hybrid.query_vectors(intent(query[:MAX_QUERY_CHARS]))
        dense = semantic.similarities(vector)
        cosine = semantic.passage_cosine(int(np.argmax(dense)), vector)
        return best_hits(dense, limit, weak=self.hybrid.weak_by_thresholds(cosine, 0.0, 0.0))

    def unknown_words(self, query: str) -> list[str]:
        return self.hybrid.unknown_words(query)
