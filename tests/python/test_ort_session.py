"""InferenceSession features of onnxruntime's API (python/sdx/_session.py and the engine behind them):
run_async, RunOptions.terminate, IOBinding, input conversion, profiling, model edits at load, the
optimized model file, graph assignment info."""
import json
import os
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx
import sdx.profiling
from ort_models import W, external_pads_model, free_dims_model, loop_model, mul_model

X = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]], np.float32)


@pytest.fixture
def mul_sess():
    return sdx.InferenceSession(mul_model().SerializeToString())


def test_run_async_calls_back_with_outputs_and_errors(mul_sess):
    done = threading.Event()
    got = []
    mul_sess.run_async(["Y"], {"X": X}, lambda res, data, err: (got.append((res, data, err)), done.set()), 123)
    assert done.wait(10)
    res, data, err = got[0]
    assert err == "" and data == 123
    np.testing.assert_array_equal(res[0], X * W)
    done.clear()
    mul_sess.run_async(["Y"], {"X": X[:2]}, lambda res, data, err: (got.append((res, data, err)), done.set()), None)
    assert done.wait(10)
    assert got[1][0] == [] and "dimension 0 must be 3" in got[1][2]


def test_terminate_stops_a_long_run_and_the_session_recovers():
    sess = sdx.InferenceSession(loop_model(2_000_000).SerializeToString())
    ro = sdx.RunOptions()
    threading.Timer(0.3, lambda: setattr(ro, "terminate", True)).start()
    t0 = time.perf_counter()
    with pytest.raises(sdx.Fail, match="terminate flag"):
        sess.run(None, {"x": np.zeros(64, np.float32)}, ro)
    assert time.perf_counter() - t0 < 20
    ro.terminate = False
    short = sdx.InferenceSession(loop_model(5).SerializeToString())
    (y,) = short.run(None, {"x": np.zeros(64, np.float32)}, ro)
    np.testing.assert_array_equal(y, np.full(64, 5, np.float32))
    ro.terminate = True
    with pytest.raises(sdx.Fail, match="terminate flag"):
        short.run(None, {"x": np.zeros(64, np.float32)}, ro)
    (y,) = short.run(None, {"x": np.ones(64, np.float32)})  # no flag: the plan still runs right
    np.testing.assert_array_equal(y, np.full(64, 6, np.float32))


def test_io_binding(mul_sess):
    b = mul_sess.io_binding()
    b.bind_cpu_input("X", X)
    b.bind_output("Y")
    mul_sess.run_with_iobinding(b)
    np.testing.assert_array_equal(b.copy_outputs_to_cpu()[0], X * W)
    out = np.zeros((3, 2), np.float32)
    b.bind_ortvalue_output("Y", sdx.OrtValue.ortvalue_from_numpy(out))
    mul_sess.run_with_iobinding(b)
    np.testing.assert_array_equal(out, X * W)
    wrong = np.zeros((2, 2), np.float32)
    b.bind_output("Y", "cpu", 0, np.float32, [2, 2], wrong.ctypes.data)
    with pytest.raises(RuntimeError, match=r"output 'Y' is float32\[3, 2\] but the bound buffer is float32\[2, 2\]"):
        mul_sess.run_with_iobinding(b)
    with pytest.raises(RuntimeError, match="not available"):
        b.bind_output("Y", "cuda", 0)
    b.clear_binding_outputs()
    with pytest.raises(RuntimeError, match="no output is bound"):
        mul_sess.run_with_iobinding(b)


def test_lists_scalars_and_read_only_arrays(mul_sess):
    np.testing.assert_array_equal(mul_sess.run([], {"X": X.tolist()})[0], X * W)
    ro = np.frombuffer(X.tobytes(), np.float32).reshape(3, 2)
    assert not ro.flags.writeable
    np.testing.assert_array_equal(mul_sess.run(None, {"X": ro})[0], X * W)
    np.testing.assert_array_equal(mul_sess.run(None, {"X": X[:, [1, 0]][:, [1, 0]]})[0], X * W)  # not contiguous
    with pytest.raises(sdx.InvalidArgument, match="expected element type float but got double"):
        mul_sess.run(None, {"X": X.astype(np.float64)})  # arrays are not converted silently


def test_missing_inputs_message_names_them_as_onnxruntime_does():
    g = helper.make_graph([helper.make_node("And", ["a", "b"], ["y"])], "and",
                          [helper.make_tensor_value_info(n, TensorProto.BOOL, [2]) for n in ("a", "b")],
                          [helper.make_tensor_value_info("y", TensorProto.BOOL, [2])])
    sess = sdx.InferenceSession(helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    with pytest.raises(ValueError, match=r"Required inputs \(\['a'\]\) are missing from input feed \(\['b'\]\)"):
        sess.run([], {"b": np.ones(2, bool)})


def test_memory_infos_and_metadata(mul_sess):
    assert len(mul_sess.get_input_memory_infos()) == 1 and mul_sess.get_input_memory_infos()[0].name == "Cpu"
    assert len(mul_sess.get_output_memory_infos()) == 1 and mul_sess.get_input_epdevices() == [None]
    assert mul_sess.get_modelmeta().graph_description == ""


def test_profiling_writes_onnxruntime_json(tmp_path):
    so = sdx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "prof_")
    sess = sdx.InferenceSession(mul_model().SerializeToString(), so)
    start = sess.get_profiling_start_time_ns()
    assert abs(start - time.time_ns()) < 60e9
    for _ in range(3):
        sess.run([], {"X": X})
    path = sess.end_profiling()
    assert path.startswith(str(tmp_path / "prof_")) and path.endswith(".json")
    lines = open(path).read().splitlines()
    assert lines[0] == "[" and lines[-1] == "]"
    events = json.loads("\n".join(lines))
    for e in events:
        assert {"cat", "pid", "tid", "dur", "ts", "ph", "name", "args"} <= set(e) and e["ph"] == "X"
    names = [e["name"] for e in events]
    assert names.count("model_run") == 3 and "model_loading_uri" in names
    nodes = [e for e in events if e["cat"] == "Node"]
    assert nodes and all(e["args"]["provider"] == "CPUExecutionProvider" for e in nodes)
    assert sess.end_profiling() == ""  # profiling ended
    assert sdx.profiling.mode() == "disabled"


def test_free_dimension_overrides():
    so = sdx.SessionOptions()
    so.add_free_dimension_override_by_name("Dim1", 4)
    so.add_free_dimension_override_by_denotation("DATA_CHANNEL", 6)
    sess = sdx.InferenceSession(free_dims_model().SerializeToString(), so)
    assert sess.get_inputs()[0].shape == [4, 6, 5]
    with pytest.raises(sdx.InvalidArgument, match="dimension 0 must be 4"):
        sess.run(None, {"x": np.zeros((3, 6, 5), np.float32)})
    with pytest.raises(ValueError, match="non-negative int"):
        so.add_free_dimension_override_by_name("Dim1", -1)


def test_add_initializer_replaces_the_models_value():
    so = sdx.SessionOptions()
    w2 = np.array([[2.0, 1.0], [4.0, 3.0], [6.0, 5.0]], np.float32)
    so.add_initializer("W", sdx.OrtValue.ortvalue_from_numpy(w2))
    (y,) = sdx.InferenceSession(mul_model().SerializeToString(), so).run(["Y"], {"X": X})
    np.testing.assert_array_equal(y, X * w2)
    bad = sdx.SessionOptions()
    bad.add_initializer("W", np.zeros((2, 2), np.float32))
    with pytest.raises(sdx.InvalidArgument, match=r"initializer 'W'.*float\[2, 2\].*declares float\[3, 2\]"):
        sdx.InferenceSession(mul_model().SerializeToString(), bad)
    missing = sdx.SessionOptions()
    missing.add_initializer("V", w2)
    with pytest.raises(sdx.InvalidArgument, match="supplied for 'V'.*no initializer of that name"):
        sdx.InferenceSession(mul_model().SerializeToString(), missing)


def test_external_initializers_from_memory(tmp_path):
    model = external_pads_model("Pads_not_on_disk.bin")
    path = tmp_path / "m.onnx"
    path.write_bytes(model.SerializeToString())
    with pytest.raises(sdx.SdxError, match="Pads_not_on_disk.bin"):
        sdx.InferenceSession(str(path))
    pads = np.array([0, 0, 1, 1], np.int64)
    so = sdx.SessionOptions()
    so.add_external_initializers(["pads"], [sdx.OrtValue.ortvalue_from_numpy(pads)])
    (y,) = sdx.InferenceSession(str(path), so).run(None, {"X": np.ones((2, 2), np.float32)})
    assert y.shape == (3, 3)
    so = sdx.SessionOptions()
    so.add_external_initializers_from_files_in_memory(["Pads_not_on_disk.bin"], [pads.tobytes()], [32])
    (y,) = sdx.InferenceSession(model.SerializeToString(), so).run(None, {"X": np.ones((2, 2), np.float32)})
    assert y.shape == (3, 3)
    short = sdx.SessionOptions()
    short.add_external_initializers_from_files_in_memory(["Pads_not_on_disk.bin"], [pads.tobytes()[:16]], [16])
    with pytest.raises(sdx.SdxError, match="outside the in-memory file 'Pads_not_on_disk.bin'"):
        sdx.InferenceSession(model.SerializeToString(), short)


def test_optimized_model_file_round_trips(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    rng = np.random.default_rng(0)
    w = rng.standard_normal((64, 64)).astype(np.float32)
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w"], ["h"]), helper.make_node("Relu", ["h"], ["y"])],
                          "mm", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 64])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 64])],
                          [numpy_helper.from_array(w, "w")])
    model = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()
    so = sdx.SessionOptions()
    so.optimized_model_filepath = str(tmp_path / "sub" / "opt.onnx")
    os.mkdir(tmp_path / "sub")
    so.add_session_config_entry("session.optimized_model_external_initializers_file_name", "opt.bin")
    so.add_session_config_entry("session.optimized_model_external_initializers_min_size_in_bytes", "100")
    x = rng.standard_normal((4, 64)).astype(np.float32)
    (want,) = sdx.InferenceSession(model, so).run(None, {"x": x})
    assert (tmp_path / "sub" / "opt.bin").stat().st_size >= w.nbytes
    reloaded = onnx.load(str(tmp_path / "sub" / "opt.onnx"), load_external_data=False)
    assert any(p.key == "sdx.node_opsets" for p in reloaded.metadata_props)
    (got,) = sdx.InferenceSession(str(tmp_path / "sub" / "opt.onnx")).run(None, {"x": x})
    np.testing.assert_array_equal(got, want)
    bad = sdx.SessionOptions()
    bad.optimized_model_filepath = str(tmp_path / "o.onnx")
    bad.add_session_config_entry("session.optimized_model_external_initializers_file_name", "../escape.bin")
    with pytest.raises(sdx.InvalidArgument, match="must be a relative name"):
        sdx.InferenceSession(model, bad)


def test_graph_assignment_info(mul_sess):
    with pytest.raises(sdx.Fail, match="record_ep_graph_assignment_info"):
        mul_sess.get_provider_graph_assignment_info()
    so = sdx.SessionOptions()
    so.add_session_config_entry("session.record_ep_graph_assignment_info", "1")
    info = sdx.InferenceSession(mul_model().SerializeToString(), so).get_provider_graph_assignment_info()
    assert [(s.ep_name, [(n.domain, n.op_type, n.name) for n in s.get_nodes()]) for s in info] == \
        [("CPUExecutionProvider", [("", "Mul", "mul_0")])]


def test_session_options_from_model_metadata(monkeypatch):
    model = mul_model()
    config = {"session_options": {"inter_op_num_threads": 5, "intra_op_num_threads": 2, "enable_profiling": 1}}
    model.metadata_props.add(key="ort_config", value=json.dumps(config))
    monkeypatch.setenv("ORT_LOAD_CONFIG_FROM_MODEL", "1")
    sess = sdx.InferenceSession(model.SerializeToString())
    so = sess.get_session_options()
    assert (so.inter_op_num_threads, so.intra_op_num_threads, so.enable_profiling) == (5, 2, True)
    os.remove(sess.end_profiling())
    model.metadata_props[0].value = json.dumps({"session_options": {"intra_op_threads": 2}})
    with pytest.raises(AttributeError, match="intra_op_threads"):
        sdx.InferenceSession(model.SerializeToString())
