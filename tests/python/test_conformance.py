"""The acceptance gate: the ONNX backend node suite of the pinned onnx package.

The gate judges the suite by pass rate (MIN_PASS_RATE) and the per-case checks below, so known failures
(e.g. test_attention_4d_causal_fp16_expanded) do not fail it: it runs `sdx conformance --allow-failures`,
which exits 0 with failing cases (without the flag, any failure is exit status 1)."""
import json
import os
import subprocess
import sys

import pytest

MIN_PASS_RATE = 0.75


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("conf") / "conformance.json"
    r = subprocess.run([sys.executable, "-m", "sdx", "conformance", "--allow-failures", "--json", str(out)],
                       capture_output=True, text=True, cwd="/", timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    last = r.stdout.strip().splitlines()[-1]
    with open(out) as f:
        data = json.load(f)
    data["_last_line"] = last
    print(r.stdout)
    return data


def test_summary_line(report):
    assert report["_last_line"] == f"{report['passed']} passed, {report['failed']} failed, {report['skipped']} skipped"


def test_pass_rate(report):
    assert report["total"] > 1000  # the whole node suite, not a filtered subset
    rate = report["passed"] / report["total"]
    assert rate >= MIN_PASS_RATE, f"pass rate {rate:.3f} below {MIN_PASS_RATE}"


def test_passing_cases_replay_bitwise_identically(report):
    """Every passing case ran warmup (slot by slot), capture and two replays, each compared bitwise with
    the slot-by-slot run (a difference fails the case). Only cases whose inputs are not plain tensors
    (sequences, optionals) may stay slot by slot."""
    assert report["replayed"] > 0.9 * report["passed"]
    for case in report["cases"]:
        if case["status"] == "passed" and not case["replayed"]:
            assert case["replay_note"] == "inputs other than plain tensors", (case["name"], case["replay_note"])


def test_every_case_has_status_and_failures_have_reasons(report):
    assert len(report["cases"]) == report["total"]
    for case in report["cases"]:
        assert case["status"] in ("passed", "failed", "skipped")
        if case["status"] != "passed":
            assert case["reason"], case["name"]


def _write_case(case_dir, model, inputs, outputs):
    from onnx import numpy_helper

    os.makedirs(os.path.join(case_dir, "test_data_set_0"))
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(model.SerializeToString())
    for kind, values in (("input", inputs), ("output", outputs)):
        for i, v in enumerate(values):
            with open(os.path.join(case_dir, "test_data_set_0", f"{kind}_{i}.pb"), "wb") as f:
                f.write(numpy_helper.from_array(v).SerializeToString())


def test_failures_hangs_and_broken_cases_are_isolated(tmp_path):
    """A hung case is killed and reported, a wrong result fails, and the run goes on."""
    import numpy as np
    from onnx import TensorProto, helper

    from sdx import conformance

    # A Loop with no trip count whose condition never turns false: runs for a very long time.
    body = helper.make_graph(
        [helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["v_in", "one"], ["v_out"])],
        "body",
        [helper.make_tensor_value_info("i", TensorProto.INT64, []),
         helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_in", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []),
         helper.make_tensor_value_info("v_out", TensorProto.FLOAT, [1])],
        initializer=[helper.make_tensor("one", TensorProto.FLOAT, [1], [1.0])])
    loop = helper.make_graph(
        [helper.make_node("Loop", ["", "c", "v"], ["out"], body=body)], "hang",
        [helper.make_tensor_value_info("c", TensorProto.BOOL, []), helper.make_tensor_value_info("v", TensorProto.FLOAT, [1])],
        [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1])])
    hang = helper.make_model(loop, opset_imports=[helper.make_opsetid("", 17)])
    relu = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    data = tmp_path / "node"
    x = np.array([-1.0, 2.0], np.float32)
    _write_case(str(data / "test_a_hang"), hang, [np.array(True), np.zeros(1, np.float32)], [np.zeros(1, np.float32)])
    _write_case(str(data / "test_b_wrong"), relu, [x], [np.array([0.0, 3.0], np.float32)])
    _write_case(str(data / "test_c_right"), relu, [x], [np.array([0.0, 2.0], np.float32)])
    (data / "test_d_missing").mkdir()
    rep = conformance.run_suite(str(data), jobs=1, timeout=3)
    by_name = {c["name"]: c for c in rep["cases"]}
    assert by_name["test_a_hang"]["status"] == "failed" and "timed out" in by_name["test_a_hang"]["reason"]
    assert by_name["test_b_wrong"]["status"] == "failed" and "got 2, expected 3" in by_name["test_b_wrong"]["reason"]
    assert by_name["test_c_right"]["status"] == "passed"
    assert by_name["test_d_missing"]["status"] == "failed" and "model" in by_name["test_d_missing"]["reason"]
    assert (rep["passed"], rep["failed"], rep["skipped"]) == (1, 3, 0)


# Cases whose inputs or outputs are what Python users trip over: sequences, optionals, strings,
# bfloat16/float8, the sub-byte types, casts.
PYTHON_API_FILTER = "sequence|optional|string|bfloat16|float8|int4|uint4|int2|float4|cast|identity|split_to"


def test_the_python_api_passes_what_the_native_runner_passes(report, tmp_path):
    """The same cases through sdx.InferenceSession with onnx's own readers (read-only arrays, lists,
    None for empty optionals): every case has the native runner's outcome (`sdx conformance --via python`;
    the full suite in the issue's closing note)."""
    out = tmp_path / "python.json"
    r = subprocess.run([sys.executable, "-m", "sdx", "conformance", "--allow-failures", "--via", "python", "--filter",
                        PYTHON_API_FILTER, "--json", str(out)], capture_output=True, text=True, cwd="/", timeout=1800)
    assert r.returncode == 0, r.stdout + r.stderr
    with open(out) as f:
        via_python = {c["name"]: (c["status"], c["reason"]) for c in json.load(f)["cases"]}
    native = {c["name"]: c["status"] for c in report["cases"]}
    assert len(via_python) > 150
    differ = {name: (native[name], status, reason) for name, (status, reason) in via_python.items()
              if status != native[name]}
    assert not differ, differ
