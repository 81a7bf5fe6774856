"""Turns the trained cross-encoder (train.py's model-full.npz) into the files ragpulse runs:

- cross-encoder.onnx: the embedding LayerNorm, the encoder layers and both heads as an ONNX graph
  whose matrix products are int8 (onnxruntime's dynamic quantization, one scale per output
  channel), run by onnxruntime in the scorer: about 2x the speed of the same model in numpy
  (bench/RESULTS.md);
- cross-encoder.npz: the word embeddings (int8 with one fp32 scale a row) and the position and type
  embeddings, which the runtime gathers with numpy: a gather is all they need, and as an ONNX
  initializer the 55k x 384 table would be stored in fp32 (85 MB).

Before quantizing, the fp32 graph must reproduce the probabilities JAX gave the probe pairs (to
5e-3), so a mistake in the graph fails here, not as a quietly worse judge.

    python train/export_onnx.py --model OUT/model-full.npz --tokenizer OUT/cross-encoder-tokenizer.json \
        --probes OUT/report.json --out OUT
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

import numpy as np

GRAPH_FILE = "cross-encoder.onnx"
EMBEDDINGS_FILE = "cross-encoder.npz"
OPSET = 20  # Gelu and LayerNormalization as single operators
# The weights are stored in fp16 (train.py save_model): the shipped 3-layer model's probes moved by
# up to 0.0033 from JAX's fp32 through that alone (in numpy as well as here).
PROBE_TOLERANCE = 5e-3


def build_graph(a: dict[str, np.ndarray]):  # noqa: ANN201 (an onnx.ModelProto; onnx is imported lazily)
    """The encoder on embedded tokens: inputs x (b, n, hidden), bias (b, 1, 1, n: 0 or -1e9 for
    padding) and mask (b, n); output logits (b, 2), one column a task (train.py TASKS)."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    layers, heads, eps = int(a["layers"]), int(a["heads"]), float(a["eps"])
    hidden = a["pos"].shape[-1]
    nodes: list = []
    inits: list = []

    def const(name: str, value: np.ndarray) -> str:
        inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], **attrs: object) -> str:
        out = f"{op.lower()}_{len(nodes)}"
        nodes.append(helper.make_node(op, inputs, [out], name=out, **attrs))
        return out

    def f32(key: str) -> np.ndarray:
        return a[key].astype(np.float32)

    def dense(x: str, key: str) -> str:
        # Weights are stored as torch lays them out, (out, in): the graph multiplies by the transpose.
        product = node("MatMul", [x, const(f"{key}_w", f32(f"{key}_w").T)])
        return node("Add", [product, const(f"{key}_b", f32(f"{key}_b"))])

    def norm(x: str, key: str) -> str:
        return node("LayerNormalization", [x, const(f"{key}_w", f32(f"{key}_w")), const(f"{key}_b", f32(f"{key}_b"))],
                    axis=-1, epsilon=eps)

    const("split_heads", np.array([0, 0, heads, hidden // heads], np.int64))
    const("join_heads", np.array([0, 0, hidden], np.int64))
    const("scale", np.array(1.0 / np.sqrt(hidden // heads), np.float32))
    const("tokens_axis", np.array([1], np.int64))
    const("last_axis", np.array([-1], np.int64))
    const("one", np.array(1.0, np.float32))
    x = norm("x", "eln")
    for i in range(layers):
        def heads_of(key: str, perm: list[int], i: int = i, x: str = x) -> str:
            return node("Transpose", [node("Reshape", [dense(x, f"l{i}.{key}"), "split_heads"])], perm=perm)

        q, k, v = heads_of("q", [0, 2, 1, 3]), heads_of("k", [0, 2, 3, 1]), heads_of("v", [0, 2, 1, 3])
        att = node("Softmax", [node("Add", [node("Mul", [node("MatMul", [q, k]), "scale"]), "bias"])], axis=-1)
        ctx = node("Reshape", [node("Transpose", [node("MatMul", [att, v])], perm=[0, 2, 1, 3]), "join_heads"])
        x = norm(node("Add", [x, dense(ctx, f"l{i}.ao")]), f"l{i}.aln")
        f = node("Gelu", [dense(x, f"l{i}.fi")])
        x = norm(node("Add", [x, dense(f, f"l{i}.fo")]), f"l{i}.oln")
    weighted = node("Mul", [x, node("Unsqueeze", ["mask", "last_axis"])])
    count = node("Max", [node("ReduceSum", ["mask", "tokens_axis"], keepdims=1), "one"])
    pooled = node("Div", [node("ReduceSum", [weighted, "tokens_axis"], keepdims=0), count])
    hid = node("Tanh", [node("Add", [node("MatMul", [pooled, const("head_w1", f32("head_w1"))]),
                                     const("head_b1", f32("head_b1"))])])
    nodes.append(helper.make_node("Add", [node("MatMul", [hid, const("head_w2", f32("head_w2"))]),
                                          const("head_b2", f32("head_b2"))], ["logits"]))
    graph = helper.make_graph(
        nodes, "ragpulse-cross-encoder",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["b", "n", hidden]),
         helper.make_tensor_value_info("bias", TensorProto.FLOAT, ["b", 1, 1, "n"]),
         helper.make_tensor_value_info("mask", TensorProto.FLOAT, ["b", "n"])],
        [helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["b", 2])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], producer_name="ragpulse-train")
    model.ir_version = 9  # what onnxruntime 1.20 and later read
    onnx.checker.check_model(model)
    return model


def embed(a: dict[str, np.ndarray], ids: np.ndarray) -> np.ndarray:
    """The graph's input x for token ids (b, n); the runtime does the same (cross_encoder.py)."""
    return a["word_q"][ids].astype(np.float32) * a["word_scale"][ids].astype(np.float32) \
        + a["pos"][:ids.shape[1]].astype(np.float32) + a["type"].astype(np.float32)


def check_probes(graph_path: Path, a: dict[str, np.ndarray], tokenizer: Path, probes: list[dict]) -> float:
    """The largest difference between the graph's probabilities and JAX's on the probe pairs."""
    import onnxruntime as ort
    from tokenizers import Tokenizer

    tok = Tokenizer.from_file(str(tokenizer))
    session = ort.InferenceSession(str(graph_path), providers=["CPUExecutionProvider"])
    worst = 0.0
    for p in probes:
        ids = np.asarray([tok.encode(p["a"], p["b"]).ids], np.int64)
        mask = np.ones(ids.shape, np.float32)
        logits = session.run(None, {"x": embed(a, ids), "bias": np.zeros((1, 1, 1, ids.shape[1]), np.float32),
                                    "mask": mask})[0]
        got = 1.0 / (1.0 + np.exp(-logits[0, ("support", "answers").index(p["task"])]))
        worst = max(worst, abs(float(got) - p["p"]))
    return worst


def export(model: Path, tokenizer: Path, probes: list[dict], out: Path) -> float:
    """Writes the two runtime files into `out`; returns the fp32 graph's largest probe difference."""
    import onnx
    from onnxruntime.quantization import QuantType, quantize_dynamic

    with np.load(model) as z:
        a = {k: z[k] for k in z.files}
    with tempfile.TemporaryDirectory() as tmp:
        fp32 = Path(tmp) / "fp32.onnx"
        onnx.save(build_graph(a), fp32)
        worst = check_probes(fp32, a, tokenizer, probes)
        if worst > PROBE_TOLERANCE:
            raise SystemExit(f"the ONNX graph differs from JAX by {worst:.4f} on a probe pair (> {PROBE_TOLERANCE})")
        quantize_dynamic(fp32, out / GRAPH_FILE, weight_type=QuantType.QInt8, per_channel=True)
    np.savez(out / EMBEDDINGS_FILE, word_q=a["word_q"], word_scale=a["word_scale"].astype(np.float32),
             pos=a["pos"].astype(np.float32), type=a["type"].astype(np.float32))
    return worst


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", type=Path, required=True, help="train.py's model-full.npz")
    ap.add_argument("--tokenizer", type=Path, required=True)
    ap.add_argument("--probes", type=Path, required=True, help="a report.json with probe pairs")
    ap.add_argument("--out", type=Path, required=True)
    args = ap.parse_args()
    probes = json.loads(args.probes.read_text(encoding="utf-8"))["probes"]
    worst = export(args.model, args.tokenizer, probes, args.out)
    print(f"wrote {args.out / GRAPH_FILE} and {args.out / EMBEDDINGS_FILE}; fp32 graph within {worst:.1e} of JAX")


if __name__ == "__main__":
    main()
