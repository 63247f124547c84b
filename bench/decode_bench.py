"""LLM decode, step by step, sdx against onnxruntime on the same GPT-2 decoder in Optimum's with-past layout
(scripts/make_gpt2_decoder.py; 4 layers, d 256, vocab 1024 unless --model names another): issue 21's speed
and replay criteria, measured.

    cd /tmp && python3 /path/to/repo/bench/decode_bench.py --threads 1,2 --json /tmp/decode.json

Two parts, both with one plain hand-written loop (`decode_steps`) that drives either engine as a user drives
onnxruntime: one token per call, attention_mask of ones, the previous call's present.* fed back as
past_key_values.*.

1. Per-token latency at batch 1 with the KV cache around --kv (128, 512, 1024). For each KV length and
   thread count: --rounds paired rounds; in a round each engine (order rotating) decodes --steps tokens
   starting from the same past (an onnxruntime prefill of the length the round starts at), after
   timing.SETTLE_S of idle time. Round r starts at KV length L + r * steps, so every step of the run has a
   KV length neither engine has seen before, as in a real decode (sdx keeps one plan per exact input-shape
   signature; a length seen in an earlier round would replay). Reported: p50 per-step latency of each
   engine over all rounds and the median of the per-round ratios sdx / onnxruntime (timing.paired_ratios).
   "sdx" is the plain loop on a default session: KV streams (SessionOptions.kv_streams, on by default;
   python/sdx/_kv_streams.py) run it on the model's paged form with the past kept in the session's buffers
   (the round's first step copies the onnxruntime prefill's past in; later ones continue the stream).
   sdx_exact is the same loop with kv_streams off (exact shapes, a new signature every step). sdx_buckets
   runs the loop with the past in contiguous KV buckets (--bucket slots; python/sdx/_kv_slots.py, the
   contiguous cache of sdx.generate). sdx_shape_buckets is the plain loop with kv_streams off and
   SessionOptions.shape_buckets = ["past_sequence_length=--bucket"] (the engine pads the past itself,
   shape_buckets.h). sdx_paged is sdx.generate's loop on its own pool (PagedLoop below).
2. Decoding --new-tokens (512) from a --prompt-len (16) token prompt under greedy: the tokens of sdx and
   onnxruntime must be identical; sdx's hit rate (decode steps whose run report says CPU_REPLAY / all
   decode steps), each engine's per-token p50 and tokens/s. sdx.generate runs the same decode too, and its
   tokens and hit rate are reported beside the hand-written loop's, and so are the plain loop's on a session
   with shape buckets.
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]
sys.path.insert(0, HERE)

from timing import SETTLE_S, make_ort, paired_ratios, platform_info, versions, write_json  # noqa: E402


class Decoder:
    """The KV geometry of a with-past model, read off its inputs."""

    def __init__(self, sess) -> None:
        names = [a.name for a in sess.get_inputs()]
        self.layers = sum(1 for n in names if n.startswith("past_key_values.") and n.endswith(".key"))
        kv = next(a for a in sess.get_inputs() if a.name == "past_key_values.0.key")
        self.heads, self.head_dim = kv.shape[1], kv.shape[3]
        self.past_names = [f"past_key_values.{i}.{k}" for i in range(self.layers) for k in ("key", "value")]

    def feeds(self, ids: list, total: int, past: list) -> dict:
        f = {"input_ids": np.asarray([ids], np.int64), "attention_mask": np.ones((1, total), np.int64),
             "position_ids": np.arange(total - len(ids), total, dtype=np.int64)[None]}
        f.update(zip(self.past_names, past))
        return f

    def empty_past(self) -> list:
        return [np.zeros((1, self.heads, 0, self.head_dim), np.float32)] * (2 * self.layers)


def decode_steps(sess, dec: Decoder, token: int, past: list, steps: int, with_report: bool = False) -> tuple:
    """The hand-written loop: `steps` greedy decode calls from `past` (its length: the KV so far) with `token`
    as the next input. Returns (tokens, per-step ns, replayed steps)."""
    total, out, ns, replayed = past[0].shape[2] + 1, [], [], 0
    clock = time.perf_counter_ns
    for _ in range(steps):
        feeds = dec.feeds([token], total, past)
        t0 = clock()
        if with_report:
            res, rep = sess.run_with_report(None, feeds)
            replayed += rep["execution_mode"] == "CPU_REPLAY"
        else:
            res = sess.run(None, feeds)
        token = int(res[0][0, -1].argmax())
        ns.append(clock() - t0)
        out.append(token)
        past, total = res[1:], total + 1
    return out, ns, replayed


def decode_steps_bucketed(sess, dec: Decoder, token: int, past: list, steps: int, bucket: int) -> tuple:
    """decode_steps with the past in KV buckets, as sdx.generate runs it (kv_bucket, python/sdx/_kv_slots.py;
    sess made from _decoder_graph.with_new_kv_outputs, so a step copies out each layer's new K/V, not the
    whole present.*): the same greedy loop, each step's time including the slot bookkeeping."""
    from sdx._decoder_graph import NEW_KV_PREFIX
    from sdx._kv_slots import KVSlots

    names = ["logits"] + [NEW_KV_PREFIX + n.replace("past_key_values.", "present.") for n in dec.past_names]
    slots = KVSlots.from_prefill(list(past), bucket)
    out, ns = [], []
    clock = time.perf_counter_ns
    for _ in range(steps):
        t0 = clock()
        feeds = {"input_ids": np.asarray([[token]], np.int64), "attention_mask": slots.mask(),
                 "position_ids": np.asarray([[slots.length]], np.int64)}
        feeds.update(zip(dec.past_names, slots.buffers))
        res = sess.run(names, feeds)
        slots.append(res[1:])
        token = int(res[0][0, -1].argmax())
        ns.append(clock() - t0)
        out.append(token)
    return out, ns, 0


class PagedLoop:
    """sdx.generate's loop on the paged KV cache (python/sdx/_paged_decode.py): the model in its paged form
    (_paged_graph.py, attention fused to sdx.PagedAttention over the pool), one pool of pages, the past never
    copied; a step's time includes the slot bookkeeping, the call, the new K/V's write into the pool and the
    greedy choice."""

    def __init__(self, path: str, threads: int, max_tokens: int, bucket: int) -> None:
        import sdx
        from sdx._paged_decode import PagedGeneration
        from sdx._paged_graph import OriginalIO, paged_decoder
        from sdx.generate import DecoderLayout

        graph = paged_decoder(path)
        opts = sdx.SessionOptions()
        opts.intra_op_num_threads = threads
        self.sess = sdx.InferenceSession(graph.model, opts)
        layout = DecoderLayout(OriginalIO(self.sess), path)
        layout.paged = graph
        from sdx._kv_pool import KVPool

        pool = KVPool(len(graph.cache_names), graph.heads, graph.head_dim, -(-max_tokens // 16) + 1, 16)
        self.gen = PagedGeneration(self.sess, graph, layout, 1, bucket, pool)

    def decode(self, token: int, past: list, steps: int) -> tuple:
        pool = self.gen.pool
        seq = pool.new_sequence(past[0].shape[2])
        pool.write(seq, 0, [x[0] for x in past])
        out, ns = [], []
        clock = time.perf_counter_ns
        for _ in range(steps):
            t0 = clock()
            pool.append(seq)
            logits, _ = self.gen.step([seq], [token])
            token = int(logits[0].argmax())
            ns.append(clock() - t0)
            out.append(token)
        pool.free(seq)
        return out, ns, 0


def prefill(sess, dec: Decoder, ids: list) -> tuple:
    """(next greedy token, presents) of a prompt run with an empty past."""
    res = sess.run(None, dec.feeds(ids, len(ids), dec.empty_past()))
    return int(res[0][0, -1].argmax()), res[1:]


def make_sdx(path: str, threads: int, shape_buckets: list | None = None, kv_streams: bool = True):
    import sdx

    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = threads
    opts.kv_streams = kv_streams
    if shape_buckets:
        opts.shape_buckets = shape_buckets
    return sdx.InferenceSession(path, opts)


def kv_latency(path: str, threads: int, kv_lengths: list, rounds: int, steps: int, vocab: int,
               bucket: int = 128) -> list:
    from sdx._decoder_graph import with_new_kv_outputs

    engines = {"sdx": make_sdx(path, threads), "onnxruntime": make_ort(open(path, "rb").read(), threads),
               "sdx_exact": make_sdx(path, threads, kv_streams=False),
               "sdx_buckets": make_sdx(with_new_kv_outputs(path)[0], threads, kv_streams=False),
               "sdx_shape_buckets": make_sdx(path, threads, [f"past_sequence_length={bucket}"], kv_streams=False)}
    paged = PagedLoop(path, threads, max(kv_lengths) + rounds * steps + 1, bucket)
    dec = Decoder(engines["onnxruntime"])
    rng = np.random.default_rng(0)
    for sess in engines.values():  # first-call costs (allocation, JIT) out of the figures: a short decode
        tok, past = prefill(sess, dec, [1, 2, 3])
        decode_steps(sess, dec, tok, past, 4)
    engines["sdx_paged"] = paged.sess
    rows = []
    for kv in kv_lengths:
        samples = {name: [] for name in engines}
        for r in range(rounds):
            start = kv + r * steps - 1  # the first step reads a past of kv + r*steps - 1 and writes that + 1
            tok, past = prefill(engines["onnxruntime"], dec, rng.integers(0, vocab, start).tolist())
            order = list(engines)[r % len(engines):] + list(engines)[:r % len(engines)]
            for name in order:
                time.sleep(SETTLE_S)
                if name == "sdx_buckets":
                    _, ns, _ = decode_steps_bucketed(engines[name], dec, tok, past, steps, bucket)
                elif name == "sdx_paged":
                    _, ns, _ = paged.decode(tok, past, steps)
                else:
                    _, ns, _ = decode_steps(engines[name], dec, tok, past, steps)
                samples[name].append(ns)
        ratios = paired_ratios(samples["sdx"], samples["onnxruntime"])
        bucket_ratios = paired_ratios(samples["sdx_buckets"], samples["onnxruntime"])
        engine_bucket_ratios = paired_ratios(samples["sdx_shape_buckets"], samples["onnxruntime"])
        paged_ratios = paired_ratios(samples["sdx_paged"], samples["onnxruntime"])
        exact_ratios = paired_ratios(samples["sdx_exact"], samples["onnxruntime"])
        row = {"threads": threads, "kv": kv, "kv_range": [kv, kv + rounds * steps - 1]}
        for name, s in samples.items():
            row[f"{name}_p50_us"] = float(np.percentile(np.concatenate(s), 50)) / 1e3
        row["ratio_median"] = float(np.median(ratios))
        row["ratio_range"] = [float(min(ratios)), float(max(ratios))]
        row["bucket"] = bucket
        row["buckets_ratio_median"] = float(np.median(bucket_ratios))
        row["buckets_ratio_range"] = [float(min(bucket_ratios)), float(max(bucket_ratios))]
        row["shape_buckets_ratio_median"] = float(np.median(engine_bucket_ratios))
        row["shape_buckets_ratio_range"] = [float(min(engine_bucket_ratios)), float(max(engine_bucket_ratios))]
        row["exact_ratio_median"] = float(np.median(exact_ratios))
        row["exact_ratio_range"] = [float(min(exact_ratios)), float(max(exact_ratios))]
        row["paged_ratio_median"] = float(np.median(paged_ratios))
        row["paged_ratio_range"] = [float(min(paged_ratios)), float(max(paged_ratios))]
        rows.append(row)
        print(f"  threads {threads}, KV {kv}..{row['kv_range'][1]}: sdx p50 {row['sdx_p50_us']:.0f} us, onnxruntime "
              f"{row['onnxruntime_p50_us']:.0f} us, sdx/onnxruntime {row['ratio_median']:.2f}x "
              f"(rounds {row['ratio_range'][0]:.2f}..{row['ratio_range'][1]:.2f}); sdx with KV buckets of {bucket} "
              f"{row['sdx_buckets_p50_us']:.0f} us, {row['buckets_ratio_median']:.2f}x "
              f"(rounds {row['buckets_ratio_range'][0]:.2f}..{row['buckets_ratio_range'][1]:.2f}); the hand loop on a "
              f"session with shape_buckets past_sequence_length={bucket} {row['sdx_shape_buckets_p50_us']:.0f} us, "
              f"{row['shape_buckets_ratio_median']:.2f}x (rounds {row['shape_buckets_ratio_range'][0]:.2f}.."
              f"{row['shape_buckets_ratio_range'][1]:.2f}); sdx.generate's paged loop {row['sdx_paged_p50_us']:.0f} us, "
              f"{row['paged_ratio_median']:.2f}x (rounds {row['paged_ratio_range'][0]:.2f}.."
              f"{row['paged_ratio_range'][1]:.2f}); the hand loop with kv_streams off (exact shapes) "
              f"{row['sdx_exact_p50_us']:.0f} us, {row['exact_ratio_median']:.2f}x", flush=True)
    return rows


def long_decode(path: str, threads: int, prompt_len: int, new_tokens: int, vocab: int) -> dict:
    import sdx

    prompt = np.random.default_rng(1).integers(0, vocab, prompt_len).tolist()
    out = {"threads": threads, "prompt_len": prompt_len, "new_tokens": new_tokens}
    tokens = {}
    for name, sess in (("onnxruntime", make_ort(open(path, "rb").read(), threads)), ("sdx", make_sdx(path, threads)),
                       ("sdx_shape_buckets", make_sdx(path, threads, ["past_sequence_length=128"], kv_streams=False))):
        dec = Decoder(sess)
        time.sleep(SETTLE_S)
        tok, past = prefill(sess, dec, prompt)
        rest, ns, replayed = decode_steps(sess, dec, tok, past, new_tokens - 1, with_report=name != "onnxruntime")
        tokens[name] = [tok] + rest
        us = np.asarray(ns) / 1e3
        out[f"{name}_p50_us"] = float(np.percentile(us, 50))
        out[f"{name}_decode_tokens_per_s"] = float(len(us) / (us.sum() / 1e6))
        if name != "onnxruntime":
            out[f"{name}_hit_rate"] = replayed / len(ns)
    time.sleep(SETTLE_S)
    opts = sdx.SessionOptions()
    opts.intra_op_num_threads = threads
    g = sdx.generate(path, prompt, new_tokens, sess_options=opts)  # by path: it copies out only the new K/V
    out["tokens_identical"] = tokens["sdx"] == tokens["onnxruntime"]
    out["shape_buckets_tokens_identical"] = tokens["sdx_shape_buckets"] == tokens["onnxruntime"]
    out["first_difference"] = next((i for i, (a, b) in enumerate(zip(tokens["sdx"], tokens["onnxruntime"])) if a != b),
                                   None)
    out["distinct_tokens"] = len(set(tokens["onnxruntime"]))
    out["generate"] = {"tokens_identical": g.tokens == tokens["onnxruntime"], "hit_rate": g.report["hit_rate"],
                       "per_token_latency_p50_us": g.report["per_token_latency_p50_us"],
                       "decode_tokens_per_s": g.report["decode_tokens_per_s"]}
    print(f"  threads {threads}, {new_tokens} tokens from a {prompt_len}-token prompt: tokens identical "
          f"{out['tokens_identical']} ({out['distinct_tokens']} distinct), sdx hit rate {out['sdx_hit_rate']:.3f}; "
          f"per-token p50 sdx {out['sdx_p50_us']:.0f} us, onnxruntime {out['onnxruntime_p50_us']:.0f} us; "
          f"sdx.generate: identical {out['generate']['tokens_identical']}, hit rate {g.report['hit_rate']:.3f}, "
          f"p50 {g.report['per_token_latency_p50_us']:.0f} us; the hand loop with shape_buckets: identical "
          f"{out['shape_buckets_tokens_identical']}, hit rate {out['sdx_shape_buckets_hit_rate']:.3f}, p50 "
          f"{out['sdx_shape_buckets_p50_us']:.0f} us", flush=True)
    return out


def _model(args) -> str:
    if args.model:
        return args.model
    spec = importlib.util.spec_from_file_location("make_gpt2_decoder", os.path.join(ROOT, "scripts", "make_gpt2_decoder.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    path = os.path.join(tempfile.mkdtemp(prefix="sdx_decode_"), "gpt2_decoder.onnx")
    import onnx

    onnx.save(mod.build(), path)
    return path


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", help="a with-past decoder (default: scripts/make_gpt2_decoder.py's defaults)")
    ap.add_argument("--threads", default="1,2", help="comma-separated thread counts (default 1,2)")
    ap.add_argument("--kv", default="128,512,1024", help="KV lengths (default 128,512,1024)")
    ap.add_argument("--rounds", type=int, default=6, help="paired rounds per KV length (default 6)")
    ap.add_argument("--steps", type=int, default=16, help="decode steps per engine per round (default 16)")
    ap.add_argument("--prompt-len", type=int, default=16)
    ap.add_argument("--new-tokens", type=int, default=512)
    ap.add_argument("--json", metavar="FILE")
    args = ap.parse_args()
    import onnxruntime as ort

    path = _model(args)
    vocab = ort.InferenceSession(path, providers=["CPUExecutionProvider"]).get_outputs()[0].shape[-1]
    threads = [int(t) for t in args.threads.split(",")]
    report = {"model": path, "versions": versions(), "platform": platform_info(), "args": vars(args),
              "kv_latency": [], "long_decode": []}
    print(f"model {path}; per-token latency at batch 1, {args.rounds} paired rounds of {args.steps} steps")
    for t in threads:
        report["kv_latency"] += kv_latency(path, t, [int(k) for k in args.kv.split(",")], args.rounds, args.steps, vocab)
    print(f"greedy decode of {args.new_tokens} tokens")
    for t in threads:
        report["long_decode"].append(long_decode(path, t, args.prompt_len, args.new_tokens, vocab))
    if args.json:
        write_json(args.json, report)
    return 0


if __name__ == "__main__":
    sys.exit(main())
