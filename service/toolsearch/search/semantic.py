"""Dense retrieval: the cosine similarity of a query's embedding to each tool's.

The model reads each tool twice. Its passage: its server, its name as words, its title and the
first sentence of its description (what the tool is for), ~30 tokens. Its description passage:
the same head with the start of the whole description (`_MAX_DESCRIPTION_CHARS`, ~140 tokens),
where the details are that tell near-twins apart. A tool's similarity to a query blends the two
cosines (`DESCRIPTION_SHARE` of the second), which ranks better than either passage alone
(docs/search-quality.md, "Where the constants come from"). The longer texts make indexing a
catalog not seen before slower; each tool is embedded once per model, whatever number of catalogs
holds it.

The index also holds the catalog's words (those in at least two of its tools' texts) as vectors:
the words nearest to a query's embedding are the catalog's own words for what the query asks, in
whatever language it was asked (`nearest_words`), which lexical search can then match.

Tool and word vectors are computed once per distinct content and model: `VectorCache` holds them
by (model key, `Tool.digest` or word), so every catalog that contains a tool shares its vector and
a catalog seen before is assembled without running the model. `MemoryVectorCache` is this
process's cache; a proxy asks its backend for the vectors a catalog needs (`cached_ids`) before the
build, on the event loop, and hands the build what it found (`search.build.ProgressiveBuilder`).
"""

from __future__ import annotations

import collections
import re
from collections.abc import Callable, Mapping, Sequence
from typing import TypeVar

import numpy as np

from toolsearch.embedding import Embedder
from toolsearch.naming import split_qualified_name
from toolsearch.search import stopwords
from toolsearch.search.documents import foreign_languages, tool_documents, tool_fields
from toolsearch.search.isolation import (
    MIN_TOOLS,
    LanguageShares,
    Neighbourhoods,
    isolation_penalty,
    stored_neighbourhoods,
)
from toolsearch.search.text import split_words
from toolsearch.search.vectors import VectorCache
from toolsearch.tool import Tool, per_tool

PASSAGE_VERSION = 1
"""Part of every cached vector's key: change it whenever `passage` or `description_passage` changes
what it writes."""
DESCRIPTION_SHARE = 0.3
"""The description passage's share of a tool's similarity to a query (tuned on half the dev set)."""
EMBEDDING_BATCH = 256
"""Tools embedded per model call; each batch goes into the cache as soon as it is done."""
_MAX_PASSAGE_CHARS = 600
_MAX_DESCRIPTION_CHARS = 700
_WORD_SEPARATORS = re.compile(r"[_\-.]+")
_MIN_WORD_TOOLS = 2
"""A word in fewer of a catalog's tools is too rare to be what a request is about."""
_MIN_WORD_CHARS = 3
_WORD_SOURCE_CHARS = 1000
"""Words are taken from the start of a description: what it is for, before the details."""
_ENGLISH_LETTERS = re.compile(r"[a-z]+")
_ENGLISH_STOPWORDS = frozenset(stopwords.ENGLISH.split())
_T = TypeVar("_T")


def passage(tool: Tool) -> str:
    """What the model reads of `tool` first: `server: tool name as words. Title. First sentence.`"""
    fields = tool_fields(tool)
    return _joined(_head(tool), fields["title"], fields["summary"])[:_MAX_PASSAGE_CHARS]


def description_passage(tool: Tool) -> str:
    """What the model reads of `tool` second: `server: tool name as words. Title. Description.`"""
    fields = tool_fields(tool)
    return _joined(_head(tool), fields["title"], fields["description"][:_MAX_DESCRIPTION_CHARS])


def _head(tool: Tool) -> str:
    server, bare = split_qualified_name(tool.name)
    words = _WORD_SEPARATORS.sub(" ", bare).strip()
    return f"{server}: {words}" if server else words


def _joined(*parts: str) -> str:
    return ". ".join(part.strip() for part in parts if part.strip())


@per_tool
def _words(tool: Tool) -> frozenset[str]:
    """The distinct runs of English letters (three or more, no stopword) in the words (`split_words`)
    of a tool's name, title, description start and parameters."""
    fields = tool_fields(tool)
    source = " ".join(
        (
            fields["name"],
            fields["title"],
            fields["description"][:_WORD_SOURCE_CHARS],
            fields["parameter_names"],
        )
    )
    # Words hold no space: one search finds the runs of all of them.
    return frozenset(
        letters
        for letters in _ENGLISH_LETTERS.findall(" ".join(split_words(source)))
        if len(letters) >= _MIN_WORD_CHARS and letters not in _ENGLISH_STOPWORDS
    )


def catalog_words(tools: Sequence[Tool]) -> list[str]:
    """The catalog's vocabulary: words (English letters) in at least two of its tools, sorted."""
    counts = collections.Counter(word for tool in tools for word in _words(tool))
    return sorted(word for word, count in counts.items() if count >= _MIN_WORD_TOOLS)


def model_key(embedder: Embedder) -> str:
    """Identity of a tool vector's origin: the model as used, and how passages are written."""
    return f"{embedder.passage_fingerprint[:32]}.p{PASSAGE_VERSION}"


def cached_ids(tools: Sequence[Tool], embedder: Embedder, *, words: bool = True) -> dict[str, list[str]]:
    """What `SemanticIndex.build` asks its cache for, by cache key: its caller can fetch them first
    (from a store asked asynchronously) and build from what it found."""
    passages, descriptions, word_key = _cache_keys(embedder)
    digests = list(dict.fromkeys(tool.digest for tool in tools))
    wanted = {passages: digests, descriptions: digests, word_key: catalog_words(tools) if words else []}
    if len(tools) >= MIN_TOOLS and len(digests) == len(tools):
        key, catalog = stored_neighbourhoods(_blended_space(passages), digests)
        wanted[key] = [catalog]
    return wanted


def _cache_keys(embedder: Embedder) -> tuple[str, str, str]:
    """The cache keys of a model's passage, description passage and word vectors."""
    key = model_key(embedder)
    return key, f"{key}.descriptions", f"{key}.words"


def _blended_space(passages: str) -> str:
    """The space of a model's blended rows (`SemanticIndex.blended`), where neighbourhoods are."""
    return f"{passages}.blended{DESCRIPTION_SHARE}"


def _vectors(
    embedder: Embedder, cache: VectorCache, key: str, texts: Mapping[str, _T], text: Callable[[_T], str]
) -> dict[str, np.ndarray]:
    """The vector of the `text` of each item of `texts` (by its cache id): cached ones, the rest
    embedded in batches. A text is only written for embedding: a catalog of known tools costs none."""
    known = cache.get_many(key, list(texts))
    pending = [cache_id for cache_id in texts if cache_id not in known]
    for start in range(0, len(pending), EMBEDDING_BATCH):
        batch = pending[start : start + EMBEDDING_BATCH]
        rows = embedder.embed_passages([text(texts[cache_id]) for cache_id in batch])
        embedded = dict(zip(batch, rows, strict=True))
        cache.put_many(key, embedded)
        known.update(embedded)
    return known


def _matrix(rows: Sequence[np.ndarray], dimensions: int) -> np.ndarray:
    matrix = np.zeros((len(rows), dimensions), dtype=np.float32)
    if len(rows):
        matrix[:] = rows
    return matrix


class SemanticIndex:
    """One catalog's tool and word vectors; immutable and safe to share between threads."""

    def __init__(
        self,
        vectors: np.ndarray,
        description_vectors: np.ndarray,
        words: Sequence[str],
        word_vectors: np.ndarray,
        languages: LanguageShares | None = None,
        known: tuple[Neighbourhoods, str, Sequence[str], VectorCache | None] | None = None,
    ) -> None:
        """`vectors` and `description_vectors`: one L2-normalised float32 row per tool, in catalog
        order, of its `passage` and its `description_passage`; `languages`: what their language alone
        gives the tools written in another language than the catalog's (none by default); `known`:
        the tools' neighbourhoods in earlier catalogs, their vector space, the tools' ids and the
        cache that keeps whole catalogs' neighbourhoods (`isolation.Neighbourhoods`)."""
        self.vectors = vectors
        """Each tool's `passage`."""
        self.blended = (1.0 - DESCRIPTION_SHARE) * vectors + DESCRIPTION_SHARE * description_vectors
        """One row per tool whose product with a query vector is its similarity by both passages:
        a search reads one matrix per model, not two (reading them is most of its cost, once the
        query is embedded)."""
        # Search integrity (`search.isolation`): what text that describes no one job can gain.
        self.penalty = isolation_penalty(self.blended, known=known)
        """What each tool's similarity loses for being general (near every job, near no tool)."""
        self.languages = languages
        """What the language alone gives the tools written in another than the catalog's: not
        evidence for one of them (`isolation.LanguageShares`)."""
        self.words = tuple(words)
        self.word_vectors = word_vectors
        """One row per word of `words`."""

    @classmethod
    def build(
        cls,
        tools: Sequence[Tool],
        embedder: Embedder,
        cache: VectorCache,
        *,
        words: bool = True,
        neighbourhoods: Neighbourhoods | None = None,
    ) -> SemanticIndex:
        """The vectors of `tools` and (unless `words` is off) of their words: from `cache` where it
        has them, else embedded in batches (and added to it); the dense bound's neighbours from
        `neighbourhoods` where earlier catalogs had them, or from `cache` where it holds the
        catalog's (a restart loads them; `cached_ids` names them)."""
        (passages, descriptions, word_key), dimensions = _cache_keys(embedder), embedder.dimensions
        distinct = {tool.digest: tool for tool in tools}
        known = _vectors(embedder, cache, passages, distinct, passage)
        described = _vectors(embedder, cache, descriptions, distinct, description_passage)
        vocabulary = catalog_words(tools) if words else []
        word_vectors = _vectors(embedder, cache, word_key, {word: word for word in vocabulary}, str)
        return cls(
            _matrix([known[tool.digest] for tool in tools], dimensions),
            _matrix([described[tool.digest] for tool in tools], dimensions),
            vocabulary,
            _matrix([word_vectors[word] for word in vocabulary], dimensions),
            LanguageShares.of(
                foreign_languages(tool_documents(tools)),
                [split_qualified_name(tool.name)[0] for tool in tools],
            ),
            None
            if neighbourhoods is None
            else (neighbourhoods, _blended_space(passages), [tool.digest for tool in tools], cache),
        )

    def __len__(self) -> int:
        return len(self.vectors)

    def similarities(self, query_vectors: np.ndarray) -> np.ndarray:
        """Every tool's similarity by both its passages to a (normalised) query vector, or to each
        row of several, one row each, in one pass over the tools."""
        similarities: np.ndarray = query_vectors @ self.blended.T - self.penalty
        return similarities if self.languages is None else self.languages.judged(similarities)

    def passage_cosine(self, position: int, query_vector: np.ndarray) -> float:
        """The cosine of the tool at `position`'s `passage` to the query vector."""
        return float(self.vectors[position] @ query_vector)

    def closest_words(self, vectors: np.ndarray, min_cosine: float) -> list[str]:
        """For each row of `vectors`, the catalog word most similar to it, if at `min_cosine` or above."""
        if not self.words or not len(vectors):
            return []
        similarities = vectors @ self.word_vectors.T
        best = similarities.argmax(axis=1)
        close = similarities[np.arange(len(best)), best] >= min_cosine
        return [self.words[i] for i in best[close]]

    def nearest_words(self, query_vector: np.ndarray, count: int) -> list[str]:
        """The `count` catalog words most similar to the query vector, best first."""
        if not self.words or count <= 0:
            return []
        similarities = self.word_vectors @ query_vector
        count = min(count, len(self.words))
        best = np.argpartition(-similarities, count - 1)[:count]
        return [self.words[i] for i in best[np.argsort(-similarities[best], kind="stable")]]
