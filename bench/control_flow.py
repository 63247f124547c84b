"""Control flow at speed (issue 20's acceptance): a network inside an If, and a Loop-based RNN, built the way
exporters write them, timed in sdx with subgraph plans (SessionOptions.subgraph_plans, on by default), in sdx
with bodies interpreted node by node (subgraph_plans off: how sdx ran every body before), and in onnxruntime,
in paired rounds.

  python3 bench/control_flow.py [--threads 1 2] [--rounds 9] [--json FILE]

Models (random weights, fixed seed; built here, nothing downloaded):
- if_net: sr (int64 [1]) == 16000 selects one of two branches, each Conv1d(40 -> 64, k 3) + Relu + LSTM(64)
  over 64 frames + Gemm(64 -> 2) on the last hidden state, with the Shape/Gather/Unsqueeze/Concat/Reshape
  chains and Constant nodes an exporter writes inside the branches (silero-VAD style: the condition is
  constant for a session but not known when it loads).
- plain_net: the same network as if_net's taken branch, without the If.
- loop_rnn: a Loop over the 64 steps of xs [64, 1, 32] (trip count from Shape(xs), as exporters do), carrying
  h [1, 64]: h = Tanh(x_t Wx + h Wh + b), with every h as a scan output.

What is printed per model and thread count: p50 per engine, and the medians of the per-round ratios
sdx/interpreted ("speed-up over interpreted bodies" is its inverse), sdx/onnxruntime, and for if_net,
if_net/plain_net in sdx (the If's own cost). Outputs are checked against onnxruntime first.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from timing import interleave, make_ort, paired_ratios, pick_block, versions  # noqa: E402

C_IN, C_HID, T, H, OUT = 40, 64, 64, 64, 2
OPSET = 17


def _const(name: str, array: np.ndarray) -> onnx.NodeProto:
    return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(array), name + "_v"))


def network_nodes(prefix: str, x: str, out: str, rng: np.random.Generator) -> tuple[list, list]:
    """(nodes, initializers): Conv1d + Relu + LSTM + Gemm on the last hidden state, exporter style."""
    p = prefix
    w = lambda *s: (rng.standard_normal(s) / np.sqrt(s[-1])).astype(np.float32)  # noqa: E731
    inits = [numpy_helper.from_array(w(C_HID, C_IN, 3), p + "conv_w"),
             numpy_helper.from_array(w(C_HID) * 0.1, p + "conv_b"),
             numpy_helper.from_array(w(1, 4 * H, C_HID), p + "lstm_w"),
             numpy_helper.from_array(w(1, 4 * H, H), p + "lstm_r"),
             numpy_helper.from_array(w(1, 8 * H) * 0.1, p + "lstm_b"),
             numpy_helper.from_array(w(OUT, H), p + "fc_w"),
             numpy_helper.from_array(w(OUT) * 0.1, p + "fc_b")]
    nodes = [
        helper.make_node("Conv", [x, p + "conv_w", p + "conv_b"], [p + "conv"], kernel_shape=[3], pads=[1, 1]),
        helper.make_node("Relu", [p + "conv"], [p + "relu"]),
        helper.make_node("Transpose", [p + "relu"], [p + "seq"], perm=[2, 0, 1]),  # [T, N, C]
        helper.make_node("LSTM", [p + "seq", p + "lstm_w", p + "lstm_r", p + "lstm_b"], [p + "y", p + "y_h"],
                         hidden_size=H),
        # Flatten y_h [1, N, H] -> [N, H] through the shape arithmetic exporters emit.
        helper.make_node("Shape", [p + "y_h"], [p + "shape"]),
        _const(p + "i1", np.array(1, np.int64)),
        helper.make_node("Gather", [p + "shape", p + "i1"], [p + "n"], axis=0),
        _const(p + "ax0", np.array([0], np.int64)),
        helper.make_node("Unsqueeze", [p + "n", p + "ax0"], [p + "n1"]),
        _const(p + "minus1", np.array([-1], np.int64)),
        helper.make_node("Concat", [p + "n1", p + "minus1"], [p + "flat_shape"], axis=0),
        helper.make_node("Reshape", [p + "y_h", p + "flat_shape"], [p + "h"]),
        helper.make_node("Gemm", [p + "h", p + "fc_w", p + "fc_b"], [out], transB=1),
    ]
    return nodes, inits


def model(graph: onnx.GraphProto) -> onnx.ModelProto:
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def if_net() -> onnx.ModelProto:
    rng = np.random.default_rng(20)
    then_nodes, then_inits = network_nodes("t_", "x", "then_out", rng)
    else_nodes, else_inits = network_nodes("e_", "x", "else_out", rng)
    out_info = lambda n: helper.make_tensor_value_info(n, TensorProto.FLOAT, None)  # noqa: E731
    # Branch weights as Constant nodes inside the branches, as exporters write them.
    as_consts = lambda inits: [helper.make_node("Constant", [], [t.name], value=t) for t in inits]  # noqa: E731
    then_g = helper.make_graph(as_consts(then_inits) + then_nodes, "then_branch", [], [out_info("then_out")])
    else_g = helper.make_graph(as_consts(else_inits) + else_nodes, "else_branch", [], [out_info("else_out")])
    nodes = [_const("sr16k", np.array([16000], np.int64)),
             helper.make_node("Equal", ["sr", "sr16k"], ["is16k_1"]),
             _const("ax0", np.array([0], np.int64)),
             helper.make_node("Squeeze", ["is16k_1", "ax0"], ["is16k"]),
             helper.make_node("If", ["is16k"], ["y"], then_branch=then_g, else_branch=else_g)]
    g = helper.make_graph(nodes, "if_net",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C_IN, T]),
                           helper.make_tensor_value_info("sr", TensorProto.INT64, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, OUT])])
    return model(g)


def plain_net() -> onnx.ModelProto:
    rng = np.random.default_rng(20)  # the same draws: the then-branch's weights
    nodes, inits = network_nodes("t_", "x", "y", rng)
    g = helper.make_graph(nodes, "plain_net", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, C_IN, T])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, OUT])], inits)
    return model(g)


def loop_rnn() -> onnx.ModelProto:
    rng = np.random.default_rng(21)
    d_in = 32
    wx = (rng.standard_normal((d_in, H)) / np.sqrt(d_in)).astype(np.float32)
    wh = (rng.standard_normal((H, H)) / np.sqrt(H)).astype(np.float32)
    b = (rng.standard_normal(H) * 0.1).astype(np.float32)
    body = helper.make_graph(
        [helper.make_node("Gather", ["xs", "i"], ["x_t"], axis=0),  # [1, d_in]; xs from the outer scope
         helper.make_node("MatMul", ["x_t", "wx"], ["xw"]),
         helper.make_node("MatMul", ["h", "wh"], ["hw"]),
         helper.make_node("Add", ["xw", "hw"], ["s"]),
         helper.make_node("Add", ["s", "b"], ["s_b"]),
         helper.make_node("Tanh", ["s_b"], ["h_next"]),
         helper.make_node("Identity", ["cond"], ["cond_out"]),
         helper.make_node("Identity", ["h_next"], ["h_scan"])],
        "rnn_step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h", TensorProto.FLOAT, [1, H])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("h_next", TensorProto.FLOAT, [1, H]),
         helper.make_tensor_value_info("h_scan", TensorProto.FLOAT, [1, H])])
    nodes = [helper.make_node("Shape", ["xs"], ["xs_shape"]),
             _const("i0", np.array(0, np.int64)),
             helper.make_node("Gather", ["xs_shape", "i0"], ["steps"], axis=0),
             _const("true", np.array(True)),
             helper.make_node("Loop", ["steps", "true", "h0"], ["h_last", "hs"], body=body)]
    g = helper.make_graph(nodes, "loop_rnn",
                          [helper.make_tensor_value_info("xs", TensorProto.FLOAT, [T, 1, d_in]),
                           helper.make_tensor_value_info("h0", TensorProto.FLOAT, [1, H])],
                          [helper.make_tensor_value_info("h_last", TensorProto.FLOAT, [1, H]),
                           helper.make_tensor_value_info("hs", TensorProto.FLOAT, [T, 1, H])],
                          [numpy_helper.from_array(wx, "wx"), numpy_helper.from_array(wh, "wh"),
                           numpy_helper.from_array(b, "b")])
    return model(g)


def feeds_for(name: str) -> dict:
    rng = np.random.default_rng(7)
    if name == "loop_rnn":
        return {"xs": rng.standard_normal((T, 1, 32)).astype(np.float32), "h0": np.zeros((1, H), np.float32)}
    f = {"x": rng.standard_normal((1, C_IN, T)).astype(np.float32)}
    if name == "if_net":
        f["sr"] = np.array([16000], np.int64)
    return f


def make_sdx(data: bytes, threads: int, subgraph_plans: bool):
    import sdx

    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.subgraph_plans = subgraph_plans
    return sdx.InferenceSession(data, opts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--block-ms", type=float, default=100.0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    models = {"if_net": if_net().SerializeToString(), "plain_net": plain_net().SerializeToString(),
              "loop_rnn": loop_rnn().SerializeToString()}
    results = {"versions": versions(), "rounds": args.rounds, "models": {}}
    for threads in args.threads:
        for name in ("if_net", "loop_rnn"):
            feeds = feeds_for(name)
            engines = {"sdx": make_sdx(models[name], threads, True),
                       "interpreted": make_sdx(models[name], threads, False),
                       "ort": make_ort(models[name], threads)}
            if name == "if_net":  # the same network without the If, fed the same x
                engines["plain"] = make_sdx(models["plain_net"], threads, True)
            want = engines["ort"].run(None, feeds)
            for key, sess in engines.items():
                f = {"x": feeds["x"]} if key == "plain" else feeds
                got = sess.run(None, f)
                for g, w in zip(got, want):
                    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{name}: {key} vs onnxruntime")
                for _ in range(args.warmup):
                    sess.run(None, f)
            # interleave feeds one dict to every engine: plain takes only x, so it gets a wrapper.
            if "plain" in engines:
                plain = engines["plain"]
                engines["plain"] = type("Plain", (), {"run": staticmethod(lambda o, f: plain.run(o, {"x": f["x"]}))})
            block = pick_block(engines, feeds, args.block_ms)
            samples = interleave(engines, feeds, args.rounds, block)
            p50 = {k: float(np.median([x for r in v for x in r])) / 1e3 for k, v in samples.items()}
            ratio = lambda a, b: statistics.median(paired_ratios(samples[a], samples[b]))  # noqa: E731
            row = {"threads": threads, "block": block, "p50_us": p50,
                   "sdx_over_interpreted": ratio("sdx", "interpreted"), "sdx_over_ort": ratio("sdx", "ort")}
            if "plain" in samples:
                row["if_over_plain"] = ratio("sdx", "plain")
            results["models"].setdefault(name, []).append(row)
            extra = f", If/plain {row['if_over_plain']:.3f}" if "plain" in row else ""
            print(f"{name} {threads}T: sdx {p50['sdx']:.1f} us, interpreted {p50['interpreted']:.1f} us, "
                  f"onnxruntime {p50['ort']:.1f} us" + (f", plain {p50['plain']:.1f} us" if "plain" in p50 else "") +
                  f" | speed-up over interpreted {1 / row['sdx_over_interpreted']:.2f}x, "
                  f"sdx/onnxruntime {row['sdx_over_ort']:.3f}{extra}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
