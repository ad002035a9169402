"""Running a model directory: its tokenizer (`tokenizer`) for the text, onnxruntime for the vectors."""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import os
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import CancelledError, ThreadPoolExecutor
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
        workers: int = 1,
        query_session: ort.InferenceSession | None = None,
    ) -> None:
        """`query_session` runs the manifest's `query_model` (queries); `session` the rest."""
        self.manifest = manifest
        self._session = session
        self._query_session = query_session or session
        self._tokenizer = tokenizer
        self._batch_tokens = batch_tokens
        self._output = manifest.output or session.get_outputs()[0].name
        self._wants_token_types = "token_type_ids" in {i.name for i in session.get_inputs()}
        self.fingerprint = _fingerprint(manifest)
        """Identity of the model and of how it is used: equal fingerprints, equal vectors."""
        passages = manifest.model_copy(
            update={
                "query_model": None,
                "files": {k: v for k, v in manifest.files.items() if k != manifest.query_model},
            }
        )
        self.passage_fingerprint = _fingerprint(passages)
        """Identity of its passage vectors: a model whose queries run a graph of their own shares
        them (and every cached tool vector) with the model that runs its `model.onnx` for both."""
        self._closed = False
        # onnxruntime's arena would keep a catalog's largest run's tensors for the session's life
        # (~70 MB for e5 after one catalog): passage runs give them back as they end (and, above
        # the heap's mmap threshold, to the system: `runtime.heap`). Query runs keep the arena:
        # allocating afresh for each cost first-time searches ~0.7 ms (3%).
        self._passage_runs = ort.RunOptions()
        self._passage_runs.add_run_config_entry("memory.enable_memory_arena_shrinkage", "cpu:0")
        # Texts that need several model runs (a catalog, not a query) spread them over `workers`
        # threads, each run on one core: onnxruntime lets the GIL go while it runs.
        self._workers = (
            ThreadPoolExecutor(workers, thread_name_prefix=f"toolsearch-{manifest.name}")
            if workers > 1
            else None
        )

    @property
    def name(self) -> str:
        return self.manifest.name

    @property
    def dimensions(self) -> int:
        return self.manifest.dimensions

    def embed_queries(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.manifest.query_prefix, self._query_session)

    def embed_words(self, words: Sequence[str]) -> np.ndarray:
        """Single words to translate, as queries but by the passage graph: a `query_model` is
        trained on whole requests, and the translation cosine (`Calibration.translation_cosine`)
        is measured on the graph both sides share."""
        return self._embed(words, self.manifest.query_prefix, self._session)

    def embed_passages(self, texts: Sequence[str]) -> np.ndarray:
        return self._embed(texts, self.manifest.passage_prefix, self._session, self._passage_runs)

    def pieces(self, text: str) -> list[str]:
        """How the model's tokenizer segments `text` (`TextTokenizer.pieces`)."""
        return self._tokenizer.pieces(self._normalized([text])[0])

    def close(self) -> None:
        """Start no model run from now on: an embedding under way raises `EmbedderClosed` after its
        current run (a batch of `batch_tokens`). For shutdown: a thread still inside onnxruntime
        when the interpreter finalizes aborts the process."""
        self._closed = True
        if self._workers is not None:
            self._workers.shutdown(wait=False, cancel_futures=True)

    def _embed(
        self,
        texts: Sequence[str],
        prefix: str,
        session: ort.InferenceSession,
        options: ort.RunOptions | None = None,
    ) -> np.ndarray:
        if isinstance(texts, str):
            raise TypeError("pass a sequence of texts, not a single string")
        prepared = [prefix + t for t in self._normalized(texts)]
        token_ids = self._tokenizer.token_ids(prepared)
        lengths = np.fromiter(map(len, token_ids), dtype=np.int64, count=len(token_ids))
        # All ids end to end, then one padding id that every padded position points at.
        flat = np.fromiter(
            itertools.chain(itertools.chain.from_iterable(token_ids), [self.manifest.pad_id]), np.int64
        )
        starts = np.cumsum(lengths) - lengths
        rows = np.zeros((len(token_ids), self.dimensions), dtype=np.float32)

        def run(chosen: np.ndarray) -> np.ndarray:
            if self._closed:
                raise EmbedderClosed(f"the embedding model {self.name} was closed")
            positions = np.arange(max(int(lengths[chosen].max()), 1))
            mask = positions < lengths[chosen, None]
            ids = flat[np.where(mask, starts[chosen, None] + positions, len(flat) - 1)]
            return self._run(session, ids, mask.astype(np.int64), options)

        batches = list(_batches(np.argsort(lengths, kind="stable"), lengths, self._batch_tokens))
        for chosen, batch_rows in zip(batches, self._runs(run, batches), strict=True):
            rows[chosen] = batch_rows
        norms = np.linalg.norm(rows, axis=1, keepdims=True)
        np.divide(rows, norms, out=rows, where=norms > 0)
        return rows

    def _normalized(self, texts: Sequence[str]) -> Sequence[str]:
        form = self.manifest.text_normalization
        if form == "none":
            return texts
        return [unicodedata.normalize("NFC" if form == "nfc" else "NFKC", t) for t in texts]

    def _runs(
        self, run: Callable[[np.ndarray], np.ndarray], batches: list[np.ndarray]
    ) -> Iterator[np.ndarray]:
        """`run` of each batch, in order: on the workers when there are several batches."""
        if self._workers is None or len(batches) < 2:
            yield from map(run, batches)
            return
        closed = EmbedderClosed(f"the embedding model {self.name} was closed")
        try:
            # `map` yields in order and re-raises a run's error; every run has ended when it is done.
            yield from self._workers.map(run, batches)
        except RuntimeError as error:  # the workers were shut down before this could start
            if not self._closed:
                raise
            raise closed from error
        except CancelledError:  # `close` cancelled the runs not started
            raise closed from None

    def _run(
        self,
        session: ort.InferenceSession,
        ids: np.ndarray,
        mask: np.ndarray,
        options: ort.RunOptions | None,
    ) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask}
        if self._wants_token_types:
            feed["token_type_ids"] = np.zeros_like(ids)
        (output,) = session.run([self._output], feed, options)
        return _pool(np.asarray(output, dtype=np.float32), mask, self.manifest.pooling)


def _fingerprint(manifest: ModelManifest) -> str:
    """SHA-256 of the manifest less its calibration (and its `query_model` when it has none, so
    a manifest written before the field keeps its fingerprint)."""
    left_out = {"calibration"} | ({"query_model"} if manifest.query_model is None else set())
    canonical = json.dumps(manifest.model_dump(mode="json", exclude=left_out), sort_keys=True).encode()
    return hashlib.sha256(canonical).hexdigest()


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
    directory: Path | str,
    threads: int = 1,
    *,
    workers: int = 1,
    batch_tokens: int = 512,
    verify: bool = True,
) -> Embedder:
    """Load a model directory, checking its files against the manifest first (unless `verify` is off).

    `threads` is onnxruntime's intra-op thread count: 1 keeps each model run on one core, so
    concurrent searches scale across cores (on a query's few tokens, a second thread costs more
    in waking it than it saves). `workers` is how many model runs one embedding of many texts (a
    catalog) makes at once, each on its own core. `batch_tokens` bounds each model run's padded
    size (texts × longest text, in tokens).
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
    sessions = [_session(directory / name, threads) for name in (MODEL_FILE, manifest.query_model) if name]
    for session in sessions:
        _check_signature(session, manifest, directory)
    return Embedder(manifest, sessions[0], tokenizer, batch_tokens, workers, query_session=sessions[-1])


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


def usable_cores(most: int = 4, cgroup: Path = Path("/sys/fs/cgroup")) -> int:
    """The CPUs this process may run on (its affinity, within the CPU limit of its `cgroup`, such
    as a container's), at most `most`: more parallel model runs than cores only contend."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1
    quota = cgroup_cpu_limit(cgroup)
    if quota is not None:
        cores = min(cores, max(1, math.floor(quota)))
    return max(1, min(cores, most))


def cgroup_cpu_limit(cgroup: Path) -> float | None:
    """The CPU limit of a cgroup in CPUs (v2 `cpu.max`, else v1's CFS quota), or None for none."""
    for quota_file, period_file in (("cpu.max", None), ("cpu/cpu.cfs_quota_us", "cpu/cpu.cfs_period_us")):
        try:
            fields = (cgroup / quota_file).read_text().split()
            if period_file is not None:
                fields.append((cgroup / period_file).read_text().strip())
        except OSError:
            continue
        if len(fields) >= 2 and fields[0].isdigit() and fields[1].isdigit() and int(fields[1]) > 0:
            return int(fields[0]) / int(fields[1])
        return None  # "max" (v2) or -1 (v1): no limit
    return None
