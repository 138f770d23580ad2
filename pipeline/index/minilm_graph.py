"""MiniLM's transformer written as an ONNX graph straight from the packaged weights, no torch.

torch's exporter traces the model in a process that imports torch and transformers first (10-30 s
here, a minute when two workers did it at once). The model is a plain BERT encoder
(``config.json``: ``BertModel``, absolute positions, GELU), so the graph is written here node by
node with ``onnx.helper`` and filled with the weights read from ``model.safetensors`` as numpy
arrays: 2-3 s, and the same function (tests/index/test_minilm_onnx.py compares its vectors with
sentence-transformers'). Attention is MatMul-Softmax-MatMul under an additive mask, as
transformers' "eager" path computes it, which ONNX Runtime fuses. A model of another shape is
refused (``ConfigError``) and exported with torch instead.
"""

from __future__ import annotations

import json
from pathlib import Path

from pipeline.errors import ConfigError

INPUTS = ("input_ids", "attention_mask", "token_type_ids")


def check_supported(model_dir: Path) -> dict:
    """The model's config when this writer knows its architecture; ConfigError otherwise."""
    config = json.loads((Path(model_dir) / "config.json").read_text())
    known = {"model_type": "bert", "hidden_act": "gelu", "position_embedding_type": "absolute"}
    for key, value in known.items():
        if config.get(key, value) != value:
            raise ConfigError(f"the ONNX graph writer knows BERT models only: {key} = {config.get(key)!r}")
    if config["hidden_size"] % config["num_attention_heads"]:
        raise ConfigError("the hidden size is not a multiple of the attention heads")
    return config


def write_graph(model_dir: Path, target: Path, opset: int) -> None:
    """Write the encoder (its three inputs to ``last_hidden_state``) to ``target``."""
    import onnx
    from onnx import helper
    from safetensors.numpy import load_file

    config = check_supported(model_dir)
    weights = load_file(str(Path(model_dir) / "model.safetensors"))
    graph = _Graph(weights)
    try:
        hidden = _encoder(graph, config)
    except KeyError as exc:
        raise ConfigError(f"the model's weights lack {exc}: not a BERT encoder this writer knows") from None
    graph.nodes.append(helper.make_node("Identity", [hidden], ["last_hidden_state"]))
    model = helper.make_model(graph.made(config["hidden_size"]), opset_imports=[helper.make_opsetid("", opset)])
    onnx.checker.check_model(model)
    onnx.save(model, str(target))


class _Graph:
    """Nodes and initialisers being written, each given a name of its own."""

    def __init__(self, weights: dict) -> None:
        self.weights = weights
        self.nodes: list = []
        self.initialisers: list = []
        self._names = 0

    def _name(self, prefix: str) -> str:
        self._names += 1
        return f"{prefix}_{self._names}"

    def const(self, array, prefix: str = "const") -> str:
        import numpy as np
        from onnx import numpy_helper

        name = self._name(prefix)
        self.initialisers.append(numpy_helper.from_array(np.asarray(array), name))
        return name

    def scalar(self, value: float) -> str:
        import numpy as np

        return self.const(np.array(value, dtype=np.float32))

    def op(self, kind: str, inputs: list[str], **attributes) -> str:
        from onnx import helper

        out = self._name(kind)
        self.nodes.append(helper.make_node(kind, inputs, [out], **attributes))
        return out

    def weight(self, key: str, transposed: bool = False) -> str:
        import numpy as np

        array = self.weights[key]
        return self.const(np.ascontiguousarray(array.T) if transposed else array, key.replace(".", "_"))

    def linear(self, x: str, prefix: str) -> str:
        """torch's Linear: x W^T + b."""
        product = self.op("MatMul", [x, self.weight(f"{prefix}.weight", transposed=True)])
        return self.op("Add", [product, self.weight(f"{prefix}.bias")])

    def layer_norm(self, x: str, prefix: str, epsilon: float) -> str:
        return self.op("LayerNormalization", [x, self.weight(f"{prefix}.weight"), self.weight(f"{prefix}.bias")],
                       axis=-1, epsilon=epsilon)

    def made(self, hidden: int):
        from onnx import TensorProto, helper

        dims = ["batch", "tokens"]
        return helper.make_graph(
            self.nodes, "minilm",
            [helper.make_tensor_value_info(name, TensorProto.INT64, dims) for name in INPUTS],
            [helper.make_tensor_value_info("last_hidden_state", TensorProto.FLOAT, [*dims, hidden])],
            self.initialisers)


def _encoder(g: _Graph, config: dict) -> str:
    import numpy as np

    epsilon = float(config["layer_norm_eps"])
    x = g.layer_norm(_embeddings(g), "embeddings.LayerNorm", epsilon)
    # The additive mask, as transformers makes it: 0 where a token is kept, float32's minimum
    # where it is padding; shaped [batch, 1, 1, tokens] to reach every head and query.
    kept = g.op("Cast", ["attention_mask"], to=1)  # FLOAT
    bias = g.op("Mul", [g.op("Sub", [g.scalar(1.0), kept]), g.scalar(float(np.finfo(np.float32).min))])
    bias = g.op("Unsqueeze", [bias, g.const(np.array([1, 2], dtype=np.int64))])
    for layer in range(int(config["num_hidden_layers"])):
        x = _layer(g, x, bias, f"encoder.layer.{layer}", config, epsilon)
    return x


def _embeddings(g: _Graph) -> str:
    import numpy as np

    def int64(value):
        return g.const(np.array(value, dtype=np.int64))

    words = g.op("Gather", [g.weight("embeddings.word_embeddings.weight"), "input_ids"])
    tokens = g.op("Gather", [g.op("Shape", ["input_ids"]), int64(1)])
    positions = g.op("Gather", [g.weight("embeddings.position_embeddings.weight"),
                                g.op("Range", [int64(0), tokens, int64(1)])])
    types = g.op("Gather", [g.weight("embeddings.token_type_embeddings.weight"), "token_type_ids"])
    return g.op("Add", [g.op("Add", [words, types]), positions])


def _layer(g: _Graph, x: str, bias: str, prefix: str, config: dict, epsilon: float) -> str:
    import numpy as np

    hidden, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    head = hidden // heads
    split = g.const(np.array([0, 0, heads, head], dtype=np.int64))  # 0: that dimension as it is

    def per_head(name: str, perm: list[int]) -> str:
        projected = g.linear(x, f"{prefix}.attention.self.{name}")
        return g.op("Transpose", [g.op("Reshape", [projected, split])], perm=perm)

    query, key, value = per_head("query", [0, 2, 1, 3]), per_head("key", [0, 2, 3, 1]), per_head("value", [0, 2, 1, 3])
    scores = g.op("Add", [g.op("Mul", [g.op("MatMul", [query, key]), g.scalar(1 / np.sqrt(head))]), bias])
    context = g.op("MatMul", [g.op("Softmax", [scores], axis=-1), value])
    context = g.op("Reshape", [g.op("Transpose", [context], perm=[0, 2, 1, 3]),
                               g.const(np.array([0, 0, hidden], dtype=np.int64))])
    x = g.layer_norm(g.op("Add", [g.linear(context, f"{prefix}.attention.output.dense"), x]),
                     f"{prefix}.attention.output.LayerNorm", epsilon)
    inner = g.linear(x, f"{prefix}.intermediate.dense")
    # GELU as BERT's "gelu" computes it, exactly: x/2 (1 + erf(x / sqrt 2)); ONNX Runtime fuses it.
    erf = g.op("Erf", [g.op("Mul", [inner, g.scalar(1 / np.sqrt(2))])])
    gelu = g.op("Mul", [g.op("Mul", [inner, g.scalar(0.5)]), g.op("Add", [erf, g.scalar(1.0)])])
    return g.layer_norm(g.op("Add", [g.linear(gelu, f"{prefix}.output.dense"), x]),
                        f"{prefix}.output.LayerNorm", epsilon)
