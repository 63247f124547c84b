"""Op timing from Python (sdx.profiling) and `sdx profile`: hotspot table, CSV columns, and a Chrome
trace with one complete event per executed op that passes a schema check."""
import csv
import json
import subprocess
import sys

import numpy as np
import onnx
import pytest

import sdx
import sdx.profiling as prof
from models import mlp_model

CSV_COLUMNS = ["OpName", "Calls", "TotalMs", "AvgUs", "StdDevUs", "MinUs", "MaxUs", "ValidationMs", "ShapeCalcMs",
               "MemoryAllocMs", "KernelSelectMs", "KernelExecMs", "P50Us", "P90Us", "P99Us"]


@pytest.fixture
def model_path(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(mlp_model(), str(path))
    return str(path)


def check_trace_schema(doc):
    """The Chrome trace event format (the subset sdx writes): a traceEvents array of complete ("X")
    events with name/cat/ts/dur/pid/tid/args.node, and thread_name metadata ("M") events."""
    assert isinstance(doc, dict) and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit") in ("ms", "ns")
    complete = []
    for ev in doc["traceEvents"]:
        assert ev["ph"] in ("X", "M"), ev
        assert isinstance(ev["pid"], int) and isinstance(ev["tid"], int)
        if ev["ph"] == "M":
            assert ev["name"] == "thread_name" and isinstance(ev["args"]["name"], str)
            continue
        assert isinstance(ev["name"], str) and ev["name"]
        assert ev["cat"] == "op"
        assert isinstance(ev["ts"], (int, float)) and ev["ts"] >= 0
        assert isinstance(ev["dur"], (int, float)) and ev["dur"] >= 0
        assert isinstance(ev["args"]["node"], str)
        complete.append(ev)
    last = {}
    for ev in complete:  # per thread, in execution order
        assert ev["ts"] >= last.get(ev["tid"], 0.0)
        last[ev["tid"]] = ev["ts"]
    return complete


def test_timing_context_counts_every_op_of_every_run(model_path, tmp_path):
    o = sdx.SessionOptions()
    o.jit_enabled = False
    sess = sdx.InferenceSession(model_path, o)
    feeds = {i.name: np.ones([d if isinstance(d, int) else 2 for d in i.shape], np.float32) for i in sess.get_inputs()}
    for _ in range(3):
        sess.run(None, feeds)
    runs = 7
    with prof.timing("trace"):
        for _ in range(runs):
            sess.run(None, feeds)
    assert prof.mode() == "disabled"
    st = prof.stats()
    assert st, "nothing recorded"
    for s in st:
        assert s["calls"] % runs == 0, s
        assert s["p50_us"] <= s["p99_us"] <= s["max_us"] + 1e-9
        assert len(s["histogram"]) == 24 and sum(s["histogram"]) == s["calls"]
    c = prof.counters()
    assert c["recorded"] == sum(s["calls"] for s in st) and c["overwritten"] == 0
    trace = tmp_path / "trace.json"
    prof.export_chrome_trace(str(trace))
    events = check_trace_schema(json.loads(trace.read_text()))
    assert len(events) == c["recorded"]
    table = prof.hotspots(5)
    assert "=== Op Timing Hotspots" in table and st[0]["op"] in table
    with pytest.raises(sdx.SdxError):
        prof.breakdown("NoSuchOp")
    with pytest.raises(sdx.InvalidArgument):
        prof.set_mode("fast")


def test_profile_cli_writes_trace_and_csv(model_path, tmp_path):
    trace, table = tmp_path / "t.json", tmp_path / "ops.csv"
    r = subprocess.run([sys.executable, "-m", "sdx", "profile", model_path, "--mode", "trace", "--warmup", "3",
                        "--runs", "5", "--trace", str(trace), "--csv", str(table)],
                       capture_output=True, text=True, cwd="/")
    assert r.returncode == 0, r.stderr
    assert "=== Op Timing Hotspots" in r.stdout and "Phase breakdown" in r.stdout, r.stdout
    rows = list(csv.reader(table.open()))
    assert rows[0] == CSV_COLUMNS
    assert len(rows) > 1 and all(len(row) == len(CSV_COLUMNS) for row in rows)
    calls = sum(int(row[1]) for row in rows[1:])
    events = check_trace_schema(json.loads(trace.read_text()))
    assert len(events) == calls and calls % 5 == 0


def test_profile_cli_rejects_bad_mode(model_path):
    r = subprocess.run([sys.executable, "-m", "sdx", "profile", model_path, "--mode", "fast"],
                       capture_output=True, text=True, cwd="/")
    assert r.returncode != 0 and "--mode" in r.stderr
