"""The `sdx` command line: run, inspect, compile, bench, profile, conformance, serve, generate.

Exit codes (_cli_support): 0 ok, 1 a check failed, 2 usage or input error (one line on stderr,
`sdx: error: ...`), 3 internal error (a bug: the traceback is printed).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np

from ._cli_support import (EXIT_CHECK_FAILED, EXIT_INTERNAL, EXIT_OK, EXIT_USAGE, Progress, UsageError,
                           check_input_specs, check_model_path, clean_message, int_at_least, one_line,
                           positive_float)
from .feeds import make_feeds


def _summ(v) -> str:
    if isinstance(v, list):
        return f"sequence of {len(v)}"
    if v is None:
        return "None"
    flat = np.asarray(v).reshape(-1)
    head = ", ".join(str(x) for x in flat[:6].tolist())
    return f"{v.dtype}{list(v.shape)}  [{head}{', ...' if flat.size > 6 else ''}]"


def _describe(name: str, v) -> dict:
    """A value's name, dtype and shape for --json (a sequence: its length and elements)."""
    if isinstance(v, list):
        return {"name": name, "type": "sequence", "length": len(v),
                "elements": [_describe(f"{name}[{i}]", e) for i, e in enumerate(v)]}
    if v is None:
        return {"name": name, "type": "none"}
    v = np.asarray(v)
    return {"name": name, "type": "tensor", "dtype": str(v.dtype), "shape": list(v.shape)}


def _version_text() -> str:
    """`sdx <version>`, with the native module's build info (build id, compiler, CPU kernels) when it has one."""
    from . import __version__, _sdx

    text = f"sdx {__version__}"
    build_info = getattr(_sdx, "build_info", None)
    try:
        info = one_line(build_info() if callable(build_info) else build_info or "")
    except Exception:  # an informational extra: never let it break --version
        info = ""
    info = info.removeprefix("Build Info:").strip()
    if info.startswith(text):  # "sdx 0.1.0, build id ..., gcc ..., CPU kernels: ..."
        info = info[len(text):].lstrip(",; ")
    return f"{text} ({info})" if info else text


# ---- sdx run

def _load_session(args):
    import sdx

    opts = sdx.SessionOptions()
    if args.threads:
        opts.intra_op_num_threads = args.threads
    opts.inter_op_num_threads = args.inter_op_threads
    t0 = time.perf_counter()
    sess = sdx.InferenceSession(args.model, opts)
    return sess, (time.perf_counter() - t0) * 1e3


def _timed_runs(sess, feeds, args) -> tuple[list, list]:
    """The outputs of the last timed run and the latency of each (ms), after args.warmup untimed runs."""
    for _ in range(args.warmup):
        sess.run(None, feeds)
    times, outs = [], None
    with Progress("sdx run", args.repeat, "runs", enabled=not args.json, delay_s=1.0) as bar:
        for i in range(args.repeat):
            t = time.perf_counter()
            outs = sess.run(None, feeds)
            times.append((time.perf_counter() - t) * 1e3)
            bar.update(i + 1)
    return outs, times


def _execution_line(rep: dict) -> str:
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
    return line


def _print_run(args, sess, feeds, outs, times, load_ms, rep) -> None:
    print(f"model: {args.model}  (loaded in {load_ms:.1f} ms)")
    for a in sess.get_inputs():
        print(f"  input  {a.name}: {_summ(feeds[a.name])}")
    for o, v in zip(sess.get_outputs(), outs):
        print(f"  output {o.name}: {_summ(v)}")
    t = np.array(times)
    print(f"latency over {len(times)} runs: p50 {np.percentile(t, 50):.3f} ms, p90 {np.percentile(t, 90):.3f} ms, "
          f"mean {t.mean():.3f} ms, min {t.min():.3f} ms")
    print(_execution_line(rep))


def _run_json(args, sess, feeds, outs, times, load_ms, rep) -> dict:
    t = np.array(times)
    return {
        "model": args.model,
        "load_ms": load_ms,
        "inputs": [_describe(a.name, feeds[a.name]) for a in sess.get_inputs()],
        "outputs": [_describe(o.name, v) for o, v in zip(sess.get_outputs(), outs)],
        "warmup": args.warmup,
        "latency_ms": {"runs": len(times), "p50": float(np.percentile(t, 50)), "p90": float(np.percentile(t, 90)),
                       "mean": float(t.mean()), "min": float(t.min()), "max": float(t.max())},
        "execution": rep,
        "saved_outputs": args.save_outputs,
    }


def cmd_run(args) -> int:
    sess, load_ms = _load_session(args)
    feeds = make_feeds(sess, args.input, args.seed, args.dim)
    outs, times = _timed_runs(sess, feeds, args)
    _, rep = sess.run_with_report(None, feeds)
    if args.save_outputs:
        os.makedirs(args.save_outputs, exist_ok=True)
        for o, v in zip(sess.get_outputs(), outs):
            if isinstance(v, np.ndarray):
                np.save(os.path.join(args.save_outputs, f"{o.name}.npy"), v)
    if args.json:
        print(json.dumps(_run_json(args, sess, feeds, outs, times, load_ms, rep), indent=1))
    else:
        _print_run(args, sess, feeds, outs, times, load_ms, rep)
    return EXIT_OK


# ---- sdx inspect: each part prints its text (unless --json) and adds its figures to `doc`

def _say(args, text: str = "", end: str = "\n") -> None:
    if not args.json:
        print(text, end=end)


def _inspect_summary(args, info: dict) -> dict:
    _say(args, f"model: {args.model}")
    _say(args, f"  ir_version {info['ir_version']}, producer '{info['producer']}'")
    _say(args, "  opsets: " + ", ".join(f"{d} {v}" for d, v in sorted(info["opsets"].items())))
    _say(args, f"  initializers: {info['initializer_count']} ({info['initializer_bytes']} bytes)")
    for kind in ("inputs", "outputs"):
        _say(args, f"{kind}:")
        for name, ty, shape in info[kind]:
            _say(args, f"  {name}: {ty} {shape}")
    hist = info["op_histogram"]
    _say(args, f"ops ({sum(hist.values())} nodes, {len(hist)} types):")
    for op, n in sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])):
        _say(args, f"  {n:6d}  {op}")
    unsupported = info["unsupported"]
    if unsupported:
        _say(args, f"unsupported ops ({len(unsupported)}):")
        for op, nodes in sorted(unsupported.items()):
            shown = ", ".join(f"'{n}'" for n in nodes[:8])
            _say(args, f"  {op}: {shown}{' ...' if len(nodes) > 8 else ''}")
    else:
        _say(args, "unsupported ops: none")
    doc = {"model": args.model, **info, "node_count": sum(hist.values())}
    for kind in ("inputs", "outputs"):
        doc[kind] = [{"name": n, "type": t, "shape": s} for n, t, s in info[kind]]
    return doc


def _inspect_optimized(args, unsupported: bool, doc: dict) -> None:
    import sdx

    if unsupported:
        _say(args, "optimizer: not available while ops are unsupported")
        doc["optimized"] = {"available": False, "reason": "ops are unsupported"}
        return
    rep = sdx.InferenceSession(args.model).optimization_report()
    _say(args, rep["text"], end="")
    if args.verbose:
        for pass_name, what, node in rep["log"]:
            _say(args, f"  {pass_name}: {what} (node '{node}')")
    doc["optimized"] = rep


def _inspect_plan(args, unsupported: bool, doc: dict) -> None:
    import sdx

    if unsupported:
        _say(args, "plan: not available while ops are unsupported")
        doc["plan" if args.plan else "jit"] = {"available": False, "reason": "ops are unsupported"}
        return
    sess = sdx.InferenceSession(args.model)
    info = sess.introspect(make_feeds(sess, args.shape, 0, args.dim))
    # The plan text ends with the JIT section; --jit alone prints just that.
    _say(args, info["text"] if args.plan else info["jit_text"], end="")
    if args.plan:
        doc["plan"] = info
    if args.jit:
        st = sess.jit_stats()
        if st["enabled"]:
            _say(args, f"jit cache: {st['cache_dir']}: {st['disk_cache_hits']} disk cache hits, "
                       f"{st['compiled']} compiled, {st['failed']} failed, {st['compiler_runs']} compiler runs")
        doc["jit"] = {"text": info["jit_text"], "segments": info.get("jit_segments"), "stats": st}


def _inspect_check_replay(args, unsupported: bool, doc: dict) -> bool:
    """True when the replay check failed (diverged, or NaN/Inf the reference does not have)."""
    import sdx

    if unsupported:
        _say(args, "replay check: not available while ops are unsupported")
        doc["check_replay"] = {"available": False, "reason": "ops are unsupported"}
        return False
    sess = sdx.InferenceSession(args.model)
    r = sess.check_replay(make_feeds(sess, args.shape, 0, args.dim))
    _say(args, r["summary"])
    failed = bool(r["diverged"] or (r["nonfinite"] and not r["reference_nonfinite"]))
    doc["check_replay"] = {**r, "failed": failed}
    return failed


def _inspect_loops(args, unsupported: bool, doc: dict) -> bool:
    """Runs once with the loop analysis on and prints each Loop's report; True when the run failed (a guard
    stopped a loop, or any other error, whose message is printed too)."""
    import sdx

    if unsupported:
        _say(args, "loops: not available while ops are unsupported")
        doc["loops"] = {"available": False, "reason": "ops are unsupported"}
        return False
    opts = sdx.SessionOptions()
    opts.loop_analysis = True
    if args.max_loop_iterations is not None:
        opts.max_loop_iterations = args.max_loop_iterations
    if args.max_loop_seconds is not None:
        opts.max_loop_seconds = args.max_loop_seconds
    sess = sdx.InferenceSession(args.model, opts)
    feeds = make_feeds(sess, args.shape, 0, args.dim)
    error = None
    try:
        sess.run(None, feeds)
    except Exception as e:  # the guard's error (or any other): reported, the reports made before it kept
        error = one_line(str(e))
    reports = sess.loop_reports()
    _say(args, f"loops: {len(reports)} Loop execution(s) analysed")
    for r in reports:
        _say(args, r["text"], end="")
    if error:
        _say(args, f"the run failed: {error}")
    doc["loops"] = {"reports": reports, "error": error}
    return error is not None


def _inspect_control_flow(args, unsupported: bool, doc: dict) -> bool:
    """The frame tree (--control-flow) and its drawing (--visualize): runs three times on random inputs (with
    the loop analysis on, for the plots) so that each body says whether it replayed; True when a run failed."""
    import sdx

    from . import control_flow

    try:
        import onnx
    except ImportError:
        raise UsageError("--control-flow and --visualize read the model with the onnx package: pip install onnx") from None
    tree = control_flow.frame_tree(onnx.load(args.model, load_external_data=False))
    error, loop_reports = None, []
    if unsupported:
        error = "not run: ops are unsupported"
    else:
        opts = sdx.SessionOptions()
        opts.loop_analysis = True
        sess = sdx.InferenceSession(args.model, opts)
        feeds = make_feeds(sess, args.shape, 0, args.dim)
        try:
            for _ in range(3):  # warmup, shapes frozen and captured, then a replay: each body's lifecycle shows
                sess.run(None, feeds)
        except Exception as e:  # reported: the frames and the reports made before the error are still shown
            error = one_line(str(e))
        control_flow.attach_reports(tree, sess.subgraph_reports())
        loop_reports = sess.loop_reports()
    if args.control_flow:
        _say(args, control_flow.format_tree(tree))
        if error:
            _say(args, f"the run failed: {error}")
    if args.visualize:
        text = control_flow.to_dot(tree) if args.visualize.endswith(".dot") else \
            control_flow.to_html(tree, loop_reports, title=f"sdx control flow: {os.path.basename(args.model)}")
        with open(args.visualize, "w") as f:
            f.write(text)
        _say(args, f"wrote {args.visualize}")
    doc["control_flow"] = {"frames": control_flow.to_json(tree), "loops": loop_reports, "error": error}
    return error is not None and not unsupported


def cmd_inspect(args) -> int:
    import sdx

    info = sdx.inspect_model(args.model)
    doc = _inspect_summary(args, info)
    unsupported = bool(info["unsupported"])
    if args.optimized:
        _inspect_optimized(args, unsupported, doc)
    if args.graph:
        doc["graph"] = sdx.InferenceSession(args.model).graph_text()
        _say(args, doc["graph"])
    if args.plan or args.jit:
        _inspect_plan(args, unsupported, doc)
    failed = args.check_replay and _inspect_check_replay(args, unsupported, doc)
    if args.loops:
        failed = _inspect_loops(args, unsupported, doc) or failed
    if args.control_flow or args.visualize:
        failed = _inspect_control_flow(args, unsupported, doc) or failed
    if args.json:
        print(json.dumps(doc, indent=1))
    return EXIT_CHECK_FAILED if failed or unsupported else EXIT_OK


# ---- sdx compile

def cmd_compile(args) -> int:
    import sdx

    folder = os.path.dirname(os.path.abspath(args.output))
    if not os.path.isdir(folder):
        raise UsageError(f"cannot write the bundle '{args.output}': no folder '{folder}'")
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
    return EXIT_OK


def cmd_conformance(args) -> int:
    from . import conformance

    return conformance.main(args)


# ---- the parser

def _add_run(sub) -> None:
    r = sub.add_parser("run", help="run a model on given or random inputs and report latency")
    r.add_argument("model")
    r.add_argument("--input", action="append", metavar="NAME=FILE.npy|NAME=DIMS",
                   help="an input from a .npy file, or random with these dims (e.g. x=1x3x224x224); repeatable")
    r.add_argument("--repeat", type=int_at_least(1), default=10, help="timed runs, at least 1 (default 10)")
    r.add_argument("--warmup", type=int_at_least(0), default=1, help="untimed runs first (default 1)")
    r.add_argument("--threads", type=int_at_least(0), default=0, help="intra-op threads (default: physical cores)")
    r.add_argument("--inter-op-threads", type=int_at_least(0), default=1,
                   help="above 1: run independent steps of the plan at the same time (default 1: off)")
    r.add_argument("--seed", type=int_at_least(0), default=0, help="seed for random inputs")
    r.add_argument("--dim", type=int_at_least(0), default=1,
                   help="value for symbolic dims of random inputs (default 1)")
    r.add_argument("--save-outputs", metavar="DIR", help="write each output as DIR/NAME.npy")
    r.add_argument("--json", action="store_true",
                   help="print the inputs' and outputs' names, dtypes and shapes, the latency summary and the "
                        "execution report as JSON instead of text")
    r.set_defaults(fn=cmd_run)


def _add_inspect(sub) -> None:
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
    i.add_argument("--loops", action="store_true",
                   help="run once with loop_analysis on and print each Loop's report: every carried value's "
                        "evolution and the termination prediction (exit 1 when the run fails, e.g. a loop guard)")
    i.add_argument("--control-flow", action="store_true",
                   help="print the frame tree: each If/Loop/Scan body, nested as in the model, the values it reads "
                        "from outer scopes, and (after three runs on random inputs) whether it runs as a captured plan "
                        "or interpreted, and how its calls replayed")
    i.add_argument("--visualize", metavar="FILE.html|FILE.dot",
                   help="draw the graph with frames as clusters: HTML (nested frames, and a plot of each loop "
                        "variable across iterations) or Graphviz DOT")
    i.add_argument("--max-loop-iterations", type=int_at_least(1), metavar="N",
                   help="with --loops: SessionOptions.max_loop_iterations (default 2^24)")
    i.add_argument("--max-loop-seconds", type=positive_float, metavar="S",
                   help="with --loops: SessionOptions.max_loop_seconds (default: no limit)")
    i.add_argument("--shape", "--input", action="append", dest="shape", metavar="NAME=DIMS|NAME=FILE.npy",
                   help="input dims (or a .npy value) for --plan/--jit/--check-replay/--loops/--control-flow; symbolic dims "
                        "default to --dim")
    i.add_argument("--dim", type=int_at_least(0), default=1, help="value for symbolic dims (default 1)")
    i.add_argument("--json", action="store_true", help="print everything as one JSON object instead of text")
    i.set_defaults(fn=cmd_inspect)


def _add_compile(sub) -> None:
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
    k.add_argument("--seed", type=int_at_least(0), default=0, help="seed for random inputs")
    k.add_argument("--dim", type=int_at_least(0), default=1, help="value for symbolic dims (default 1)")
    k.set_defaults(fn=cmd_compile)


def _add_conformance(sub) -> None:
    c = sub.add_parser("conformance", help="run the ONNX backend node test suite of the installed onnx package",
                       description="Run the ONNX backend node test suite. Exit 0 when every case passed or was "
                                   "skipped, 1 when any failed (0 with --allow-failures), 2 on a usage error.")
    c.add_argument("--json", metavar="FILE",
                   help="write each case's status and failure reason as JSON ('-': to stdout, instead of the text)")
    c.add_argument("--filter", metavar="REGEX", help="only cases whose name matches")
    c.add_argument("--data", metavar="DIR", help="node test data folder (default: shipped or generated)")
    c.add_argument("--jobs", type=int_at_least(1), default=os.cpu_count() or 2, help="worker processes")
    c.add_argument("--timeout", type=positive_float, default=60.0, help="seconds before a case counts as hung")
    c.add_argument("--allow-failures", action="store_true",
                   help="exit 0 even when cases fail (for callers that judge the report themselves, e.g. by pass "
                        "rate)")
    c.add_argument("--via", choices=("native", "python"), default="native",
                   help="run each case through the native runner (default) or through sdx.InferenceSession with "
                        "onnx's own readers (read-only arrays), as a Python user would")
    c.add_argument("-v", "--verbose", action="store_true", help="print every case")
    c.set_defaults(fn=cmd_conformance)


class _VersionAction(argparse.Action):
    """--version on one line (argparse's own version action wraps it to the terminal width)."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0, help=help)

    def __call__(self, parser, namespace, values, option_string=None):
        print(_version_text())
        parser.exit()


def build_parser() -> argparse.ArgumentParser:
    from .bench import add_parser as add_bench_parser
    from .generate_cli import add_parser as add_generate_parser
    from .profiling import add_parser as add_profile_parser
    from .serve import add_parser as add_serve_parser

    p = argparse.ArgumentParser(
        prog="sdx", description="sdx inference engine",
        epilog="exit status: 0 ok, 1 a check failed (conformance failures, a bench --compare regression, "
               "unsupported ops or a replay divergence in inspect), 2 usage or input error, 3 internal error")
    p.add_argument("--version", action=_VersionAction, help="print the version and build information, then exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    _add_run(sub)
    _add_inspect(sub)
    add_bench_parser(sub)
    add_profile_parser(sub)
    _add_compile(sub)
    _add_conformance(sub)
    add_serve_parser(sub)
    add_generate_parser(sub)
    return p


def _split_shape_sets(args) -> None:
    """compile: --shape groups split at each --next-shape-set."""
    groups, cur = [], []
    for item in args.shape_group or []:
        if item is None:
            groups.append(cur)
            cur = []
        else:
            cur.append(item)
    args.shape_set = groups + [cur]


def _check_inputs(args) -> None:
    """The model file and the .npy inputs named on the command line, before any work starts."""
    if getattr(args, "model", None) is not None:
        check_model_path(args.model)
    for attr in ("input", "shape", "shape_group"):
        check_input_specs(getattr(args, attr, None))


def _error(message) -> int:
    print(f"sdx: error: {clean_message(message)}", file=sys.stderr)
    return EXIT_USAGE


def _dispatch(args) -> int:
    import sdx

    try:
        _check_inputs(args)
        return args.fn(args)
    except UsageError as e:
        return _error(e)
    except sdx.SdxError as e:  # the engine refused the model or the inputs
        return _error(e)
    except SystemExit as e:  # feeds and older code raise SystemExit("message") for input errors
        if isinstance(e.code, str):
            return _error(e.code)
        raise
    except BrokenPipeError:
        raise
    except OSError as e:  # a file that cannot be read or written
        where = f" '{e.filename}'" if e.filename else ""
        return _error(f"{e.strerror or e}{':' if where else ''}{where}")


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)  # usage errors: argparse's usage line + one line, exit 2
    if args.command == "compile":
        _split_shape_sets(args)
    try:
        return _dispatch(args)
    except KeyboardInterrupt:
        print("sdx: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:  # e.g. `sdx inspect MODEL | head`
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except Exception as e:
        import traceback

        traceback.print_exc()
        print(f"sdx: internal error: {one_line(e)} (a bug in sdx; please report it with the traceback above)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
