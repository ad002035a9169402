"""Static (Model2Vec) models as model directories.

A Model2Vec directory holds `model.safetensors` (an `embeddings` table, optionally per-token
`weights` and a token → row `mapping`), `tokenizer.json` and `config.json`. Its forward pass is
the mean of the text's token rows (no special tokens; the unknown token of word-level
vocabularies dropped), which becomes an ONNX gather-and-mean graph; the tokenizer is kept, less
its post-processor, so it adds no special tokens. `config.json` is not needed: its one setting
that matters at inference, `normalize`, is what the loader always does.

Model2Vec also cuts each text to 512 × (median token length) characters before tokenising, a
shortcut that matters only for texts of thousands of characters; here every text is truncated
at 512 tokens instead.
"""

from __future__ import annotations

import json
import struct
from pathlib import Path

import numpy as np
import onnx
from tokenizers import Tokenizer

from toolsearch.embedding.graphs import SENTENCE_EMBEDDING, static_embedding
from toolsearch.embedding.manifest import (
    MODEL_FILE,
    TOKENIZER_FILE,
    ModelDescription,
    ModelError,
    ModelManifest,
    seal,
    staged_directory,
)

WEIGHTS_FILE = "model.safetensors"
MAX_TOKENS = 512  # Model2Vec's default `max_length`
_LARGEST_TABLE = 1_900_000_000  # protobuf caps a serialised model at 2 GiB
_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I8": "i1", "I32": "<i4", "I64": "<i8"}


def read_safetensors(path: Path) -> dict[str, np.ndarray]:
    """The tensors of a safetensors file (u64 header length, JSON header, raw little-endian data)."""
    with path.open("rb") as stream:
        (header_length,) = struct.unpack("<Q", stream.read(8))
        header = json.loads(stream.read(header_length))
    data_start = 8 + header_length
    tensors = {}
    for name, entry in header.items():
        if name == "__metadata__":
            continue
        if entry["dtype"] not in _DTYPES:
            raise ModelError(f"{path}: tensor {name} has unsupported dtype {entry['dtype']}")
        begin, end = entry["data_offsets"]
        dtype = np.dtype(_DTYPES[entry["dtype"]])
        values = np.fromfile(
            path, dtype=dtype, count=(end - begin) // dtype.itemsize, offset=data_start + begin
        )
        tensors[name] = values.reshape(entry["shape"])
    return tensors


def convert_model2vec(
    source: Path, target: Path, *, name: str, licence: str, origin: str = "", replace: bool = False
) -> ModelManifest:
    """Write a model directory at `target` from the Model2Vec directory `source`."""
    with staged_directory(target, replace=replace) as staging:
        return write_static_model(source, staging, name=name, licence=licence, origin=origin)


def write_static_model(
    source: Path, directory: Path, *, name: str, licence: str, origin: str
) -> ModelManifest:
    """Fill the empty `directory` with the model files and manifest of a Model2Vec directory."""
    for required in (WEIGHTS_FILE, TOKENIZER_FILE):
        if not (source / required).is_file():
            raise ModelError(f"{source} is not a Model2Vec directory: {required} is missing")
    try:
        tensors = read_safetensors(source / WEIGHTS_FILE)
        tokenizer_json = json.loads((source / TOKENIZER_FILE).read_text(encoding="utf-8"))
        tokenizer = Tokenizer.from_str(json.dumps(tokenizer_json))
    except Exception as error:  # tokenizers raises bare Exception on malformed files
        raise ModelError(f"cannot read the Model2Vec directory {source}: {error}") from error
    table, weights, mapping = tensors.get("embeddings"), tensors.get("weights"), tensors.get("mapping")
    if table is None or table.ndim != 2:
        raise ModelError(f"{source / WEIGHTS_FILE} has no 2-D `embeddings` tensor")
    if table.nbytes > _LARGEST_TABLE:
        raise ModelError(f"{source}: a {table.nbytes:,}-byte table does not fit one ONNX file (2 GB at most)")
    rows = len(mapping) if mapping is not None else len(table)
    if tokenizer.get_vocab_size(with_added_tokens=True) > rows:
        raise ModelError(
            f"{source}: the tokenizer has {tokenizer.get_vocab_size(with_added_tokens=True)} tokens "
            f"but the model has rows for only {rows}"
        )
    unknown = tokenizer_json["model"].get("unk_token")  # named by word-level models only
    graph = static_embedding(
        table if table.dtype in (np.float32, np.float16, np.int8) else table.astype(np.float32),
        weights=weights,
        mapping=mapping,
        ignored_id=None if unknown is None else tokenizer.token_to_id(unknown),
    )
    tokenizer_json.update(post_processor=None, padding=None, truncation=None)
    description = ModelDescription(
        name=name,
        dimensions=int(table.shape[1]),
        pooling="none",
        output=SENTENCE_EMBEDDING,
        max_tokens=MAX_TOKENS,
        licence=licence,
        source=origin or f"Model2Vec directory {source}",
    )
    onnx.save(graph, directory / MODEL_FILE)
    (directory / TOKENIZER_FILE).write_text(json.dumps(tokenizer_json, ensure_ascii=False), encoding="utf-8")
    return seal(directory, description)
