"""Continuous batching (issue 21): N sequences decoded by sdx.generate as one batch (max_batch, one model call
per step for every active sequence) against the same sequences decoded one after the other (max_batch=1), on
one session, in paired rounds.

    python3 bench/batch_decode.py [--model M.onnx | --geometry small|tiny] [--sequences 8] [--max-batch 8]
                                  [--new-tokens 64] [--threads 1] [--rounds 5] [--json FILE]

Models (scripts/make_gpt2_decoder.py, random weights, written to --workdir unless --model names one):
- small: GPT-2 small's geometry (12 layers, d 768, 12 heads, vocab 50257; 475 MiB of float32 weights), the
  smallest real decoder size: its weights do not fit in the caches, as no LLM's do.
- tiny: the 4-layer d-256 vocab-1024 decoder of bench/decode_bench.py (1.6 MiB of weights per layer: the
  whole model sits in L2/L3, and a decode step is bound by arithmetic, not by reading weights, so batching
  cannot win much on a CPU; shown for contrast).

The prompts are seeded random token ids of mixed lengths (3..30); every sequence decodes --new-tokens tokens
under greedy sampling (--mixed: 1..--new-tokens each, so sequences leave the batch at different steps and
queued ones join). A round times both ways, in alternating order, after timing.SETTLE_S of idle time; a
warm-up round (plans for every batch and KV bucket) is not timed. Reported: tokens/s of each (all new
tokens / wall time, prefills included), the median of the per-round ratios batched / sequential, the batch's
hit rate, occupancy and padding waste, and whether the tokens are identical.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from timing import SETTLE_S, platform_info, versions, write_json  # noqa: E402

GEOMETRIES = {"small": ["--layers", "12", "--d-model", "768", "--heads", "12", "--vocab", "50257", "--max-pos", "1024"],
              "tiny": ["--layers", "4", "--d-model", "256", "--heads", "4", "--vocab", "1024"]}


def model_path(a) -> str:
    if a.model:
        return a.model
    path = os.path.join(a.workdir, f"sdx_batch_decode_gpt2_{a.geometry}.onnx")
    if not os.path.exists(path):
        subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "make_gpt2_decoder.py"), path] +
                       GEOMETRIES[a.geometry], check=True)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model")
    ap.add_argument("--geometry", choices=sorted(GEOMETRIES), default="small")
    ap.add_argument("--workdir", default="/tmp")
    ap.add_argument("--sequences", type=int, default=8)
    ap.add_argument("--max-batch", type=int, default=8)
    ap.add_argument("--new-tokens", type=int, default=64)
    ap.add_argument("--mixed", action="store_true", help="per-sequence max_new_tokens in 1..--new-tokens")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--max-len", type=int, default=1024,
                    help="the model's context length, for the contiguous max-length KV figure (default 1024)")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--json")
    a = ap.parse_args()
    import sdx
    from sdx.generate import check_request

    path = model_path(a)
    so = sdx.SessionOptions()
    so.intra_op_num_threads = a.threads
    sess = check_request(path, [[1]], 1, sess_options=so)  # the session generate() makes (the paged form)
    rng = np.random.default_rng(0)
    prompts = [[int(t) for t in rng.integers(0, 1000, size=int(n))] for n in rng.integers(3, 31, size=a.sequences)]
    counts = [int(c) for c in rng.integers(1, a.new_tokens + 1, size=a.sequences)] if a.mixed else None

    new_tokens = counts if counts is not None else a.new_tokens

    def sequential():
        return sdx.generate(sess, prompts, new_tokens, max_batch=1)

    def batched():
        return sdx.generate(sess, prompts, new_tokens, max_batch=a.max_batch)

    def timed(fn):
        time.sleep(SETTLE_S)
        t0 = time.perf_counter()
        out = fn()
        return time.perf_counter() - t0, out

    _, ref = timed(sequential)  # warm-up: every plan
    _, got = timed(batched)
    identical = [r.tokens == g.tokens for r, g in zip(ref, got)]
    total = sum(len(r.tokens) for r in ref)
    seq_s, bat_s, ratios = [], [], []
    for r in range(a.rounds):
        if r % 2 == 0:
            ts, _ = timed(sequential)
            tb, got = timed(batched)
        else:
            tb, got = timed(batched)
            ts, _ = timed(sequential)
        seq_s.append(ts)
        bat_s.append(tb)
        ratios.append(ts / tb)
    rep = got[0].report["batch"]
    row = {"model": os.path.basename(path), "sequences": a.sequences, "max_batch": a.max_batch,
           "new_tokens": total, "threads": a.threads, "rounds": a.rounds,
           "sequential_tokens_per_s": total / statistics.median(seq_s),
           "batched_tokens_per_s": total / statistics.median(bat_s),
           "speedup_median": statistics.median(ratios), "speedup_min": min(ratios),
           "tokens_identical": all(identical), "identical_sequences": sum(identical),
           "hit_rate": rep["hit_rate"], "batch_occupancy": rep["batch_occupancy"],
           "padding_waste": rep["padding_waste"], "decode_steps": rep["decode_steps"]}
    if rep.get("kv_cache") == "paged":  # the paged cache's memory against contiguous rows of the model's length
        per_token = rep["kv_bytes_peak"] // max(1, rep["kv_pages_peak"] * rep["kv_page_size"])
        row.update({"kv_page_size": rep["kv_page_size"], "kv_pages_peak": rep["kv_pages_peak"],
                    "kv_bytes_peak": rep["kv_bytes_peak"], "kv_slack_tokens_max": rep["kv_slack_tokens_max"],
                    "kv_bytes_request_rows": rep["kv_bytes_contiguous"],
                    "kv_bytes_max_length_rows": min(a.max_batch, a.sequences) * a.max_len * per_token,
                    "prefix_tokens_shared": rep["prefix_tokens_shared"]})
    print(f"{row['model']}: {a.sequences} sequences, {total} new tokens, {a.threads} thread(s), {a.rounds} rounds")
    print(f"  one after the other: {row['sequential_tokens_per_s']:.1f} tokens/s   "
          f"batched (max_batch {a.max_batch}): {row['batched_tokens_per_s']:.1f} tokens/s")
    print(f"  speed-up (per-round ratios): median {row['speedup_median']:.2f}x, min {row['speedup_min']:.2f}x; "
          f"tokens identical: {row['identical_sequences']}/{a.sequences}")
    print(f"  batch: {rep['decode_steps']} steps, hit rate {rep['hit_rate']:.3f}, "
          f"occupancy {rep['batch_occupancy']:.2f}, KV padding waste {rep['padding_waste']:.2f}")
    if "kv_bytes_peak" in row:
        print(f"  paged KV: at most {row['kv_pages_peak']} pages of {row['kv_page_size']} tokens held "
              f"({row['kv_bytes_peak'] / 2**20:.2f} MiB); the most unused slots of any sequence at any step: "
              f"{row['kv_slack_tokens_max']} (< one page); contiguous rows of the longest request: "
              f"{row['kv_bytes_request_rows'] / 2**20:.2f} MiB, of the model's {a.max_len} positions: "
              f"{row['kv_bytes_max_length_rows'] / 2**20:.2f} MiB")
    if a.json:
        write_json(a.json, {"benchmark": "batch_decode", "results": [row], "versions": versions(),
                            "platform": platform_info()})
    return 0


if __name__ == "__main__":
    sys.exit(main())
