"""`sdx inspect --control-flow` and `--visualize` (python/sdx/control_flow.py): the frame tree of a Loop whose
body holds an If, the values each body reads from outer scopes (a value of the main graph read by the nested If
passes through the Loop's body), each body's state after runs (a captured plan that replayed), the JSON, an
HTML page with a plot per loop variable, and Graphviz DOT with frames as clusters."""
import json
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx
from sdx import control_flow

OPSET = [helper.make_opsetid("", 17)]


def nested_model() -> onnx.ModelProto:
    """Loop 'steps' times: v = If(v_sum > 0, v * scale, v + shift) with scale from the main graph (read by the
    If's then-branch, two frames down) and shift made in the body (read by the else-branch, one frame down)."""
    then_g = helper.make_graph([helper.make_node("Mul", ["v_in", "scale"], ["t"], name="mul")], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Add", ["v_in", "shift"], ["e"], name="add")], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    body = helper.make_graph(
        [helper.make_node("ReduceSum", ["v_in"], ["s"], keepdims=0, name="sum"),
         helper.make_node("Greater", ["s", "zero"], ["pos"], name="gt"),
         helper.make_node("Neg", ["half"], ["shift"], name="neg"),
         helper.make_node("If", ["pos"], ["v_out"], then_branch=then_g, else_branch=else_g, name="choose"),
         helper.make_node("Identity", ["cond_in"], ["cond_out"], name="keep")],
        "step",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [3])])
    g = helper.make_graph(
        [helper.make_node("Loop", ["steps", "", "v0"], ["v"], body=body, name="loop")], "nested",
        [helper.make_tensor_value_info("steps", TensorProto.INT64, []),
         helper.make_tensor_value_info("v0", TensorProto.FLOAT, [3])],
        [helper.make_tensor_value_info("v", TensorProto.FLOAT, [3])],
        [numpy_helper.from_array(np.float32(0.9), "scale"), numpy_helper.from_array(np.float32(0), "zero"),
         numpy_helper.from_array(np.float32(0.5), "half")])
    return helper.make_model(g, opset_imports=OPSET)


def test_frame_tree_nests_bodies_and_resolves_outer_reads():
    tree = control_flow.frame_tree(nested_model())
    (loop,) = tree["children"]
    assert (loop["path"], loop["owner"], loop["owner_op"], loop["attribute"]) == ("main/loop.body", "loop", "Loop",
                                                                                  "body")
    # The body reads zero and half itself, and scale on behalf of the If nested in it: all from main.
    assert {(r["name"], r["frame"]) for r in loop["outer_reads"]} == {("zero", "main"), ("half", "main"),
                                                                      ("scale", "main")}
    by_attr = {c["attribute"]: c for c in loop["children"]}
    then_f, else_f = by_attr["then_branch"], by_attr["else_branch"]
    assert then_f["path"] == "main/loop.body/choose.then_branch"
    assert {(r["name"], r["frame"]) for r in then_f["outer_reads"]} == {("v_in", "main/loop.body"),
                                                                        ("scale", "main")}
    assert {(r["name"], r["frame"]) for r in else_f["outer_reads"]} == {("v_in", "main/loop.body"),
                                                                        ("shift", "main/loop.body")}
    assert [n["op"] for n in loop["nodes"]] == ["ReduceSum", "Greater", "Neg", "If", "Identity"]


def test_unnamed_nodes_get_the_names_sdx_gives_them():
    m = nested_model()
    m.graph.node[0].name = ""
    tree = control_flow.frame_tree(m)
    assert tree["children"][0]["owner"] == "Loop_0"
    sess = sdx.InferenceSession(m.SerializeToString())
    sess.run(None, {"steps": np.array(4, np.int64), "v0": np.ones(3, np.float32)})
    control_flow.attach_reports(tree, sess.subgraph_reports())
    assert tree["children"][0]["runtime"] is not None and tree["children"][0]["runtime"]["owner"] == "Loop_0"


def test_reports_attach_to_frames_after_runs():
    sess = sdx.InferenceSession(nested_model().SerializeToString())
    feeds = {"steps": np.array(20, np.int64), "v0": np.array([1, -2, 4], np.float32)}
    for _ in range(3):
        sess.run(None, feeds)
    tree = control_flow.frame_tree(nested_model())
    control_flow.attach_reports(tree, sess.subgraph_reports())
    loop = tree["children"][0]
    assert loop["runtime"]["plan"] and loop["runtime"]["calls"] == 60 and loop["runtime"]["replays"] > 50
    text = control_flow.format_tree(tree)
    assert "Loop 'loop'.body (subgraph 'step'): 5 node(s); captured plan: 60 call(s)" in text, text
    assert "reads from outer scopes: zero <- main, half <- main, scale <- main" in text, text
    # The nested If: a frame whose state is known (its own plan, or interpreted with a reason), never dropped.
    assert len(loop["children"]) == 2 and "If 'choose'.then_branch" in text


def run_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    return subprocess.run([sys.executable, "-m", "sdx", "inspect", *args], capture_output=True, text=True, cwd=cwd,
                          env=env, timeout=300)


def test_cli_control_flow_json_html_and_dot(tmp_path):
    path = tmp_path / "nested.onnx"
    onnx.save(nested_model(), str(path))
    np.save(tmp_path / "steps.npy", np.array(30, np.int64))
    r = run_cli(str(path), "--control-flow", "--input", f"steps={tmp_path / 'steps.npy'}", "--json", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout[r.stdout.index("{"):])
    loop = doc["control_flow"]["frames"]["children"][0]
    assert loop["runtime"]["plan"] and loop["runtime"]["calls"] == 90, loop
    assert doc["control_flow"]["error"] is None and len(doc["control_flow"]["loops"]) == 3
    html = tmp_path / "cf.html"
    r = run_cli(str(path), "--visualize", str(html), "--input", f"steps={tmp_path / 'steps.npy'}", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    page = html.read_text()
    assert "Loop 'loop'.body" in page and "choose" in page
    # A plot of the carried value across the loop's 30 iterations.
    assert page.count("<polyline") >= 1 and "iterations 0..29" in page, page[-2000:]
    dot = tmp_path / "cf.dot"
    r = run_cli(str(path), "--visualize", str(dot), cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    text = dot.read_text()
    assert text.startswith("digraph") and 'subgraph "cluster_main/loop.body"' in text
    assert 'subgraph "cluster_main/loop.body/choose.then_branch"' in text
    assert "style=dashed" in text  # a cross-frame read drawn from its producer


def test_visualize_without_onnx_is_a_usage_error(tmp_path, monkeypatch):
    pytest.importorskip("onnx")
    path = tmp_path / "nested.onnx"
    onnx.save(nested_model(), str(path))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    code = ("import sys; sys.modules['onnx'] = None; from sdx.cli import main; "
            f"sys.exit(main(['inspect', {str(path)!r}, '--control-flow']))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 2 and "pip install onnx" in r.stderr, (r.returncode, r.stderr)


def test_a_bodys_own_rewrites_are_reported():
    """A branch is optimized as a model of its own, outer constants folded in: Add(two, three) folds there,
    which the top-level optimizer report (which does not enter subgraphs) cannot show."""
    then_g = helper.make_graph([helper.make_node("Add", ["two", "three"], ["five"]),
                                helper.make_node("Mul", ["x", "five"], ["t"])], "then", [],
                               [helper.make_tensor_value_info("t", TensorProto.FLOAT, [3])])
    else_g = helper.make_graph([helper.make_node("Neg", ["x"], ["e"])], "else", [],
                               [helper.make_tensor_value_info("e", TensorProto.FLOAT, [3])])
    g = helper.make_graph([helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g, name="pick")],
                          "g", [helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                                helper.make_tensor_value_info("x", TensorProto.FLOAT, [3])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3])],
                          [numpy_helper.from_array(np.float32(2), "two"), numpy_helper.from_array(np.float32(3), "three")])
    model = helper.make_model(g, opset_imports=OPSET)
    sess = sdx.InferenceSession(model.SerializeToString())
    y = sess.run(None, {"c": np.array(True), "x": np.array([1, 2, 3], np.float32)})[0]
    np.testing.assert_array_equal(y, [5, 10, 15])
    then_r = next(r for r in sess.subgraph_reports() if r["attribute"] == "then_branch")
    assert then_r["rewrites"].get("fold_constants", 0) >= 1, then_r
    assert "fold_constants" not in sess.optimization_report()["rewrites_per_pass"] or \
        sess.optimization_report()["rewrites_per_pass"]["fold_constants"] == 0
    tree = control_flow.frame_tree(model)
    control_flow.attach_reports(tree, sess.subgraph_reports())
    assert "fold_constants x1" in control_flow.format_tree(tree)
