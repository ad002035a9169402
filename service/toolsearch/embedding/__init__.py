"""Text embeddings for semantic search: one model directory format, one loader.

A model directory holds `model.onnx`, `tokenizer.json` and `toolsearch-model.json` (see
`manifest`). `load_model` runs any such directory on the CPU; `toolsearch model fetch` and
`toolsearch model import` (see `commands`) create them.
"""

from toolsearch.embedding.embedder import Embedder, EmbedderClosed, load_model
from toolsearch.embedding.manifest import ModelDescription, ModelError, ModelManifest

__all__ = ["Embedder", "EmbedderClosed", "ModelDescription", "ModelError", "ModelManifest", "load_model"]
