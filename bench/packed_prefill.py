"""Packed prompts (issue 21, the CPU form of piecewise plans): requests whose prompts have lengths never seen
before, decoded by sdx.generate with continuous batching, joining prompts packed as rows of the decode call
(calls bucketed by token count: default) against each prompt run alone at its exact length
(packed_prefill=False), on two sessions of the same model, in paired rounds; onnxruntime's prefill of the same
prompts, one at a time at their exact shapes, for scale.

    python3 bench/packed_prefill.py [--model M.onnx | --geometry small|tiny] [--requests 16] [--max-batch 8]
                                    [--min-len 4] [--max-len 64] [--new-tokens 4..16] [--threads 1]
                                    [--rounds 5] [--json FILE]

Each round draws a new request: --requests prompts of seeded random lengths and token ids, each with its
own max_new_tokens. Both sdx sessions decode it (alternating which goes first, after timing.SETTLE_S of
idle time); a warm-up round is not timed. The packed session replays a plan per (token bucket, KV width),
the other warms up a plan for each new prompt length (a serving process sees new lengths all the time).
Reported per round and as medians: wall time and tokens/s of each (all new tokens, prefills included), the
ratio alone / packed, the seconds spent in calls that held prompt tokens (packed: those calls also held
decode rows), how many of those calls replayed, whether the tokens are identical; and onnxruntime's time to
prefill the round's prompts one at a time (empty past). The disk plan cache is off (SDX_DISK_PLAN_CACHE=0
unless set): both sessions start cold, as a process meeting new lengths does, and neither starts from plans
an earlier run left on disk.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import numpy as np

from batch_decode import GEOMETRIES, model_path
from timing import SETTLE_S, platform_info, versions, write_json


def ort_prefill(path: str, threads: int):
    """prefill(prompts) -> seconds for onnxruntime to run each prompt alone with an empty past."""
    import onnxruntime as ort

    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    sess = ort.InferenceSession(path, so, providers=["CPUExecutionProvider"])
    pasts = [(i.name, i.shape) for i in sess.get_inputs() if i.name.startswith("past_key_values.")]
    has_pos = any(i.name == "position_ids" for i in sess.get_inputs())

    def prefill(prompts: list) -> float:
        t = time.perf_counter()
        for p in prompts:
            feeds = {"input_ids": np.asarray([p], np.int64), "attention_mask": np.ones((1, len(p)), np.int64)}
            if has_pos:
                feeds["position_ids"] = np.arange(len(p), dtype=np.int64)[None]
            for name, shape in pasts:
                feeds[name] = np.zeros((1, shape[1], 0, shape[3]), np.float32)
            sess.run(["logits"], feeds)
        return time.perf_counter() - t

    return prefill


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--geometry", choices=sorted(GEOMETRIES), default="small")
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--requests", type=int, default=16, help="prompts per round")
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--min-len", type=int, default=4)
    ap.add_argument("--max-len", type=int, default=64)
    ap.add_argument("--new-tokens", default="4..16", help="LO..HI: each prompt's max_new_tokens, drawn per prompt")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--no-ort", action="store_true", help="skip onnxruntime's prefill figure")
    ap.add_argument("--json")
    a = ap.parse_args()
    os.environ.setdefault("SDX_DISK_PLAN_CACHE", "0")
    import sdx
    from sdx.generate import check_request

    lo, hi = (int(x) for x in a.new_tokens.split(".."))
    path = model_path(a)
    so = sdx.SessionOptions()
    so.intra_op_num_threads = a.threads
    sessions = {"packed": check_request(path, [[1]], 1, sess_options=so),
                "alone": check_request(path, [[1]], 1, sess_options=so)}
    ort = None if a.no_ort else ort_prefill(path, a.threads)
    rng = np.random.default_rng(0)

    def run(mode: str, prompts: list, counts: list) -> dict:
        time.sleep(SETTLE_S)
        t = time.perf_counter()
        rs = sdx.generate(sessions[mode], prompts, counts, max_batch=a.max_batch, packed_prefill=mode == "packed")
        wall = time.perf_counter() - t
        b = rs[0].report["batch"]
        return {"wall_s": wall, "tokens_per_s": sum(len(r.tokens) for r in rs) / wall, "prefill_s": b["prefill_s"],
                "prefill_calls": b["prefill_calls"], "prefill_replayed": b["prefill_replayed"],
                "packed": b["packed_prefill"], "tokens": [r.tokens for r in rs]}

    rounds = []
    for k in range(a.rounds + 1):
        prompts = [[int(t) for t in rng.integers(0, 1000, size=int(n))]
                   for n in rng.integers(a.min_len, a.max_len + 1, size=a.requests)]
        counts = [int(c) for c in rng.integers(lo, hi + 1, size=a.requests)]
        order = ["packed", "alone"] if k % 2 else ["alone", "packed"]
        res = {m: run(m, prompts, counts) for m in order}
        row = {"round": k, "prompt_tokens": sum(map(len, prompts)), "new_tokens": sum(counts),
               "identical": res["packed"]["tokens"] == res["alone"]["tokens"],
               "ratio_alone_over_packed": res["alone"]["wall_s"] / res["packed"]["wall_s"]}
        for m in ("packed", "alone"):
            row[m] = {key: v for key, v in res[m].items() if key != "tokens"}
        if ort is not None:
            time.sleep(SETTLE_S)
            row["onnxruntime_prefill_s"] = ort(prompts)
        label = "warm-up" if k == 0 else f"round {k}"
        print(f"{label}: {row['prompt_tokens']} prompt tokens, {row['new_tokens']} new; packed "
              f"{res['packed']['wall_s']:.3f} s (prompt calls {res['packed']['prefill_s']:.3f} s, "
              f"{res['packed']['prefill_replayed']}/{res['packed']['prefill_calls']} replayed), alone "
              f"{res['alone']['wall_s']:.3f} s (prefills {res['alone']['prefill_s']:.3f} s, "
              f"{res['alone']['prefill_replayed']}/{res['alone']['prefill_calls']} replayed)"
              + (f", onnxruntime prefills {row['onnxruntime_prefill_s']:.3f} s" if ort else "")
              + f"; alone/packed {row['ratio_alone_over_packed']:.2f}x, tokens identical: {row['identical']}",
              flush=True)
        if k:
            rounds.append(row)
    med = {"ratio_alone_over_packed": statistics.median(r["ratio_alone_over_packed"] for r in rounds),
           "packed_tokens_per_s": statistics.median(r["packed"]["tokens_per_s"] for r in rounds),
           "alone_tokens_per_s": statistics.median(r["alone"]["tokens_per_s"] for r in rounds),
           "packed_prompt_calls_s": statistics.median(r["packed"]["prefill_s"] for r in rounds),
           "alone_prefill_s": statistics.median(r["alone"]["prefill_s"] for r in rounds)}
    if ort is not None:
        med["onnxruntime_prefill_s"] = statistics.median(r["onnxruntime_prefill_s"] for r in rounds)
    print(f"medians over {len(rounds)} rounds ({a.threads} thread(s)): packed {med['packed_tokens_per_s']:.1f} "
          f"tokens/s, alone {med['alone_tokens_per_s']:.1f} tokens/s, alone/packed wall "
          f"{med['ratio_alone_over_packed']:.2f}x (min {min(r['ratio_alone_over_packed'] for r in rounds):.2f}x); "
          f"prompt calls {med['packed_prompt_calls_s']:.3f} s packed, prefills {med['alone_prefill_s']:.3f} s alone"
          + (f", onnxruntime prefills {med['onnxruntime_prefill_s']:.3f} s" if ort else "")
          + f"; tokens identical in {sum(r['identical'] for r in rounds)}/{len(rounds)} rounds")
    if a.json:
        write_json(a.json, {"benchmark": "packed_prefill", "model": path, "threads": a.threads,
                            "requests": a.requests, "max_batch": a.max_batch, "rounds": rounds, "medians": med,
                            "platform": platform_info(), "versions": versions()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
