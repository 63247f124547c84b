"""Loop analysis and loop guards (issue 20, part 3): purpose-built ONNX Loops whose carried values evolve in
known ways (Newton's iteration for sqrt(2), x * 1.1, a period-2 oscillation, a constant, the logistic map
at r = 3.9, a condition that never turns false), run with SessionOptions.loop_analysis on; the guards
max_loop_iterations / max_loop_seconds; bad trip counts; `sdx inspect --loops`."""
import json
import math
import os
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx

D = TensorProto.DOUBLE


def loop_model(body_nodes, trip=None, x0=None, cond_nodes=None, name="loop0", initializers=()):
    """main(x: double scalar) -> y: Loop(M = trip or absent, cond = true, x) with
    body(i, cond_in, x) -> (cond_out, x_out): body_nodes make x_out from x; cond_nodes make cond_out
    (default: cond_in passed through)."""
    body_inits = [numpy_helper.from_array(np.array(v, dtype=np.float64), n) for n, v in initializers]
    cond_nodes = cond_nodes or [helper.make_node("Identity", ["cond_in"], ["cond_out"])]
    body = helper.make_graph(
        body_nodes + cond_nodes, "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x", D, [])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("x_out", D, [])],
        body_inits)
    inits = [numpy_helper.from_array(np.array(True), "cond")]
    if trip is not None:
        inits.append(numpy_helper.from_array(np.array(trip, dtype=np.int64), "trip"))
    loop = helper.make_node("Loop", ["trip" if trip is not None else "", "cond", "x0"], ["y"], name=name, body=body)
    graph = helper.make_graph([loop], "main", [helper.make_tensor_value_info("x0", D, [])],
                              [helper.make_tensor_value_info("y", D, [])], inits)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def session(model, analysis=True, **options):
    opts = sdx.SessionOptions()
    opts.loop_analysis = analysis
    for k, v in options.items():
        setattr(opts, k, v)
    return sdx.InferenceSession(model, opts)


def run_one(model, x0, **options):
    sess = session(model, **options)
    y = sess.run(None, {"x0": np.array(x0, dtype=np.float64)})[0]
    reports = sess.loop_reports()
    assert len(reports) == 1, reports
    return float(y), reports[0]


def x_of(report):
    v = report["variables"][0]
    assert v["name"] == "x", report["text"]
    return v["evolution"]


NEWTON = [helper.make_node("Div", ["two", "x"], ["q"]), helper.make_node("Add", ["x", "q"], ["s"]),
          helper.make_node("Mul", ["s", "half"], ["x_out"])]


def test_newton_sqrt2_converges_to_its_limit():
    y, r = run_one(loop_model(NEWTON, trip=20, initializers=[("two", 2.0), ("half", 0.5)]), 1.0)
    assert y == pytest.approx(math.sqrt(2), abs=1e-12)
    e = x_of(r)
    assert e["kind"] == "CONVERGING", r["text"]
    assert e["limit"] == pytest.approx(1.41421356, abs=1e-8)
    t = r["termination"]
    assert (t["verdict"], t["remaining"], t["exact"], t["bound_by"]) == ("TERMINATES", 0, True, "trip count")
    assert r["iterations"] == 20 and r["trip_count"] == 20 and r["stopped_by"] is None
    assert "x: CONVERGING to 1.41421356" in r["text"]


def test_divergent_recurrence_diverges_at_its_rate():
    _, r = run_one(loop_model([helper.make_node("Mul", ["x", "k"], ["x_out"])], trip=50, initializers=[("k", 1.1)]), 1.0)
    e = x_of(r)
    assert e["kind"] == "DIVERGING", r["text"]
    assert e["rate"] == pytest.approx(1.1, rel=1e-9)


def test_period_two_oscillation():
    _, r = run_one(loop_model([helper.make_node("Sub", ["one", "x"], ["x_out"])], trip=40, initializers=[("one", 1.0)]),
                   0.25)
    e = x_of(r)
    assert e["kind"] == "OSCILLATING", r["text"]
    assert e["period"] == 2


def test_constant_state_is_stable():
    _, r = run_one(loop_model([helper.make_node("Mul", ["x", "one"], ["x_out"])], trip=30, initializers=[("one", 1.0)]),
                   3.5)
    e = x_of(r)
    assert e["kind"] == "STABLE", r["text"]
    assert e["last"] == 3.5


def test_logistic_map_at_3_9_is_chaotic():
    body = [helper.make_node("Sub", ["one", "x"], ["omx"]), helper.make_node("Mul", ["x", "omx"], ["p"]),
            helper.make_node("Mul", ["p", "r"], ["x_out"])]
    y, r = run_one(loop_model(body, trip=300, initializers=[("one", 1.0), ("r", 3.9)]), 0.5)
    x = 0.5
    for _ in range(300):
        x = (x * (1 - x)) * 3.9  # the body's order: chaos magnifies any other rounding
    assert y == x  # the loop itself is computed right
    e = x_of(r)
    assert e["kind"] == "CHAOTIC", r["text"]
    assert 0 < e["min"] < e["max"] < 1


GROW_WHILE_POSITIVE = dict(
    body_nodes=[helper.make_node("Mul", ["x", "k"], ["x_out"])],
    cond_nodes=[helper.make_node("Greater", ["x_out", "zero"], ["cond_out"])],
    initializers=[("k", 1.1), ("zero", 0.0)])


def test_never_ending_loop_is_stopped_by_the_guard_with_the_report_naming_the_variable():
    sess = session(loop_model(**GROW_WHILE_POSITIVE), max_loop_iterations=1000)
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1.0)})
    msg = str(err.value)
    assert "Loop 'loop0' stopped after 1000 iterations (max_loop_iterations = 1000)" in msg, msg
    assert "WILL_NOT_TERMINATE" in msg and "`x > 0` stays true" in msg, msg
    assert "x keeps the condition `x > 0` true: DIVERGING (x1.1 per step" in msg, msg
    (r,) = sess.loop_reports()
    assert r["stopped_by"] == "max_loop_iterations" and r["iterations"] == 1000
    assert r["condition"] == "x > 0" and r["condition_depends_on"] == ["x"]
    t = r["termination"]
    assert t["verdict"] == "WILL_NOT_TERMINATE"
    assert t["root_cause"]["name"] == "x"
    assert t["root_cause"]["evolution"]["kind"] == "DIVERGING"
    assert t["root_cause"]["evolution"]["rate"] == pytest.approx(1.1, rel=1e-9)


def test_guard_without_analysis_says_how_to_get_the_report():
    sess = session(loop_model(**GROW_WHILE_POSITIVE), analysis=False, max_loop_iterations=500)
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1.0)})
    msg = str(err.value)
    assert "stopped after 500 iterations (max_loop_iterations = 500) with its condition still true" in msg, msg
    assert "loop_analysis=1" in msg
    assert sess.loop_reports() == []


def test_guarded_countdown_predicts_the_remaining_iterations():
    sess = session(loop_model([helper.make_node("Sub", ["x", "one"], ["x_out"])],
                              cond_nodes=[helper.make_node("Greater", ["x_out", "zero"], ["cond_out"])],
                              initializers=[("one", 1.0), ("zero", 0.0)]), max_loop_iterations=1000)
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1e6)})
    (r,) = sess.loop_reports()
    t = r["termination"]
    assert t["verdict"] == "TERMINATES" and t["bound_by"] == "condition", r["text"]
    # After 1000 iterations x = 999000: it turns false 999000 iterations later.
    assert abs(t["remaining"] - 999000) <= 1, r["text"]
    assert "TERMINATES: about" in str(err.value)


def test_loop_ended_by_its_condition():
    _, r = run_one(loop_model([helper.make_node("Sub", ["x", "one"], ["x_out"])],
                              cond_nodes=[helper.make_node("Greater", ["x_out", "zero"], ["cond_out"])],
                              initializers=[("one", 1.0), ("zero", 0.0)]), 50.0)
    assert r["iterations"] == 50 and r["trip_count"] is None
    assert r["termination"]["bound_by"] == "condition" and r["termination"]["remaining"] == 0
    assert x_of(r)["kind"] == "DIVERGING" and x_of(r)["step"] == -1  # a countdown: an unbounded progression


def test_wall_time_guard():
    sess = session(loop_model(**GROW_WHILE_POSITIVE), analysis=False, max_loop_seconds=0.2)
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1.0)})
    assert "(max_loop_seconds = 0.200000 s)" in str(err.value)


def test_negative_trip_count_is_an_error_naming_it():
    sess = session(loop_model([helper.make_node("Identity", ["x"], ["x_out"])], trip=-3))
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1.0)})
    assert "the trip count M is -3; it must be >= 0" in str(err.value)
    assert "loop0" in str(err.value)


@pytest.mark.parametrize("analysis", [False, True])
def test_huge_trip_count_stops_at_the_guard(analysis):
    sess = session(loop_model([helper.make_node("Identity", ["x"], ["x_out"])], trip=2**62), analysis=analysis,
                   max_loop_iterations=300)
    with pytest.raises(Exception) as err:
        sess.run(None, {"x0": np.array(1.0)})
    msg = str(err.value)
    assert "stopped after 300 iterations (max_loop_iterations = 300)" in msg, msg
    if analysis:
        assert f"TERMINATES: {2**62 - 300} more iterations (trip count)" in msg, msg
    else:
        assert "before its trip count ran out" in msg, msg


def _carried_loop(body_nodes, body_outputs):
    """Loop M times over v (float [2]); the body's nodes and outputs as given (the bad-input cases below)."""
    body = helper.make_graph(body_nodes, "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []),
                              helper.make_tensor_value_info("c", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("v", TensorProto.FLOAT, [2])], body_outputs)
    g = helper.make_graph([helper.make_node("Loop", ["M", "", "v0"], ["v_final"], body=body, name="loop0")], "g",
                          [helper.make_tensor_value_info("M", TensorProto.INT64, []),
                           helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2])],
                          [helper.make_tensor_value_info("v_final", TensorProto.FLOAT, [2])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


CARRIED_FEEDS = {"M": np.array(3, np.int64), "v0": np.ones(2, np.float32)}


@pytest.mark.parametrize("subgraph_plans", [True, False])
@pytest.mark.parametrize("declared", [True, False])
def test_a_body_whose_carried_value_changes_type_is_refused(subgraph_plans, declared):
    """float in, int64 out: refused at load when the body declares it, at the first iteration otherwise, with or
    without subgraph plans (interpreted, it used to run and give int64 where float was declared)."""
    out = helper.make_tensor_value_info("v_out", TensorProto.INT64 if declared else TensorProto.UNDEFINED, [2])
    if not declared:
        out = helper.make_value_info("v_out", onnx.TypeProto())
    model = _carried_loop([helper.make_node("Identity", ["c"], ["c_out"]),
                           helper.make_node("Cast", ["v"], ["v_out"], to=TensorProto.INT64)],
                          [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), out])
    opts = sdx.SessionOptions()
    opts.subgraph_plans = subgraph_plans
    with pytest.raises(Exception) as err:
        sdx.InferenceSession(model.SerializeToString(), opts).run(None, CARRIED_FEEDS)
    msg = str(err.value)
    assert "loop0" in msg and "'v'" in msg and "int64" in msg and "float" in msg, msg


def test_a_body_without_its_condition_output_is_refused():
    model = _carried_loop([helper.make_node("Identity", ["v"], ["v_out"])],
                          [helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])
    with pytest.raises(Exception) as err:
        sdx.InferenceSession(model.SerializeToString()).run(None, CARRIED_FEEDS)
    assert "loop0" in str(err.value) and "body must produce the condition and 1 loop-carried values" in str(err.value)


def test_a_condition_output_that_is_not_a_bool_is_refused():
    model = _carried_loop([helper.make_node("Identity", ["v"], ["v_out"]),
                           helper.make_node("Cast", ["c"], ["c_f"], to=TensorProto.FLOAT)],
                          [helper.make_tensor_value_info("c_f", TensorProto.FLOAT, []),
                           helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [2])])
    with pytest.raises(Exception) as err:
        sdx.InferenceSession(model.SerializeToString()).run(None, CARRIED_FEEDS)
    assert "loop0" in str(err.value) and "condition output must be a bool scalar" in str(err.value)


def test_analysis_off_by_default_reports_nothing_and_results_equal():
    model = loop_model(NEWTON, trip=20, initializers=[("two", 2.0), ("half", 0.5)])
    off = sdx.InferenceSession(model)
    assert sdx.SessionOptions().loop_analysis is False
    y_off = off.run(None, {"x0": np.array(1.0)})[0]
    assert off.loop_reports() == []
    y_on, _ = run_one(model, 1.0)
    assert float(y_off) == y_on


def test_nested_loops_report_to_the_session():
    inner = helper.make_graph(
        [helper.make_node("Add", ["v", "one"], ["v_out"]), helper.make_node("Identity", ["c_in"], ["c_out"])], "inner",
        [helper.make_tensor_value_info("j", TensorProto.INT64, []), helper.make_tensor_value_info("c_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v", D, [])],
        [helper.make_tensor_value_info("c_out", TensorProto.BOOL, []), helper.make_tensor_value_info("v_out", D, [])],
        [numpy_helper.from_array(np.array(1.0), "one")])
    body = [helper.make_node("Loop", ["five", "", "x"], ["x_out"], name="inner_loop", body=inner)]
    model = loop_model(body, trip=3, initializers=[])
    m = onnx.load_from_string(model)
    m.graph.node[0].attribute[0].g.initializer.append(numpy_helper.from_array(np.array(5, dtype=np.int64), "five"))
    sess = session(m.SerializeToString())
    y = sess.run(None, {"x0": np.array(0.0)})[0]
    assert float(y) == 15.0
    nodes = [r["node"] for r in sess.loop_reports()]
    assert nodes == ["inner_loop"] * 3 + ["loop0"], nodes
    sess.clear_loop_reports()
    assert sess.loop_reports() == []


def test_loop_reports_reach_the_diagnostics():
    import sdx.diagnostics as diag

    diag.enable("EXECUTE", "DETAILED")
    try:
        run_one(loop_model(NEWTON, trip=20, initializers=[("two", 2.0), ("half", 0.5)]), 1.0)
        events = diag.report()["categories"]["EXECUTE"]
    finally:
        diag.disable()
    assert events["counts"]["LOOP_REPORT"] >= 1, events
    assert json.loads(events["last"]["LOOP_REPORT"])["variables"][0]["evolution"]["kind"] == "CONVERGING"


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "sdx", *args], capture_output=True, text=True)


def test_inspect_loops_cli(tmp_path):
    path = tmp_path / "grow.onnx"
    path.write_bytes(loop_model(**GROW_WHILE_POSITIVE))
    x0 = tmp_path / "x0.npy"
    np.save(x0, np.array(1.0))
    p = _cli("inspect", "--loops", str(path), "--input", f"x0={x0}", "--max-loop-iterations", "400")
    assert p.returncode == 1, p.stdout + p.stderr
    assert "Loop 'loop0': 400 iterations" in p.stdout and "stopped by max_loop_iterations" in p.stdout, p.stdout
    assert "x: DIVERGING" in p.stdout and "WILL_NOT_TERMINATE" in p.stdout, p.stdout
    p = _cli("inspect", "--loops", str(path), "--input", f"x0={x0}", "--max-loop-iterations", "400", "--json")
    doc = json.loads(p.stdout)
    (r,) = doc["loops"]["reports"]
    assert r["termination"]["root_cause"]["name"] == "x"
    assert "max_loop_iterations" in doc["loops"]["error"]

    newton = tmp_path / "newton.onnx"
    newton.write_bytes(loop_model(NEWTON, trip=20, initializers=[("two", 2.0), ("half", 0.5)]))
    p = _cli("inspect", "--loops", str(newton), "--input", f"x0={x0}")
    assert p.returncode == 0, p.stdout + p.stderr
    assert "x: CONVERGING to 1.41421356" in p.stdout, p.stdout
