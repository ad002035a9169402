"""Running a model directory: its tokenizer (`tokenizer`) for the text, onnxruntime for the vectors."""

from __future__ import annotations

import hashlib
import itertools
import json
import unicodedata
from collections.abc import Iterator, Sequence
from pathlib import Path

import numpy as np
import onnxruntime as ort
from threadpoolctl import threadpool_limits

from toolsearch.embedding.manifest import (
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelError,
    ModelManifest,
    read_manifest,
    verify_files,
)
from toolsearch.embedding.tokenizer import TextTokenizer, load_tokenizer

_FED_INPUTS = {"input_ids", "attention_mask", "token_type_ids"}
_MOST_TEXTS_PER_BATCH = 256
_ORT_ERRORS_ONLY = 3


class EmbedderClosed(RuntimeError):
    """The embedder was closed: it starts no model run any more."""


class Embedder:
    """Embeds texts as L2-normalised float32 rows; safe to share between threads."""

    def __init__(
        self,
        manifest: ModelManifest,
        session: ort.InferenceSession,
        tokenizer: TextTokenizer,
        batch_tokens: int,
    ) -> None:
        self.manifest = manifest
        self._session = session
        self._tokenizer = tokenizer
        self._batch_tokens = batch_tokens
        self._output = manifest.output or session.get_outputs()[0].name
        self._wants_token_types = "token_type_ids" in {i.name for i in session.get_inputs()}
        canonical = json.dumps(manifest.model_dump(mode="json"), sort_keys=True).encode()
        self.fingerprint = hashlib.sha256(canonical).hexdigest()
        """Identity of the model and of how it is used: equal fingerprints, equal vectors."""
        self._closed = False

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def dimensions(self) -> int:
        return self.manifest.dimensions

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.manifest.query_prefix)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.manifest.passage_prefix)

    def close(self) -> None:
        """Start no model run from now on: an embedding under way raises `EmbedderClosed` after its
        current run (a batch of `batch_tokens`). For shutdown: a thread still inside onnxruntime
        when the interpreter finalizes aborts the process."""
        self._closed = True

    def _embed(self, texts: Sequence[str], prefix: str) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not a single string")
        form = self.manifest.text_normalization
        if form != "none":
            texts = [unicodedata.normalize("NFC" if form == "nfc" else "NFKC", t) for t in texts]
        prepared = [prefix + t for t in texts]
        token_ids = self._tokenizer.token_ids(prepared)
        lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        # All ids end to end, then one padding id that every padded position points at.
        flat = np.fromiter(
            itertools.chain(itertools.chain.from_iterable(token_ids), [self.manifest.pad_id]), np.int64
        )
        starts = np.cumsum(lengths) - lengths
        rows = np.zeros((len(token_ids), self.dimensions), dtype=np.float32)
        for chosen in _batches(np.argsort(lengths, kind="stable"), lengths, self._batch_tokens):
            if self._closed:
                raise EmbedderClosed(f"the embedding model {self.name} was closed")
            positions = np.arange(max(int(lengths[chosen].max()), 1))
            mask = positions < lengths[chosen, None]
            ids = flat[np.where(mask, starts[chosen, None] + positions, len(flat) - 1)]
            rows[chosen] = self._run(ids, mask.astype(np.int64))
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        np.divide(rows, norms, out=rows, where=norms > 0)
        return rows

    def _run(self, ids: np.ndarray, mask: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        (output,) = self._session.run([self._output], feed)
        return _pool(np.asarray(output, dtype=np.float32), mask, self.manifest.pooling)


def _batches(order: np.ndarray, lengths: np.ndarray, budget: int) -> Iterator[np.ndarray]:
    """Runs of `order` (texts by ascending length) whose padded size stays within `budget` tokens.

    Texts of similar length share a batch, so little of it is padding, and long texts go a few
    at a time: attention's [texts, heads, tokens, tokens] scores grow with the square of the
    length. On multilingual-e5-small over catalog tool descriptions, 256-512 tokens per run took
    the least CPU time; 2,048 took 30% more.
    """
    start = 0
    while start < len(order):
        candidates = np.maximum(lengths[order[start : start + _MOST_TEXTS_PER_BATCH]], 1)
        padded_sizes = np.arange(1, len(candidates) + 1) * candidates  # grows with every text added
        count = max(int(np.count_nonzero(padded_sizes <= budget)), 1)
        yield order[start : start + count]
        start += count


def _pool(output: np.ndarray, mask: np.ndarray, pooling: str) -> np.ndarray:
    if pooling == "none":
        return output
    if pooling == "cls":
        return output[:, 0]
    weights = mask.astype(np.float32)
    counts = np.maximum(weights.sum(axis=1, keepdims=True), 1.0)
    pooled: np.ndarray = np.einsum("btd,bt->bd", output, weights) / counts
    return pooled


def load_model(
    directory: Path | str, threads: int = 1, *, batch_tokens: int = 512, verify: bool = True
) -> Embedder:
    """Load a model directory, checking its files against the manifest first (unless `verify` is off).

    `threads` is onnxruntime's intra-op thread count: 1 keeps each embedding on one core, so
    concurrent searches scale across cores; more lowers the latency of one large embedding job.
    `batch_tokens` bounds each model run's padded size (texts × longest text, in tokens).
    """
    directory = Path(directory)
    # Searching with a model multiplies a query vector by every tool's: under a millisecond on one
    # core, while BLAS threads would contend with onnxruntime's and the server's (spikes of 5-10 ms
    # measured on two cores).
    threadpool_limits(1, user_api="blas")
    manifest = read_manifest(directory)
    if verify:
        verify_files(directory, manifest)
    tokenizer = load_tokenizer(directory / TOKENIZER_FILE, manifest.max_tokens)
    session = _session(directory / MODEL_FILE, threads)
    _check_signature(session, manifest, directory)
    return Embedder(manifest, session, tokenizer, batch_tokens)


def _session(path: Path, threads: int) -> ort.InferenceSession:
    if threads < 1:
        raise ModelError(f"threads must be at least 1, got {threads}")
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    # Idle workers spinning for the next run would take the cores the server and other searches need.
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.log_severity_level = _ORT_ERRORS_ONLY
    try:
        return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as error:  # onnxruntime's errors share no useful base class
        raise ModelError(f"onnxruntime cannot load {path}: {error}") from error


def _check_signature(session: ort.InferenceSession, manifest: ModelManifest, directory: Path) -> None:
    inputs = {i.name for i in session.get_inputs()}
    if not {"input_ids", "attention_mask"} <= inputs or inputs - _FED_INPUTS:
        raise ModelError(
            f"{directory / MODEL_FILE} takes inputs {sorted(inputs)}; expected input_ids and attention_mask "
            "(and optionally token_type_ids)"
        )
    outputs = {o.name: o for o in session.get_outputs()}
    output = outputs.get(manifest.output) if manifest.output else session.get_outputs()[0]
    if output is None:
        raise ModelError(
            f"{directory / MODEL_FILE} has no output {manifest.output!r}; it has {sorted(outputs)}"
        )
    rank = 2 if manifest.pooling == "none" else 3
    width = output.shape[-1] if len(output.shape) == rank else None
    if len(output.shape) != rank or (isinstance(width, int) and width != manifest.dimensions):
        raise ModelError(
            f"output {output.name} of {directory / MODEL_FILE} has shape {output.shape}, which does not fit "
            f"pooling {manifest.pooling!r} with {manifest.dimensions} dimensions"
        )
