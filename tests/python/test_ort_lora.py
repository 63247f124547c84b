"""LoRA adapters in onnxruntime's adapter file format (python/sdx/_lora.py)."""
import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import sdx


def _lora_model():
    """y = x @ (W + A @ B); A and B are inputs with default initializers (the adapter feeds them)."""
    w = numpy_helper.from_array(np.eye(4, dtype=np.float32), "W")
    a = numpy_helper.from_array(np.zeros((4, 2), np.float32), "lora_A")
    b = numpy_helper.from_array(np.zeros((2, 4), np.float32), "lora_B")
    g = helper.make_graph([helper.make_node("MatMul", ["lora_A", "lora_B"], ["ab"]),
                           helper.make_node("Add", ["W", "ab"], ["w2"]), helper.make_node("MatMul", ["x", "w2"], ["y"])],
                          "lora", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 4]),
                                   helper.make_tensor_value_info("lora_A", TensorProto.FLOAT, [4, 2]),
                                   helper.make_tensor_value_info("lora_B", TensorProto.FLOAT, [2, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 4])], [w, a, b])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)], ir_version=9).SerializeToString()


def test_adapter_file_round_trip(tmp_path):
    params = {"p1": np.arange(10, dtype=np.float32).reshape(5, 2), "p2": np.arange(10, dtype=np.int64).reshape(2, 5)}
    fmt = sdx.AdapterFormat()
    fmt.set_adapter_version(3)
    fmt.set_model_version(7)
    fmt.set_parameters({k: sdx.OrtValue.ortvalue_from_numpy(v) for k, v in params.items()})
    path = tmp_path / "a.onnx_adapter"
    fmt.export_adapter(str(path))
    assert path.read_bytes()[4:8] == b"TORT"
    back = sdx.AdapterFormat.read_adapter(str(path))
    assert (back.get_adapter_version(), back.get_model_version()) == (3, 7)
    got = back.get_parameters()
    assert set(got) == set(params)
    for k, v in params.items():
        assert got[k].element_type() == sdx.OrtValue.ortvalue_from_numpy(v).element_type()
        np.testing.assert_array_equal(got[k].numpy(), v)


def test_adapter_files_written_by_onnxruntime_load(tmp_path):
    ort = pytest.importorskip("onnxruntime")
    fmt = ort.AdapterFormat()
    fmt.set_adapter_version(1)
    fmt.set_model_version(1)
    a = np.full((4, 2), 0.5, np.float32)
    fmt.set_parameters({"lora_A": ort.OrtValue.ortvalue_from_numpy(a)})
    path = str(tmp_path / "ort.onnx_adapter")
    fmt.export_adapter(path)
    got = sdx.AdapterFormat.read_adapter(path).get_parameters()
    np.testing.assert_array_equal(got["lora_A"].numpy(), a)


def test_active_adapter_feeds_its_parameters(tmp_path):
    sess = sdx.InferenceSession(_lora_model())
    x = np.ones((4, 4), np.float32)
    np.testing.assert_array_equal(sess.run(None, {"x": x}, sdx.RunOptions())[0], x)
    fmt = sdx.AdapterFormat()
    fmt.set_parameters({"lora_A": np.ones((4, 2), np.float32), "lora_B": np.ones((2, 4), np.float32)})
    path = str(tmp_path / "l.onnx_adapter")
    fmt.export_adapter(path)
    adapter = sdx.LoraAdapter()
    adapter.Load(path)
    ro = sdx.RunOptions()
    ro.add_active_adapter(adapter)
    np.testing.assert_array_equal(sess.run(None, {"x": x}, ro)[0], x @ (np.eye(4) + 2))


def test_corrupt_adapter_files_are_refused(tmp_path):
    bad = tmp_path / "bad.onnx_adapter"
    bad.write_bytes(b"\x08\x00\x00\x00TORT\xff\xff")
    with pytest.raises(RuntimeError, match="corrupt|format version"):
        sdx.AdapterFormat.read_adapter(str(bad))
    bad.write_bytes(b"not an adapter")
    with pytest.raises(RuntimeError, match="not an onnxruntime adapter"):
        sdx.LoraAdapter().Load(str(bad))


def test_mutated_adapter_files_load_or_are_refused_cleanly(tmp_path):
    """A seeded mutation fuzz of the adapter reader: every damaged file loads or raises RuntimeError (never
    another exception, a crash or a hang)."""
    import random

    fmt = sdx.AdapterFormat()
    fmt.set_parameters({"a": np.ones((3, 4), np.float32), "b": np.arange(5, dtype=np.int64)})
    good = tmp_path / "good.onnx_adapter"
    fmt.export_adapter(str(good))
    data = good.read_bytes()
    rng = random.Random(1)
    path = tmp_path / "m.onnx_adapter"
    refused = 0
    for _ in range(600):
        b = bytearray(data)
        for _ in range(rng.randint(1, 8)):
            b[rng.randrange(len(b))] = rng.randrange(256)
        if rng.random() < 0.3:
            b = b[: rng.randrange(len(b))]
        path.write_bytes(bytes(b))
        try:
            sdx.AdapterFormat.read_adapter(str(path))
        except RuntimeError:
            refused += 1
    assert refused > 100  # most mutations are caught, and none escaped as another exception
