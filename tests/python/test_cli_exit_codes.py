"""The `sdx` command line as CI uses it: exit codes (0 ok, 1 a check failed, 2 usage or input error, 3 internal
error), input errors as one line without a traceback, --version, --json on run / inspect (and `-` for bench and
conformance), --repeat / --warmup checks, and progress output (plain lines when stderr is not a terminal)."""
import io
import json
import os
import re
import subprocess
import sys

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from models import mlp_model


def sdx_cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "sdx", *map(str, args)], capture_output=True, text=True, cwd="/",
                          env=env, timeout=300)


def assert_one_line_error(r, *words):
    """Exit status 2 and exactly one non-empty stderr line, `sdx: error: ...`, naming the problem."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("sdx: error: "), lines[0]
    for w in words:
        assert w in lines[0], (w, lines[0])


def assert_usage_error(r, *words):
    """argparse's usual report: the usage, then one `sdx CMD: error: argument ...` line; exit status 2."""
    lines = [line for line in r.stderr.splitlines() if line.strip()]
    assert r.returncode == 2, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    assert lines[0].startswith("usage: sdx"), r.stderr
    assert re.match(r"sdx( \w+)?: error: ", lines[-1]), lines[-1]
    for w in words:
        assert w in lines[-1], (w, lines[-1])


@pytest.fixture(scope="module")
def mlp(tmp_path_factory):
    path = tmp_path_factory.mktemp("cli") / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return str(path)


@pytest.fixture(scope="module")
def unsupported_model(tmp_path_factory):
    g = helper.make_graph([helper.make_node("Frobnicate", ["x"], ["y"], name="frob")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    path = tmp_path_factory.mktemp("cli") / "u.onnx"
    onnx.save(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]), str(path))
    return str(path)


# ---- --version

def test_version():
    import sdx

    r = sdx_cli("--version")
    assert r.returncode == 0, r.stderr
    assert re.fullmatch(rf"sdx {re.escape(sdx.__version__)}( \(.+\))?", r.stdout.strip()), r.stdout


def test_version_adds_the_native_build_info(monkeypatch, capsys):
    import sdx
    from sdx import _sdx, cli

    monkeypatch.setattr(_sdx, "build_info", lambda: f"sdx {sdx.__version__}, build id abc, gcc 12, CPU kernels: avx2",
                        raising=False)
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0
    assert capsys.readouterr().out.strip() == f"sdx {sdx.__version__} (build id abc, gcc 12, CPU kernels: avx2)"


# ---- --json

def test_run_json(mlp, tmp_path):
    r = sdx_cli("run", mlp, "--input", "x=5x4", "--repeat", "3", "--warmup", "0", "--json",
                "--save-outputs", tmp_path / "out")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)  # stdout is the JSON and nothing else
    assert d["inputs"] == [{"name": "x", "type": "tensor", "dtype": "float32", "shape": [5, 4]}]
    assert [(o["name"], o["dtype"], o["shape"]) for o in d["outputs"]] == [("probs", "float32", [5, 2]),
                                                                           ("logits", "float32", [5, 2])]
    lat = d["latency_ms"]
    assert lat["runs"] == 3 and 0 < lat["min"] <= lat["p50"] <= lat["p90"] <= lat["max"]
    assert d["execution"]["execution_mode"] and d["warmup"] == 0
    assert np.load(tmp_path / "out" / "probs.npy").shape == (5, 2)
    assert r.stderr == ""


def test_run_text_output_is_unchanged_by_default(mlp):
    r = sdx_cli("run", mlp, "--input", "x=5x4", "--repeat", "2")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("model: ") and "output probs: float32[5, 2]" in r.stdout
    assert re.search(r"^latency over 2 runs: p50 ", r.stdout, re.M) and r.stdout.rstrip().splitlines()[-1].startswith(
        "execution: ")
    with pytest.raises(json.JSONDecodeError):
        json.loads(r.stdout)


def test_inspect_json(mlp):
    r = sdx_cli("inspect", mlp, "--json", "--plan", "--check-replay", "--shape", "x=8x4")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["inputs"] == [{"name": "x", "type": "tensor(float)", "shape": ["batch", 4]}]
    assert [o["name"] for o in d["outputs"]] == ["probs", "logits"]
    assert d["op_histogram"]["MatMul"] == 2 and d["node_count"] == 5 and d["unsupported"] == {}
    assert d["opsets"] == {"ai.onnx": 17} and d["initializer_count"] == 3
    assert d["plan"]["slots"] and "text" in d["plan"]
    assert d["check_replay"]["failed"] is False and d["check_replay"]["compared"] > 0


def test_inspect_json_unsupported_exits_1(unsupported_model):
    r = sdx_cli("inspect", unsupported_model, "--json")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert d["unsupported"] == {"Frobnicate (opset 17)": ["frob"]}


# ---- sdx run --repeat / --warmup

@pytest.mark.parametrize("option,value", [("--repeat", "0"), ("--repeat", "-2"), ("--repeat", "abc"),
                                          ("--repeat", "1.5"), ("--warmup", "-1"), ("--warmup", "x")])
def test_run_rejects_bad_repeat_and_warmup(mlp, option, value):
    assert_usage_error(sdx_cli("run", mlp, option, value), f"argument {option}:")


def test_run_accepts_the_smallest_repeat_and_warmup(mlp):
    r = sdx_cli("run", mlp, "--repeat", "1", "--warmup", "0")
    assert r.returncode == 0, r.stderr
    assert "latency over 1 runs" in r.stdout


# ---- input errors: one line, exit 2

@pytest.fixture(scope="module")
def bad_files(tmp_path_factory):
    d = tmp_path_factory.mktemp("bad")
    (d / "garbage.npy").write_text("not an array\n")
    (d / "truncated.npy").write_bytes(b"\x93NUMPY\x01\x00")
    (d / "garbage.onnx").write_bytes(b"\x08\x01garbage")
    return d


@pytest.mark.parametrize("args,words", [
    (["run", "{mlp}", "--input", "x={d}/missing.npy"], ["missing.npy", "No such file"]),
    (["run", "{mlp}", "--input", "x={d}/garbage.npy"], ["garbage.npy", "not a .npy file"]),
    (["run", "{mlp}", "--input", "x={d}/truncated.npy"], ["truncated.npy"]),
    (["run", "{mlp}", "--input", "nope=1x4"], ["no input 'nope'"]),
    (["run", "{mlp}", "--input", "x"], ["NAME=FILE.npy"]),
    (["run", "{mlp}", "--input", "x=axb"], ["'axb'"]),
    (["run", "{mlp}", "--input", "x=-1x4"], ["'-1x4'"]),
    (["bench", "{mlp}", "--shape", "x=2x-4"], ["'2x-4'"]),
    (["run", "{mlp}", "--input", "x=1x5"], ["'x'"]),  # the engine refuses the shape
    (["run", "{d}/missing.onnx"], ["missing.onnx", "no such file"]),
    (["run", "{d}"], ["is a directory"]),
    (["run", "{d}/garbage.onnx"], []),
    (["inspect", "{d}/missing.onnx"], ["missing.onnx"]),
    (["inspect", "{mlp}", "--plan", "--shape", "x={d}/missing.npy"], ["missing.npy"]),
    (["bench", "{d}/missing.onnx", "--runs", "2"], ["missing.onnx"]),
    (["bench", "{mlp}", "--compare", "{d}/missing.json"], ["missing.json"]),
    (["profile", "{d}/missing.onnx"], ["missing.onnx"]),
    (["compile", "{d}/missing.onnx", "-o", "{d}/m.sdx"], ["missing.onnx"]),
    (["compile", "{mlp}", "-o", "{d}/no/such/folder/m.sdx"], ["no/such/folder"]),
    (["conformance", "--data", "{d}/missing"], ["missing"]),
    (["conformance", "--data", "{d}", "--filter", "["], ["--filter"]),
])
def test_input_errors_are_one_line(mlp, bad_files, args, words):
    r = sdx_cli(*(a.format(mlp=mlp, d=bad_files) for a in args))
    assert_one_line_error(r, *words)


@pytest.mark.parametrize("args,option", [
    (["run", "{mlp}", "--dim", "x"], "--dim"),
    (["run", "{mlp}", "--threads", "-1"], "--threads"),
    (["inspect", "{mlp}", "--dim", "-1"], "--dim"),
    (["bench", "{mlp}", "--runs", "0"], "--runs"),
    (["profile", "{mlp}", "--mode", "fast"], "--mode"),
    (["profile", "{mlp}", "--runs", "0"], "--runs"),
    (["conformance", "--jobs", "0"], "--jobs"),
    (["conformance", "--timeout", "0"], "--timeout"),
    (["run"], "model"),
    (["frobnicate"], "frobnicate"),
])
def test_malformed_option_values_are_usage_errors(mlp, args, option):
    assert_usage_error(sdx_cli(*(a.format(mlp=mlp) for a in args)), option)


# ---- conformance: exit 1 on failures, --allow-failures, --json -, progress lines

def _case(case_dir, expected):
    relu = helper.make_model(helper.make_graph(
        [helper.make_node("Relu", ["x"], ["y"])], "relu",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])]), opset_imports=[helper.make_opsetid("", 17)])
    os.makedirs(os.path.join(case_dir, "test_data_set_0"))
    with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
        f.write(relu.SerializeToString())
    for name, v in (("input_0", [-1.0, 2.0]), ("output_0", expected)):
        with open(os.path.join(case_dir, "test_data_set_0", f"{name}.pb"), "wb") as f:
            f.write(numpy_helper.from_array(np.array(v, np.float32)).SerializeToString())


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    d = tmp_path_factory.mktemp("suite") / "node"
    _case(str(d / "test_relu_right"), [0.0, 2.0])
    _case(str(d / "test_relu_wrong"), [0.0, 3.0])
    return d


def test_conformance_fails_with_exit_1(suite):
    r = sdx_cli("conformance", "--data", suite, "--jobs", "1")
    assert r.returncode == 1, r.stdout + r.stderr
    lines = r.stdout.strip().splitlines()
    assert lines[-1] == "1 passed, 1 failed, 0 skipped"
    assert "failed cases (1):" in lines and any(line.startswith("  test_relu_wrong: ") for line in lines)


def test_conformance_allow_failures_exits_0(suite):
    r = sdx_cli("conformance", "--data", suite, "--jobs", "1", "--allow-failures")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "1 passed, 1 failed, 0 skipped"


def test_conformance_all_passing_exits_0(suite):
    r = sdx_cli("conformance", "--data", suite, "--jobs", "1", "--filter", "right")
    assert r.returncode == 0, r.stdout + r.stderr
    assert r.stdout.strip().splitlines()[-1] == "1 passed, 0 failed, 0 skipped"
    assert "failed cases" not in r.stdout


def test_conformance_progress_lines_when_not_a_terminal(suite):
    r = sdx_cli("conformance", "--data", suite, "--jobs", "1", "--allow-failures")
    assert r.returncode == 0, r.stderr
    progress = [line for line in r.stderr.splitlines() if line.startswith("sdx conformance: ")]
    assert progress and progress[-1].startswith("sdx conformance: 2/2 cases"), r.stderr
    assert "\r" not in r.stderr  # no terminal redraws in a log


def test_conformance_json_to_stdout_has_no_progress(suite):
    r = sdx_cli("conformance", "--data", suite, "--jobs", "1", "--json", "-")
    assert r.returncode == 1, r.stderr
    d = json.loads(r.stdout)
    assert (d["total"], d["passed"], d["failed"]) == (2, 1, 1)
    assert {c["name"]: c["status"] for c in d["cases"]} == {"test_relu_right": "passed", "test_relu_wrong": "failed"}
    assert r.stderr == ""


def test_bench_json_to_stdout_has_no_progress(mlp):
    r = sdx_cli("bench", mlp, "--runs", "3", "--warmup", "1", "--json", "-")
    assert r.returncode == 0, r.stderr
    d = json.loads(r.stdout)
    assert d["engines"]["sdx"]["calls"] == 3 and d["inputs"]["x"]["shape"] == [1, 4]
    assert r.stderr == ""


def test_bench_progress_lines_when_not_a_terminal(mlp):
    r = sdx_cli("bench", mlp, "--runs", "20", "--warmup", "1")
    assert r.returncode == 0, r.stderr
    progress = [line for line in r.stderr.splitlines() if line.startswith("sdx bench: timing: ")]
    assert progress and progress[-1].startswith("sdx bench: timing: 20/20 runs per engine"), r.stderr
    assert "\r" not in r.stderr


# ---- the progress display itself

class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


def test_progress_on_a_terminal_is_one_redrawn_line():
    from sdx._cli_support import Progress

    s = _Stream(tty=True)
    with Progress("work", 4, "steps", stream=s) as bar:
        for i in range(1, 5):
            bar.last_draw = 0.0  # no throttling in the test
            bar.update(i)
        shown = s.getvalue()
    assert shown.count("\r") == 4 and "\n" not in shown
    assert "work [########################] 4/4 steps" in shown and "work [######..." in shown
    assert s.getvalue().endswith("\r") and s.getvalue()[len(shown):].strip() == ""  # close() cleared the line


def test_progress_in_a_log_is_plain_lines_at_each_tenth():
    from sdx._cli_support import Progress

    s = _Stream(tty=False)
    with Progress("work", 100, "steps", stream=s) as bar:
        for i in range(1, 101):
            bar.update(i)
    lines = s.getvalue().splitlines()
    assert "\r" not in s.getvalue()
    # the first step (it started), then each tenth
    assert [line.split(" (")[0] for line in lines] == ["work: 1/100 steps"] + [f"work: {n}/100 steps"
                                                                             for n in range(10, 101, 10)]


def test_progress_silent_when_disabled_or_before_its_delay():
    from sdx._cli_support import Progress

    for kwargs in ({"enabled": False}, {"delay_s": 3600.0}):
        s = _Stream(tty=True)
        with Progress("work", 3, stream=s, **kwargs) as bar:
            for i in range(1, 4):
                bar.update(i)
        assert s.getvalue() == "", kwargs


# ---- exit 1 for a replay divergence, exit 3 for an internal error (in process, with the engine stubbed)

def test_inspect_check_replay_divergence_exits_1(mlp, monkeypatch, capsys):
    import sdx
    from sdx import cli

    real = sdx.InferenceSession.check_replay

    def diverged(self, feeds):
        r = real(self, feeds)
        return {**r, "diverged": True, "summary": "replay diverges at slot 3"}

    assert cli.main(["inspect", mlp, "--check-replay"]) == 0
    monkeypatch.setattr(sdx.InferenceSession, "check_replay", diverged)
    assert cli.main(["inspect", mlp, "--check-replay"]) == 1
    assert "replay diverges at slot 3" in capsys.readouterr().out


def test_internal_errors_exit_3_with_the_traceback(mlp, monkeypatch, capsys):
    import sdx
    from sdx import cli

    def broken(path):
        raise KeyError("a bug")

    monkeypatch.setattr(sdx, "inspect_model", broken)
    assert cli.main(["inspect", mlp]) == 3
    err = capsys.readouterr().err
    assert "Traceback" in err and err.strip().splitlines()[-1].startswith("sdx: internal error: 'a bug'")
