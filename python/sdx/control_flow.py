"""Control flow explained: the frame tree of a model (which subgraph sits in which node), the values each body
reads from outer scopes (the explicit cross-frame dependencies), and, from a session, whether each body runs
as a captured plan or is interpreted and how its calls replayed. Used by `sdx inspect --control-flow` and
`--visualize FILE.html|FILE.dot`.

    tree = frame_tree(onnx.load("model.onnx"))          # static: frames, nodes, outer reads
    attach_reports(tree, sess.subgraph_reports())       # runtime: plan / interpreted, calls, replays
    print(format_tree(tree))
    open("cf.html", "w").write(to_html(tree, sess.loop_reports()))

A frame is a dict: path ("main", "main/If_3.then_branch", ...), owner, owner_op, attribute, body, nodes
[{name, op, inputs, outputs}], outer_reads [{name, frame}] (values read here, or by frames nested here, that
an enclosing frame defines), children, and after attach_reports a "runtime" dict (the subgraph report) or
None. Unnamed nodes get sdx's names (OpType_index within their graph), so frames match the session's reports.
"""
from __future__ import annotations

import html
import json
from typing import Any

CONTROL_ATTRS = ("then_branch", "else_branch", "body")


def _node_name(node, index: int) -> str:
    return node.name or f"{node.op_type}_{index}"


def frame_tree(model) -> dict:
    """The frames of an onnx.ModelProto, root first (see the module's docstring)."""
    return _frame(model.graph, "main", None, None, None, [])


def _defined(graph) -> set:
    names = {v.name for v in graph.input} | {t.name for t in graph.initializer}
    names |= {t.name for t in graph.sparse_initializer}
    for n in graph.node:
        names.update(o for o in n.output if o)
    return names


def _frame(graph, path: str, owner, owner_op, attribute, scopes: list) -> dict:
    local = _defined(graph)
    scopes = scopes + [(path, local)]
    frame: dict[str, Any] = {"path": path, "owner": owner, "owner_op": owner_op, "attribute": attribute,
                             "body": graph.name, "nodes": [], "outer_reads": [], "children": []}
    reads: list[str] = []
    for i, node in enumerate(graph.node):
        name = _node_name(node, i)
        frame["nodes"].append({"name": name, "op": node.op_type, "inputs": [x for x in node.input if x],
                               "outputs": [o for o in node.output if o]})
        reads.extend(x for x in node.input if x)
        for attr in node.attribute:
            subgraphs = [attr.g] if attr.HasField("g") else list(attr.graphs)
            for k, g in enumerate(subgraphs):
                label = attr.name if len(subgraphs) == 1 else f"{attr.name}[{k}]"
                child = _frame(g, f"{path}/{name}.{label}", name, node.op_type, label, scopes)
                frame["children"].append(child)
                reads.extend(r["name"] for r in child["outer_reads"])  # what passes through this frame
    reads.extend(o.name for o in graph.output)
    seen = set()
    for r in reads:
        if r in local or r in seen:
            continue
        seen.add(r)
        where = next((p for p, names in reversed(scopes[:-1]) if r in names), None)
        frame["outer_reads"].append({"name": r, "frame": where or "(undefined)"})
    return frame


def attach_reports(frame: dict, reports: list | None) -> None:
    """Joins a session's subgraph_reports() to the frames (by owner and attribute), recursively. A frame with
    no report gets runtime None: interpreted with its parent, subgraph plans off, or its node rewritten by the
    optimizer (an If on a constant condition is inlined)."""
    by_key = {(r["owner"], r["attribute"]): r for r in (reports or [])}
    for child in frame["children"]:
        r = by_key.get((child["owner"], child["attribute"]))
        child["runtime"] = r
        attach_reports(child, r["nested"] if r else None)


def _state(frame: dict) -> str:
    r = frame.get("runtime")
    if r is None:
        return "no plan of its own (interpreted with its parent, subgraph_plans off, or rewritten by the optimizer)"
    if not r["plan"]:
        return f"interpreted: {r['why']}"
    s = f"captured plan: {r['calls']} call(s), {r['replays']} replayed, {r['new_plans']} new plan(s)"
    if r["calls"]:
        s += f"; last call {r['captured_steps']} captured step(s), {r['gap_steps']} gap step(s)"
    if r.get("last_fallback"):
        s += f"; last call not replayed: {r['last_fallback']}"
    if r.get("rewrites"):
        s += "; optimizer: " + ", ".join(f"{p} x{n}" for p, n in r["rewrites"].items())
    return s


def format_tree(frame: dict, indent: str = "") -> str:
    """The frame tree as text: one line per frame, then its state and its outer reads."""
    lines = []
    if frame["owner"] is None:
        lines.append(f"main graph '{frame['body']}': {len(frame['nodes'])} node(s)")
    else:
        lines.append(f"{indent}{frame['owner_op']} '{frame['owner']}'.{frame['attribute']} (subgraph "
                     f"'{frame['body']}'): {len(frame['nodes'])} node(s); {_state(frame)}")
        if frame["outer_reads"]:
            reads = ", ".join(f"{r['name']} <- {r['frame']}" for r in frame["outer_reads"])
            lines.append(f"{indent}  reads from outer scopes: {reads}")
    for child in frame["children"]:
        lines.append(format_tree(child, indent + "  "))
    return "\n".join(lines)


def to_json(frame: dict) -> dict:
    """The tree without node lists (for the diagnostics JSON): frames, states and outer reads."""
    out = {k: v for k, v in frame.items() if k not in ("nodes", "children")}
    out["node_count"] = len(frame["nodes"])
    out["children"] = [to_json(c) for c in frame["children"]]
    return out


# ---- drawings

def _dot_id(frame_path: str, name: str) -> str:
    return json.dumps(f"{frame_path}::{name}")


def to_dot(frame: dict) -> str:
    """Graphviz DOT: every frame a cluster (labelled with its state), nodes as boxes, data edges within a frame,
    dashed edges for cross-frame reads (from the outer producer to the reading node)."""
    out = ["digraph sdx_control_flow {", "  compound=true; rankdir=TB; node [shape=box, fontsize=10];"]
    producers: dict[tuple, str] = {}

    def index(f: dict) -> None:
        for n in f["nodes"]:
            for o in n["outputs"]:
                producers[(f["path"], o)] = _dot_id(f["path"], n["name"])
        for c in f["children"]:
            index(c)

    def emit(f: dict, depth: int) -> None:
        pad = "  " * (depth + 1)
        if f["owner"] is not None:
            label = f"{f['owner_op']} '{f['owner']}'.{f['attribute']}\n{_state(f)}"
            out.append(f"{pad}subgraph {json.dumps('cluster_' + f['path'])} {{")
            out.append(f"{pad}  label={json.dumps(label)}; style=rounded; color="
                       f"{'darkgreen' if (f.get('runtime') or {}).get('plan') else 'gray40'};")
        outer = {r["name"]: r["frame"] for r in f["outer_reads"]}
        for n in f["nodes"]:
            out.append(f"{pad}  {_dot_id(f['path'], n['name'])} [label={json.dumps(n['op'] + chr(10) + n['name'])}];")
        for n in f["nodes"]:
            for x in n["inputs"]:
                src = producers.get((f["path"], x))
                if src:
                    out.append(f"{pad}  {src} -> {_dot_id(f['path'], n['name'])};")
                elif x in outer and (outer[x], x) in producers:
                    out.append(f"{pad}  {producers[(outer[x], x)]} -> {_dot_id(f['path'], n['name'])} "
                               f"[style=dashed, color=blue, label={json.dumps(x)}];")
        for c in f["children"]:
            emit(c, depth + 1)
        if f["owner"] is not None:
            out.append(f"{pad}}}")

    index(frame)
    emit(frame, 0)
    out.append("}")
    return "\n".join(out) + "\n"


def _sparkline(xs: list, ys: list, width: int = 360, height: int = 90) -> str:
    """An inline SVG line plot of ys over xs (non-finite values dropped), with its range as text."""
    pts = [(x, y) for x, y in zip(xs, ys) if isinstance(y, (int, float)) and y == y and abs(y) != float("inf")]
    if len(pts) < 2:
        return "<em>fewer than two finite samples</em>"
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    sx = (width - 10) / ((x1 - x0) or 1)
    sy = (height - 10) / ((y1 - y0) or 1)
    path = " ".join(f"{5 + (x - x0) * sx:.1f},{height - 5 - (y - y0) * sy:.1f}" for x, y in pts)
    return (f'<svg width="{width}" height="{height}" class="plot"><polyline fill="none" stroke="#1f6feb" '
            f'stroke-width="1.5" points="{path}"/></svg><div class="range">iterations {x0}..{x1}; '
            f'values {y0:.6g}..{y1:.6g}</div>')


def _frame_html(f: dict) -> str:
    r = f.get("runtime")
    cls = "frame plan" if r and r["plan"] else "frame"
    if f["owner"] is None:
        head = f"main graph '{html.escape(f['body'])}'"
    else:
        head = (f"{html.escape(f['owner_op'])} '{html.escape(f['owner'])}'.{html.escape(f['attribute'])} "
                f"<span class=state>{html.escape(_state(f))}</span>")
    parts = [f'<div class="{cls}"><div class=head>{head}</div>']
    if f["outer_reads"]:
        reads = ", ".join(f"<code>{html.escape(x['name'])}</code> &larr; {html.escape(x['frame'])}"
                          for x in f["outer_reads"])
        parts.append(f"<div class=reads>reads from outer scopes: {reads}</div>")
    chips = "".join(f'<span class=node title="{html.escape(n["name"])}">{html.escape(n["op"])}</span>'
                    for n in f["nodes"])
    parts.append(f"<div class=nodes>{chips}</div>")
    parts.extend(_frame_html(c) for c in f["children"])
    parts.append("</div>")
    return "".join(parts)


def _loops_html(loop_reports: list) -> str:
    if not loop_reports:
        return ""
    parts = ["<h2>Loop variables across iterations</h2>"]
    last = {r["node"]: r for r in loop_reports}  # each Loop's latest execution
    for r in last.values():
        parts.append(f"<div class=loop><div class=head>Loop '{html.escape(str(r['node']))}': {r['iterations']} "
                     f"iteration(s); {html.escape(r['termination']['verdict'])}</div>"
                     f"<pre>{html.escape(r['text'])}</pre><div class=plots>")
        xs = r.get("sample_iterations", [])
        for v in r["variables"]:
            if not v.get("traced", True):
                continue
            kind = v["evolution"]["kind"]
            parts.append(f"<div class=var><b>{html.escape(v['name'])}</b> ({html.escape(v['field'])}): {kind}"
                         f"{_sparkline(xs, v.get('series', []))}</div>")
        parts.append("</div></div>")
    return "".join(parts)


_CSS = """body{font-family:sans-serif;margin:1.5em}.frame{border:2px solid #999;border-radius:8px;padding:.5em;
margin:.5em 0 .5em 1.2em}.frame.plan{border-color:#2da44e}.head{font-weight:bold}.state{font-weight:normal;
color:#555}.reads{color:#0550ae;margin:.3em 0}.node{display:inline-block;border:1px solid #bbb;border-radius:4px;
padding:1px 5px;margin:2px;font-size:12px;background:#f6f8fa}.loop{border:1px solid #ccc;padding:.5em;margin:.5em 0}
.plots{display:flex;flex-wrap:wrap;gap:1em}.plot{border:1px solid #eee}.range{font-size:11px;color:#666}
pre{font-size:12px;background:#f6f8fa;padding:.5em}"""


def to_html(frame: dict, loop_reports: list | None = None, title: str = "sdx control flow") -> str:
    """One self-contained HTML page: the frames as nested boxes (green: a captured plan of its own) with their
    nodes and cross-frame reads, then, for an analysed run, a plot of each loop variable across iterations."""
    return (f"<!doctype html><html><head><meta charset=utf-8><title>{html.escape(title)}</title>"
            f"<style>{_CSS}</style></head><body><h1>{html.escape(title)}</h1>"
            f"<p>Frames nest as the model's subgraphs do. Green: the body runs as a captured plan of its own; gray: "
            f"interpreted node by node. Blue: values a body reads from an enclosing frame.</p>"
            f"{_frame_html(frame)}{_loops_html(loop_reports or [])}</body></html>\n")
