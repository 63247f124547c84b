"""sdx.choose_buckets / choose_buckets_2d (python/sdx/buckets.py over plan/bucket_choice.h): the documented
examples, traces as dicts or lists, plan cost, bad arguments named, and on bench/auto_buckets.py's synthetic
serving trace the automatic choice pads less than the best powers of two with as many buckets."""
import importlib.util
import os

import numpy as np
import pytest

import sdx

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_examples():
    assert sdx.choose_buckets({1: 900, 3: 40, 7: 60}, 2) == {"sizes": [1, 7], "padding": 160.0, "cost": 160.0}
    r = sdx.choose_buckets({1: 900, 3: 40, 7: 60}, 2, power_of_two=True)
    assert r["sizes"] == [1, 8] and r["padding"] == 40 * 5 + 60
    assert sdx.choose_buckets([5, 5, 17, 30], 2)["sizes"] == [5, 30]  # 17 pads 13, not 5 twice by 12
    assert sdx.choose_buckets({1: 1, 100: 1}, 2, plan_cost=200)["sizes"] == [100]
    r = sdx.choose_buckets_2d([(1, 40), (3, 90), (3, 95, 2)], 2, 2)
    assert r == {"first": [1, 3], "second": [40, 95], "padding": 15.0}


@pytest.mark.parametrize("call, msg", [
    (lambda: sdx.choose_buckets([1, -2], 2), "size -2 is not a whole number >= 0"),
    (lambda: sdx.choose_buckets({4: -1}, 2), "negative count"),
    (lambda: sdx.choose_buckets([1, 2], 0), "max_buckets must be a whole number >= 1"),
    (lambda: sdx.choose_buckets([1, 2], 2, plan_cost=-1), "plan_cost must be >= 0"),
    (lambda: sdx.choose_buckets_2d([(1, 2.5)], 2, 2), "size 2.5 is not a whole number"),
    (lambda: sdx.choose_buckets_2d([(1, 2)], 2, True), "max_second must be a whole number >= 1"),
])
def test_bad_arguments(call, msg):
    with pytest.raises(sdx.InvalidArgument, match=msg):
        call()


def test_automatic_buckets_pad_less_than_powers_of_two_on_a_serving_trace():
    spec = importlib.util.spec_from_file_location("auto_buckets", os.path.join(ROOT, "bench", "auto_buckets.py"))
    bench = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(bench)
    calls = np.asarray(bench.synthetic(5000, seed=1))
    for dim in (0, 1):
        for k in (3, 4, 5):
            auto = sdx.choose_buckets(calls[:, dim].tolist(), k)
            pow2 = sdx.choose_buckets(calls[:, dim].tolist(), k, power_of_two=True)
            assert len(auto["sizes"]) <= k and auto["sizes"][-1] == calls[:, dim].max()
            assert auto["padding"] <= pow2["padding"]
    auto = sdx.choose_buckets_2d(calls.tolist(), 4, 4)
    pow2 = sdx.choose_buckets_2d(calls.tolist(), 4, 4, power_of_two=True)
    assert bench.waste_2d(calls, auto["first"], auto["second"]) < bench.waste_2d(calls, pow2["first"], pow2["second"])
