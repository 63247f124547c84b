"""What inline_constant_ifs and hoist_loop_invariants buy: sdx with every pass vs sdx with those two skipped
(SessionOptions.optimizer_skip) vs onnxruntime, in paired rounds, on the models of bench/control_flow.py
changed where these passes apply:

  python3 bench/control_flow_passes.py [--threads 1] [--rounds 9] [--json FILE]

- if_net_const: bench/control_flow.py's if_net with the sample rate a Constant (16000) instead of an input:
  Equal(Constant, Constant) folds, and the If is inlined. Compared with plain_net (the network without the
  If) too.
- loop_rnn_gain: bench/control_flow.py's loop_rnn with the recurrent weight scaled inside the body,
  Wh' = Wh * gain (gain an input [1, 64]) and b' = Tanh(b_raw), recomputed on every step, as exporters
  write weight-normalized RNNs: loop-invariant, hoisted out (the trip count folds to 64 from xs's shape).

What is printed per model: p50 per engine and the medians of the per-round ratios all/skipped (the two
passes' effect), all/onnxruntime, and for if_net_const all/plain_net. Outputs are checked against
onnxruntime first.
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
import control_flow as cf  # noqa: E402
from timing import interleave, make_ort, paired_ratios, pick_block, versions  # noqa: E402

PASSES = ["inline_constant_ifs", "hoist_loop_invariants"]


def if_net_const() -> onnx.ModelProto:
    m = cf.if_net()
    g = m.graph
    # sr: a Constant node instead of a graph input.
    keep = [i for i in g.input if i.name != "sr"]
    del g.input[:]
    g.input.extend(keep)
    g.node.insert(0, cf._const("sr", np.array([16000], np.int64)))
    onnx.checker.check_model(m)
    return m


def loop_rnn_gain() -> onnx.ModelProto:
    m = cf.loop_rnn()
    g = m.graph
    body = next(n for n in g.node if n.op_type == "Loop").attribute[0].g
    # MatMul(h, wh) -> MatMul(h, Mul(wh, gain)); Add(s, b) -> Add(s, Tanh(b_raw)).
    for n in body.node:
        if n.op_type == "MatMul" and n.input[1] == "wh":
            n.input[1] = "wh_g"
        if n.op_type == "Add" and n.input[1] == "b":
            n.input[1] = "b_t"
    body.node.insert(0, helper.make_node("Mul", ["wh", "gain"], ["wh_g"]))
    body.node.insert(1, helper.make_node("Tanh", ["b"], ["b_t"]))
    g.input.append(helper.make_tensor_value_info("gain", TensorProto.FLOAT, [1, cf.H]))
    onnx.checker.check_model(m)
    return m


def feeds_for(name: str) -> dict:
    if name == "loop_rnn_gain":
        f = cf.feeds_for("loop_rnn")
        f["gain"] = np.random.default_rng(8).uniform(0.5, 1.5, (1, cf.H)).astype(np.float32)
        return f
    return {"x": cf.feeds_for("plain_net")["x"]}


def make_sdx(data: bytes, threads: int, skip: list):
    import sdx

    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.optimizer_skip = skip
    return sdx.InferenceSession(data, opts)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--threads", type=int, nargs="+", default=[1])
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--block-ms", type=float, default=100.0)
    ap.add_argument("--warmup", type=int, default=20)
    ap.add_argument("--json", help="write the results here")
    args = ap.parse_args()
    models = {"if_net_const": if_net_const().SerializeToString(), "plain_net": cf.plain_net().SerializeToString(),
              "loop_rnn_gain": loop_rnn_gain().SerializeToString()}
    results = {"versions": versions(), "rounds": args.rounds, "models": {}}
    for threads in args.threads:
        for name in ("if_net_const", "loop_rnn_gain"):
            feeds = feeds_for(name)
            engines = {"all": make_sdx(models[name], threads, []),
                       "skipped": make_sdx(models[name], threads, PASSES),
                       "ort": make_ort(models[name], threads)}
            if name == "if_net_const":
                engines["plain"] = make_sdx(models["plain_net"], threads, [])
            rewrites = engines["all"].optimization_report()["rewrites_per_pass"]
            want = engines["ort"].run(None, feeds)
            for key, sess in engines.items():
                for g, w in zip(sess.run(None, feeds), want):
                    np.testing.assert_allclose(g, w, rtol=1e-4, atol=1e-5, err_msg=f"{name}: {key} vs onnxruntime")
                for _ in range(args.warmup):
                    sess.run(None, feeds)
            block = pick_block(engines, feeds, args.block_ms)
            samples = interleave(engines, feeds, args.rounds, block)
            p50 = {k: float(np.median([x for r in v for x in r])) / 1e3 for k, v in samples.items()}
            ratio = lambda a, b: statistics.median(paired_ratios(samples[a], samples[b]))  # noqa: E731
            row = {"threads": threads, "block": block, "p50_us": p50, "rewrites": {p: rewrites[p] for p in PASSES},
                   "all_over_skipped": ratio("all", "skipped"), "all_over_ort": ratio("all", "ort")}
            if "plain" in samples:
                row["all_over_plain"] = ratio("all", "plain")
            results["models"].setdefault(name, []).append(row)
            print(f"{name} {threads}T ({', '.join(f'{p} {n}' for p, n in row['rewrites'].items())}): "
                  + ", ".join(f"{k} {v:.1f} us" for k, v in p50.items())
                  + f" | all/skipped {row['all_over_skipped']:.3f}, all/onnxruntime {row['all_over_ort']:.3f}"
                  + (f", all/plain {row['all_over_plain']:.3f}" if "all_over_plain" in row else ""), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(results, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
