"""sdx's OrtValue, devices, memory infos, arena settings and sparse tensors (python/sdx/_ortvalue.py),
as onnxruntime's Python API defines them."""
import numpy as np
import pytest

import sdx
import sdx.capi as C
from ort_models import W, mul_model


def test_ortvalue_shares_numpy_memory_and_describes_itself():
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    v = sdx.OrtValue.ortvalue_from_numpy(x)
    assert v.data_ptr() == x.ctypes.data  # zero copy
    assert (v.device_name(), v.shape(), v.data_type(), v.element_type()) == ("cpu", [3, 2], "tensor(float)", 1)
    assert v.is_tensor() and not v.is_sparse_tensor() and v.has_value()
    assert v.tensor_size_in_bytes() == 24
    assert np.asarray(v).ctypes.data == x.ctypes.data
    assert np.asarray(v, dtype=np.float64).dtype == np.float64
    v.update_inplace(np.ones((3, 2), np.float32))
    assert x.sum() == 6.0
    with pytest.raises(RuntimeError, match="update_inplace"):
        v.update_inplace(np.ones((2, 2), np.float32))


def test_ortvalue_on_another_device_is_refused():
    with pytest.raises(RuntimeError, match="device 'cuda'.*CPU"):
        sdx.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32), "cuda", 0)
    with pytest.raises(RuntimeError, match="unknown device type 'tpu'"):
        sdx.OrtValue.ortvalue_from_numpy(np.zeros(2, np.float32), "tpu", 0)


def test_ortvalue_with_onnx_type_and_shape_and_type():
    v = sdx.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros((2, 2), np.int32), 6)
    assert v.element_type() == 6 and v.shape() == [2, 2]
    with pytest.raises(RuntimeError, match="cannot hold ONNX element type 7"):
        sdx.OrtValue.ortvalue_from_numpy_with_onnx_type(np.zeros(2, np.int32), 7)
    e = sdx.OrtValue.ortvalue_from_shape_and_type([4, 5], np.int64)
    assert e.shape() == [4, 5] and e.data_type() == "tensor(int64)"


def test_ortvalue_runs_and_run_with_ort_values():
    sess = sdx.InferenceSession(mul_model().SerializeToString())
    x = np.arange(6, dtype=np.float32).reshape(3, 2)
    v = sdx.OrtValue.ortvalue_from_numpy(x)
    (y,) = sess.run(["Y"], {"X": v})
    np.testing.assert_array_equal(y, x * W)
    vect = sess._sess.run_with_ort_values({"X": v._get_c_value()}, ["Y"], sdx.RunOptions())
    assert isinstance(vect, C.OrtValueVector) and vect[0].shape() == [3, 2]
    outs = sess.run_with_ort_values(["Y"], {"X": v})
    np.testing.assert_array_equal(outs[0].numpy(), x * W)


def test_dlpack_round_trips_without_copies():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    v = sdx.OrtValue.ortvalue_from_numpy(x)
    cap = v._ortvalue.to_dlpack()
    assert not C.is_dlpack_uint8_tensor(cap)
    w = C.OrtValue.from_dlpack(cap, False)
    assert w.data_ptr() == v.data_ptr()
    assert v.__dlpack_device__() == (1, 0)
    assert sdx.OrtValue.from_dlpack(v).data_ptr() == v.data_ptr()
    assert C.is_dlpack_uint8_tensor(np.zeros(3, np.uint8).__dlpack__())
    b = sdx.OrtValue.from_dlpack(sdx.OrtValue.ortvalue_from_numpy(np.array([True, False])))
    assert b.numpy().dtype == np.bool_
    z = C.OrtValue.from_dlpack(np.zeros((1, 8, 0, 128), np.float32).__dlpack__(), False)
    assert z.shape() == [1, 8, 0, 128]
    with pytest.raises(TypeError, match="DLPack"):
        sdx.OrtValue.from_dlpack(42)


def test_devices_memory_infos_and_arena_config():
    cpu = sdx.OrtDevice.make("cpu", 0)
    assert (cpu.device_id(), cpu.device_type(), cpu.device_vendor_id(), cpu.device_mem_type()) == (0, 0, 0, 0)
    assert sdx.OrtDevice.make("cuda", 0).device_vendor_id() == sdx.OrtDeviceVendorId.NVIDIA == 0x10DE
    info = sdx.OrtMemoryInfo("Cpu", sdx.OrtAllocatorType.ORT_ARENA_ALLOCATOR, 0, sdx.OrtMemType.DEFAULT)
    assert (info.name, info.device_id, info.mem_type, info.device_mem_type) == ("Cpu", 0, 0, 0)
    v2 = sdx.OrtMemoryInfo.create_v2("T", sdx.OrtMemoryInfoDeviceType.CPU, 0, 0, sdx.OrtDeviceMemoryType.DEFAULT, 128,
                                     sdx.OrtAllocatorType.ORT_ARENA_ALLOCATOR)
    assert v2.allocator_type == sdx.OrtAllocatorType.ORT_ARENA_ALLOCATOR and v2.alignment == 128
    cfg = sdx.OrtArenaCfg(8, 0, 4, 2)
    assert (cfg.max_mem, cfg.arena_extend_strategy, cfg.initial_chunk_size_bytes, cfg.max_dead_bytes_per_chunk) == (8, 0, 4, 2)
    assert sdx.OrtArenaCfg({"max_power_of_two_extend_bytes": 17}).max_power_of_two_extend_bytes == 17
    with pytest.raises(ValueError, match="invalid OrtArenaCfg option 'max_meme'"):
        sdx.OrtArenaCfg({"max_meme": 1})
    sdx.create_and_register_allocator(info, None)
    with pytest.raises(RuntimeError, match="CUDAExecutionProvider.*not available"):
        sdx.create_and_register_allocator_v2("CUDAExecutionProvider", info, {}, cfg)


def test_sparse_tensors_coo_and_csr():
    cpu = sdx.OrtDevice.make("cpu", 0)
    values, indices = np.array([1.0, 2.0, 3.0], np.float32), np.array([3, 5, 15], np.int64)
    st = sdx.SparseTensor.sparse_coo_from_numpy([9, 9], values, indices, cpu)
    assert st.format() == sdx.OrtSparseFormat.ORT_SPARSE_COO and st.dense_shape() == [9, 9]
    assert st.data_type() == "sparse_tensor(float)"
    assert not st.values().flags.writeable and not st.as_coo_view().indices().flags.writeable
    v = sdx.OrtValue.ort_value_from_sparse_tensor(st)
    assert v.is_sparse_tensor() and np.array_equal(v.as_sparse_tensor().values(), values)
    with pytest.raises(RuntimeError, match="not available"):
        st.to_cuda(sdx.OrtDevice.make("cuda", 0))
    with pytest.raises(RuntimeError, match="do not fit"):
        sdx.SparseTensor.sparse_coo_from_numpy([9, 9], values, np.array([3, 5, 81], np.int64), cpu)
    csr = sdx.SparseTensor.sparse_csr_from_numpy([9, 9], values, np.array([1, 1, 1], np.int64),
                                                 np.array([0, 1, 2, 3, 3, 3, 3, 3, 3, 3], np.int64), cpu)
    assert csr.format() == sdx.OrtSparseFormat.ORT_SPARSE_CSRC
    assert not csr.as_csrc_view().outer().flags.writeable
    with pytest.raises(RuntimeError, match="CSR indices do not fit"):
        sdx.SparseTensor.sparse_csr_from_numpy([9, 9], values, np.array([1, 1], np.int64), np.zeros(10, np.int64), cpu)
    strings = sdx.SparseTensor.sparse_coo_from_numpy([9, 9], np.array(["a", "b", "c"]), indices, cpu)
    assert strings.data_type() == "sparse_tensor(string)"
