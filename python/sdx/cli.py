"""The `sdx` command line: run, inspect, bench, conformance."""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from .feeds import make_feeds


def _summ(v) -> str:
    if isinstance(v, list):
        return f"sequence of {len(v)}"
    if v is None:
        return "None"
    flat = np.asarray(v).reshape(-1)
    head = ", ".join(str(x) for x in flat[:6].tolist())
    return f"{v.dtype}{list(v.shape)}  [{head}{', ...' if flat.size > 6 else ''}]"


def cmd_run(args) -> int:
    import sdx

    opts = sdx.SessionOptions()
    if args.threads:
        opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = args.inter_op_threads
    t0 = time.perf_counter()
    sess = sdx.InferenceSession(args.model, opts)
    load_ms = (time.perf_counter() - t0) * 1e3
    feeds = make_feeds(sess, args.input, args.seed, args.dim)
    print(f"model: {args.model}  (loaded in {load_ms:.1f} ms)")
    for a in sess.get_inputs():
        print(f"  input  {a.name}: {_summ(feeds[a.name])}")
    for _ in range(args.warmup):
        sess.run(None, feeds)
    times = []
    outs = None
    for _ in range(max(1, args.repeat)):
        t = time.perf_counter()
        outs = sess.run(None, feeds)
        times.append((time.perf_counter() - t) * 1e3)
    for o, v in zip(sess.get_outputs(), outs):
        print(f"  output {o.name}: {_summ(v)}")
    t = np.array(times)
    print(f"latency over {len(times)} runs: p50 {np.percentile(t, 50):.3f} ms, p90 {np.percentile(t, 90):.3f} ms, "
          f"mean {t.mean():.3f} ms, min {t.min():.3f} ms")
    _, rep = sess.run_with_report(None, feeds)
    line = f"execution: {rep['execution_mode']}, plan phase {rep.get('phase', '?')}"
    if rep.get("execution_mode") == "CPU_REPLAY":
        line += (f", {rep['captured_steps']} captured / {rep['gap_steps']} gap / {rep['slot_by_slot_steps']} "
                 f"slot-by-slot steps, {rep['peak_memory_bytes']} bytes frozen")
    elif rep.get("fallback_reason"):
        line += f" ({rep['fallback_reason']})"
    if rep.get("jit_segments"):
        line += (f"; jit: {rep['jit_fused_segments']}/{rep['jit_segments']} segments fused "
                 f"({rep['jit_fused_steps']} steps), {rep['jit_pending_segments']} compiling, "
                 f"{rep['jit_failed_segments']} failed (sdx inspect --jit says why)")
    print(line)
    if args.save_outputs:
        os.makedirs(args.save_outputs, exist_ok=True)
        for o, v in zip(sess.get_outputs(), outs):
            if isinstance(v, np.ndarray):
                np.save(os.path.join(args.save_outputs, f"{o.name}.npy"), v)
    return 0


def cmd_inspect(args) -> int:
    import sdx

    info = sdx.inspect_model(args.model)
    print(f"model: {args.model}")
    print(f"  ir_version {info['ir_version']}, producer '{info['producer']}'")
    print("  opsets: " + ", ".join(f"{d} {v}" for d, v in sorted(info["opsets"].items())))
    print(f"  initializers: {info['initializer_count']} ({info['initializer_bytes']} bytes)")
    print("inputs:")
    for name, ty, shape in info["inputs"]:
        print(f"  {name}: {ty} {shape}")
    print("outputs:")
    for name, ty, shape in info["outputs"]:
        print(f"  {name}: {ty} {shape}")
    hist = info["op_histogram"]
    print(f"ops ({sum(hist.values())} nodes, {len(hist)} types):")
    for op, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:6d}  {op}")
    unsupported = info["unsupported"]
    if unsupported:
        print(f"unsupported ops ({len(unsupported)}):")
        for op, nodes in sorted(unsupported.items()):
            shown = ", ".join(f"'{n}'" for n in nodes[:8])
            print(f"  {op}: {shown}{' ...' if len(nodes) > 8 else ''}")
    else:
        print("unsupported ops: none")
    if args.optimized:
        if unsupported:
            print("optimizer: not available while ops are unsupported")
        else:
            rep = sdx.InferenceSession(args.model).optimization_report()
            print(rep["text"], end="")
            if args.verbose:
                for pass_name, what, node in rep["log"]:
                    print(f"  {pass_name}: {what} (node '{node}')")
    if args.graph:
        print(sdx.InferenceSession(args.model).graph_text())
    if args.plan or args.jit:
        if unsupported:
            print("plan: not available while ops are unsupported")
        else:
            sess = sdx.InferenceSession(args.model)
            info = sess.introspect(make_feeds(sess, args.shape, 0, args.dim))
            # The plan text ends with the JIT section; --jit alone prints just that.
            print(info["text"] if args.plan else info["jit_text"], end="")
            if args.jit:
                st = sess.jit_stats()
                if st["enabled"]:
                    print(f"jit cache: {st['cache_dir']}: {st['disk_cache_hits']} disk cache hits, "
                          f"{st['compiled']} compiled, {st['failed']} failed, {st['compiler_runs']} compiler runs")
    if args.check_replay:
        if unsupported:
            print("replay check: not available while ops are unsupported")
        else:
            sess = sdx.InferenceSession(args.model)
            r = sess.check_replay(make_feeds(sess, args.shape, 0, args.dim))
            print(r["summary"])
            if r["diverged"] or (r["nonfinite"] and not r["reference_nonfinite"]):
                return 1
    return 1 if unsupported else 0


def cmd_compile(args) -> int:
    import sdx

    opts = sdx.SessionOptions()
    opts.optimizer_fp16 = bool(args.fp16)
    opts.optimizer_int8 = bool(args.int8)
    sess = sdx.InferenceSession(args.model, opts)
    sets = [make_feeds(sess, group, args.seed, args.dim) for group in (args.shape_set or [[]])]
    t0 = time.perf_counter()
    data = sdx.compile_bundle(args.model, sets, opts)
    tmp = args.output + ".tmp"
    with open(tmp, "wb") as f:
        f.write(data)
    os.replace(tmp, args.output)  # never a half-written bundle under the final name
    shapes = "; ".join(", ".join(f"{k}{list(v.shape)}" for k, v in feeds.items()) for feeds in sets)
    print(f"wrote {args.output}: {len(data) / 1e6:.1f} MB, {len(sets)} frozen plan(s) ({shapes}) "
          f"in {time.perf_counter() - t0:.2f} s", file=sys.stderr)
    return 0


def cmd_conformance(args) -> int:
    from . import conformance

    return conformance.main(args)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="sdx", description="sdx inference engine")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run a model on given or random inputs and report latency")
    r.add_argument("model")
    r.add_argument("--input", action="append", metavar="NAME=FILE.npy|NAME=DIMS",
                   help="an input from a .npy file, or random with these dims (e.g. x=1x3x224x224); repeatable")
    r.add_argument("--repeat", type=int, default=10, help="timed runs (default 10)")
    r.add_argument("--warmup", type=int, default=1, help="untimed runs first (default 1)")
    r.add_argument("--threads", type=int, default=0, help="intra-op threads (default: physical cores)")
    r.add_argument("--inter-op-threads", type=int, default=1,
                   help="above 1: run independent steps of the plan at the same time (default 1: off)")
    r.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    r.add_argument("--dim", type=int, default=1, help="value for symbolic dims of random inputs (default 1)")
    r.add_argument("--save-outputs", metavar="DIR", help="write each output as DIR/NAME.npy")
    r.set_defaults(fn=cmd_run)

    i = sub.add_parser("inspect", help="inputs, outputs, opsets, op histogram, unsupported ops")
    i.add_argument("model")
    i.add_argument("--graph", action="store_true", help="also print the graph, one node per line")
    i.add_argument("--optimized", action="store_true",
                   help="run the graph optimizer and print the op histogram before and after and the rewrites per pass")
    i.add_argument("-v", "--verbose", action="store_true", help="with --optimized: list every rewrite")
    i.add_argument("--plan", action="store_true",
                   help="run once on random inputs and print the execution plan: slots, liveness, memory layout")
    i.add_argument("--jit", action="store_true",
                   help="run on random inputs and print the kernel JIT's segments: fused, compiling, failed and why")
    i.add_argument("--check-replay", action="store_true",
                   help="run the captured plan and the slot-by-slot reference side by side on random inputs; name "
                        "the first slot that diverges or holds NaN/Inf (exit 1 when replay diverges)")
    i.add_argument("--shape", action="append", metavar="NAME=DIMS|NAME=FILE.npy",
                   help="input dims (or a .npy value) for --plan/--jit/--check-replay; symbolic dims default to --dim")
    i.add_argument("--dim", type=int, default=1, help="value for symbolic dims (default 1)")
    i.set_defaults(fn=cmd_inspect)

    from .bench import add_parser as add_bench_parser

    add_bench_parser(sub)

    from .profiling import add_parser as add_profile_parser

    add_profile_parser(sub)

    k = sub.add_parser("compile", help="compile a model into a .sdx bundle: optimized once, plans frozen for the "
                                       "given shapes, so a new process replays from its second call")
    k.add_argument("model")
    k.add_argument("-o", "--output", required=True, help="the bundle to write (conventionally MODEL.sdx)")
    k.add_argument("--shape", action="append", metavar="NAME=DIMS|NAME=FILE.npy", dest="shape_group",
                   help="an input's dims (or a .npy value) for the warmup; inputs not given get random values with "
                        "symbolic dims set to --dim")
    k.add_argument("--next-shape-set", action="append_const", const=None, dest="shape_group",
                   help="start another input signature: the --shape options after it freeze a second plan")
    k.add_argument("--fp16", action="store_true", help="float16 weights (as SessionOptions.optimizer_fp16)")
    k.add_argument("--int8", action="store_true", help="int8 weights (as SessionOptions.optimizer_int8)")
    k.add_argument("--seed", type=int, default=0, help="seed for random inputs")
    k.add_argument("--dim", type=int, default=1, help="value for symbolic dims (default 1)")
    k.set_defaults(fn=cmd_compile)

    c = sub.add_parser("conformance", help="run the ONNX backend node test suite of the installed onnx package")
    c.add_argument("--json", metavar="FILE", help="write each case's status and failure reason as JSON")
    c.add_argument("--filter", metavar="REGEX", help="only cases whose name matches")
    c.add_argument("--data", metavar="DIR", help="node test data folder (default: shipped or generated)")
    c.add_argument("--jobs", type=int, default=os.cpu_count() or 2, help="worker processes")
    c.add_argument("--timeout", type=float, default=60.0, help="seconds before a case counts as hung")
    c.add_argument("-v", "--verbose", action="store_true", help="print every case")
    c.set_defaults(fn=cmd_conformance)

    args = p.parse_args(argv)
    if args.command == "compile":  # --shape groups split at each --next-shape-set
        groups, cur = [], []
        for item in args.shape_group or []:
            if item is None:
                groups.append(cur)
                cur = []
            else:
                cur.append(item)
        args.shape_set = groups + [cur]
    try:
        return args.fn(args)
    except Exception as e:  # clean one-line errors for engine failures
        import sdx

        if isinstance(e, sdx.SdxError):
            print(f"sdx {args.command}: error: {e}", file=sys.stderr)
            return 2
        raise


if __name__ == "__main__":
    sys.exit(main())
