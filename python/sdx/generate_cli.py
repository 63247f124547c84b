"""`sdx generate`: decode tokens with a with-past decoder (sdx.generate) from the command line.

    sdx generate gpt2.onnx --prompt-ids 464,3290,318 --max-new-tokens 32
    sdx generate gpt2.onnx --batch-file prompts.txt --max-new-tokens 64 --sampling top_p --top-p 0.9 --seed 0 \\
                 --json out.json

--batch-file holds one prompt a line (comma-separated token ids; blank lines and lines starting with # are
skipped); the prompts decode together with continuous batching, up to --max-batch (default 8) at a time
(--max-batch 1: one after another). The text output streams a single prompt's tokens as they come (a batch's
once its sequences end), then the report line; --json FILE writes tokens, tokens/s, hit_rate and the
per-token latency of every prompt, and a batch's report ('-': to stdout, instead of the text). --kv-cache,
--kv-pages and --kv-page-size choose the KV cache (a paged pool by default, when the model allows);
--no-packed-prefill runs each prompt alone instead of as rows of the decode call. Exit
status 2 for a usage or input error (a model not in the with-past layout, an out-of-range token id, bad
sampling parameters, a single prompt the KV pool cannot hold).
"""
from __future__ import annotations

import json

from ._cli_support import EXIT_OK, UsageError, int_at_least, positive_float


def parse_ids(text: str, where: str) -> list:
    """'1, 2,3' -> [1, 2, 3]; UsageError naming `where` otherwise."""
    parts = [p.strip() for p in text.split(",")]
    try:
        ids = [int(p) for p in parts]
    except ValueError:
        bad = next(p for p in parts if not p.lstrip("-").isdigit())
        raise UsageError(f"{where}: '{bad}' is not a token id (expected comma-separated whole numbers)") from None
    return ids


def read_prompts(args) -> list:
    if args.prompt_ids is not None and args.batch_file is not None:
        raise UsageError("give --prompt-ids or --batch-file, not both")
    if args.prompt_ids is not None:
        return [parse_ids(args.prompt_ids, "--prompt-ids")]
    if args.batch_file is None:
        raise UsageError("give the prompt: --prompt-ids 1,2,3 or --batch-file FILE (one prompt a line)")
    prompts = []
    with open(args.batch_file) as f:
        for n, line in enumerate(f, 1):
            line = line.strip()
            if line and not line.startswith("#"):
                prompts.append(parse_ids(line, f"{args.batch_file}:{n}"))
    if not prompts:
        raise UsageError(f"--batch-file '{args.batch_file}' holds no prompt")
    return prompts


def _report_line(rep: dict) -> str:
    def f(x, spec):
        return "n/a" if x is None else format(x, spec)

    hit = "n/a" if rep["hit_rate"] is None else f"{rep['hit_rate']:.1%} ({rep['replayed_steps']}/{rep['decode_steps']})"
    return (f"  {rep['new_tokens']} tokens ({rep['stopped_by']}); prefill {rep['prompt_tokens']} tokens in "
            f"{rep['prefill_ms']:.2f} ms ({rep['prefill_tokens_per_s']:.0f} tokens/s); decode "
            f"{f(rep['decode_tokens_per_s'], '.1f')} tokens/s, per-token p50 {f(rep['per_token_latency_p50_us'], '.0f')} us"
            f"; replay hit rate {hit}"
            + (f"; KV buckets of {rep['kv_bucket']} ({rep['kv_bucket_check']}), padding {rep['padding_waste']:.1%}"
               if rep.get("kv_bucket") else "")
            + (f"; paged KV cache: {rep['kv_pages_peak']} of {rep['kv_pages']} pages of {rep['kv_page_size']} tokens "
               f"at most ({rep['kv_bytes_peak'] / 1024:.0f} KiB)" if rep.get("kv_cache") == "paged" else ""))


def _print_batch(results: list) -> None:
    batched = results[0].report.get("continuous_batching") == "on"
    for i, r in enumerate(results):
        print(f"prompt {i}: {','.join(map(str, r.prompt))}\n  tokens: {' '.join(map(str, r.tokens))}")
        if not batched:
            print(_report_line(r.report))
    if batched:
        b = results[0].report["batch"]
        print(f"continuous batching: {b['sequences']} sequences, up to {b['max_batch']} at a time; "
              f"{b['new_tokens']} tokens in {b['wall_s'] * 1e3:.1f} ms ({b['tokens_per_s']:.1f} tokens/s); "
              f"{b['decode_steps']} decode steps, step p50 {b['step_latency_p50_us']:.0f} us, replay hit rate "
              f"{b['hit_rate']:.1%}, batch occupancy {b['batch_occupancy']:.1%}, KV padding {b['padding_waste']:.1%}"
              + (f"; paged KV cache: {b['kv_pages_peak']} of {b['kv_pages']} pages at most "
                 f"({b['kv_bytes_peak'] / 1024:.0f} KiB; contiguous max-length rows: "
                 f"{b['kv_bytes_contiguous'] / 1024:.0f} KiB), {b['prefix_tokens_shared']} prompt tokens shared, "
                 f"{b['refused']} refused" if b.get("kv_cache") == "paged" else ""))
        for i, r in enumerate(results):
            if r.report.get("refused"):
                print(f"prompt {i} {r.report['refused']}")
    else:
        print(f"continuous batching {results[0].report.get('continuous_batching')}")


def cmd_generate(args) -> int:
    import sdx
    from .generate import check_request

    prompts = read_prompts(args)
    opts = sdx.SessionOptions()
    if args.threads:
        opts.intra_op_num_threads = args.threads
    try:
        sess = check_request(
            args.model, prompts, args.max_new_tokens, sampling=args.sampling, top_k=args.top_k, top_p=args.top_p,
            temperature=args.temperature, seed=args.seed, sess_options=opts, kv_bucket=args.kv_bucket or None,
            kv_cache=args.kv_cache)
        kv = dict(kv_cache=args.kv_cache, kv_pages=args.kv_pages, kv_page_size=args.kv_page_size,
                  packed_prefill=not args.no_packed_prefill)
        show = args.json != "-"
        results = []
        if len(prompts) > 1 and args.max_batch > 1:
            results = sdx.generate(sess, prompts, args.max_new_tokens, sampling=args.sampling, top_k=args.top_k,
                                   top_p=args.top_p, temperature=args.temperature, seed=args.seed,
                                   eos_token_id=args.eos_token_id, kv_bucket=args.kv_bucket or None,
                                   max_batch=args.max_batch, **kv)
            if show:
                _print_batch(results)
            prompts = []  # done
        for i, prompt in enumerate(prompts):
            if show:
                print(f"prompt {i}: {','.join(map(str, prompt))}\n  tokens:", end="", flush=True)
            stream = (lambda t: print(f" {t}", end="", flush=True)) if show else None
            r = sdx.generate(sess, prompt, args.max_new_tokens, sampling=args.sampling, top_k=args.top_k,
                             top_p=args.top_p, temperature=args.temperature, seed=args.seed,
                             eos_token_id=args.eos_token_id, stream=stream, kv_bucket=args.kv_bucket or None, **kv)
            if show:
                print("\n" + _report_line(r.report))
            results.append(r)
    except sdx.InvalidArgument as e:  # the model's layout, a token id, a sampling parameter
        raise UsageError(str(e)) from None
    except sdx.ResourceExhausted as e:  # the KV pool: one prompt that cannot get its pages
        raise UsageError(str(e)) from None
    if args.json:
        _write_json(args, results)
    return EXIT_OK


def _write_json(args, results: list) -> None:
    batch = results[0].report.get("batch")
    if batch is not None:  # continuous batching: the batch's figures (its sequences shared every step)
        hit_rate, tokens_per_s = batch["hit_rate"], batch["tokens_per_s"]
    else:
        steps = sum(r.report["decode_steps"] for r in results)
        replayed = [r.report["replayed_steps"] for r in results]
        hit_rate = (sum(replayed) / steps if steps else None) if None not in replayed else None
        tokens_per_s = None
    doc = {"model": args.model, "max_new_tokens": args.max_new_tokens, "sampling": args.sampling,
           "top_k": args.top_k, "top_p": args.top_p, "temperature": args.temperature, "seed": args.seed,
           "threads": args.threads, "kv_bucket": args.kv_bucket or None, "max_batch": args.max_batch,
           "continuous_batching": results[0].report.get("continuous_batching"), "batch": batch,
           "hit_rate": hit_rate, "tokens_per_s": tokens_per_s,
           "prompts": [{"prompt": r.prompt, "tokens": r.tokens,
                        "tokens_per_s": {"prefill": r.report.get("prefill_tokens_per_s"),
                                         "decode": r.report.get("decode_tokens_per_s")},
                        "per_token_latency_us": {"p50": r.report.get("per_token_latency_p50_us"),
                                                 "p90": r.report.get("per_token_latency_p90_us")},
                        "hit_rate": r.report.get("hit_rate", hit_rate), "report": r.report} for r in results]}
    text = json.dumps(doc, indent=1)
    if args.json == "-":
        print(text)
    else:
        with open(args.json, "w") as f:
            f.write(text + "\n")


def add_parser(sub) -> None:
    """Registers `sdx generate` on the CLI's subparsers."""
    from .generate import DEFAULT_KV_BUCKET, DEFAULT_PAGE_SIZE, KV_CACHES, SAMPLINGS

    g = sub.add_parser("generate", help="decode tokens with a decoder in Optimum's with-past ONNX layout",
                       description="Prefill the prompt, then decode one token per step with the KV cache fed back "
                                   "(greedy, top-k or top-p sampling); report tokens/s, per-token latency and the "
                                   "replay hit rate.")
    g.add_argument("model")
    g.add_argument("--prompt-ids", metavar="IDS", help="the prompt as comma-separated token ids, e.g. 1,2,3")
    g.add_argument("--batch-file", metavar="FILE",
                   help="one prompt a line (comma-separated token ids); the prompts decode together with "
                        "continuous batching (see --max-batch)")
    g.add_argument("--max-batch", type=int_at_least(1), default=8, metavar="N",
                   help="sequences decoded together, joining and leaving between steps (default 8; 1: one prompt "
                        "after another)")
    g.add_argument("--max-new-tokens", type=int_at_least(1), default=32, help="tokens to decode (default 32)")
    g.add_argument("--sampling", choices=SAMPLINGS, default="greedy", help="greedy (default), top_k or top_p")
    g.add_argument("--top-k", type=int_at_least(1), help="sample among the k most likely tokens")
    g.add_argument("--top-p", type=positive_float, help="sample among the smallest set reaching probability p (0, 1]")
    g.add_argument("--temperature", type=positive_float, default=1.0, help="divides the logits (default 1.0)")
    g.add_argument("--seed", type=int_at_least(0), help="seed of the sampling's random generator")
    g.add_argument("--eos-token-id", type=int_at_least(0), help="stop a prompt at this token")
    g.add_argument("--threads", type=int_at_least(0), default=0, help="intra-op threads (default: physical cores)")
    g.add_argument("--kv-bucket", type=int_at_least(0), default=DEFAULT_KV_BUCKET, metavar="N",
                   help=f"feed the KV cache in buffers of a multiple of N slots, padded and masked, so decode steps "
                        f"replay one plan per bucket (checked against exact shapes on the first step; default "
                        f"{DEFAULT_KV_BUCKET}; 0: exact shapes)")
    g.add_argument("--kv-cache", choices=KV_CACHES, default="auto",
                   help="auto (default): a paged KV cache when the model's graph allows, else contiguous; paged; "
                        "contiguous (the past fed back as tensors)")
    g.add_argument("--kv-pages", type=int_at_least(1), metavar="N",
                   help="pages in the paged KV pool (default: room for --max-batch sequences of the longest "
                        "request); a sequence that finds none free is refused, the others go on")
    g.add_argument("--kv-page-size", type=int_at_least(1), default=DEFAULT_PAGE_SIZE, metavar="N",
                   help=f"tokens per page of the paged KV cache (default {DEFAULT_PAGE_SIZE})")
    g.add_argument("--no-packed-prefill", action="store_true",
                   help="run each prompt alone at its exact length (default, on the paged cache: a prompt's tokens "
                        "are rows of the running sequences' decode call, calls bucketed by token count, so "
                        "prefills replay whatever the prompt lengths)")
    g.add_argument("--json", metavar="FILE",
                   help="write tokens, tokens/s, hit_rate and per-token latency as JSON ('-': to stdout, instead "
                        "of the text)")
    g.set_defaults(fn=cmd_generate)

