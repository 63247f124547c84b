"""The machine figures behind bench/suite.py, through the native module: positive and quick (never timed)."""
import math

from sdx import _sdx


def test_fma_isa_name():
    assert _sdx.fma_isa_name() in ("avx512f", "avx2+fma", "scalar")


def test_fma_peak_positive():
    for threads in (1, 2):
        gflops = _sdx.measure_fma_peak(threads, 0.01, 1)
        assert gflops > 0 and math.isfinite(gflops)


def test_memory_bandwidth_positive():
    gbs = _sdx.measure_memory_bandwidth(2, 8 << 20, 1)
    assert gbs > 0 and math.isfinite(gbs)
