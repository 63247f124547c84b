"""The event stream from Python (sdx.events): kernel events with shapes and GFLOP/s, the input-copy memory
event, the duration threshold, recording to a JSON-lines file, and callbacks that raise."""
import json

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx
import sdx.events as ev


def _matmul_relu(k=64, n=32):
    w = numpy_helper.from_array(np.ones((k, n), np.float32), "w")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"], name="mm"),
                           helper.make_node("Relu", ["h"], ["y"], name="relu")], "g",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, k])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, n])], initializer=[w])
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    return m.SerializeToString()


@pytest.fixture
def session():
    o = sdx.SessionOptions()
    o.optimizer_enabled = False
    o.jit_enabled = False
    s = sdx.InferenceSession(_matmul_relu(), o)
    x = np.ones((4, 64), np.float32)
    for _ in range(3):  # warmup, capture, replay
        s.run(None, {"x": x})
    return s, {"x": x}


def test_kernel_and_memory_events(session):
    s, feeds = session
    with ev.collect() as events:
        s.run(None, feeds)
    kernels = [e for e in events if e["type"] == "kernel"]
    assert [e["op"] for e in kernels] == ["MatMul", "Relu"]
    mm = kernels[0]
    assert mm["node"] == "mm" and mm["shapes"] == "float[4, 64], float[64, 32] -> float[4, 32]"
    assert mm["flops"] == 2 * 4 * 32 * 64 and mm["gflops"] > 0 and mm["gbps"] > 0
    assert mm["backend"] == "cpu" and mm["time_us"] >= 0
    mem = [e for e in events if e["type"] == "memory"]
    assert len(mem) == 1 and mem[0]["bytes"] == 4 * 64 * 4 and mem[0]["direction"] == "host_to_host"


def test_threshold_drops_short_events(session):
    s, feeds = session
    with ev.collect(min_duration_us=1e9) as events:
        s.run(None, feeds)
    assert events == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")  # the raising callback's, on purpose
def test_record_to_file_and_raising_callback(session, tmp_path):
    s, feeds = session
    path = tmp_path / "events.jsonl"
    rec = ev.record(str(path))
    calls = []

    def bad(e):
        calls.append(e)
        raise RuntimeError("callback failure must not break the run")

    sub = ev.subscribe(bad, kinds=["kernel"])
    try:
        y = s.run(None, feeds)[0]
    finally:
        ev.unsubscribe(sub)
        ev.unsubscribe(rec)
    assert np.all(y == 64.0) and len(calls) == 2
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert [x["type"] for x in lines].count("kernel") == 2
    with pytest.raises(sdx.InvalidArgument):
        ev.subscribe(print, kinds=["bogus"])
    with pytest.raises(sdx.InvalidArgument):
        ev.subscribe(42)
