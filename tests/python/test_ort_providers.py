"""Providers and module information as onnxruntime reports them (python/sdx/_providers.py,
_module_info.py): CPU is the one provider; unknown names are errors, unavailable ones warn."""
import numpy as np
import pytest

import sdx
import sdx.capi as C
from ort_models import mul_model


def test_provider_lists():
    assert sdx.get_available_providers() == ["CPUExecutionProvider"]
    assert sdx.get_all_providers()[-1] == "CPUExecutionProvider"
    assert "CUDAExecutionProvider" in sdx.get_all_providers()


def test_unavailable_provider_warns_and_runs_on_cpu():
    with pytest.warns(RuntimeWarning, match="CUDAExecutionProvider is not available"):
        sess = sdx.InferenceSession(mul_model().SerializeToString(), providers=["CUDAExecutionProvider"])
    assert sess.get_providers() == ["CPUExecutionProvider"]
    assert sess.run(None, {"X": np.ones((3, 2), np.float32)})[0].shape == (3, 2)


def test_unknown_provider_is_an_error():
    with pytest.raises(RuntimeError, match="Unknown Provider Type: InvalidProvider"):
        sdx.InferenceSession(mul_model().SerializeToString(), providers=["InvalidProvider"])
    sess = sdx.InferenceSession(mul_model().SerializeToString(), providers=["CPUExecutionProvider"])
    with pytest.raises(RuntimeError, match="Unknown Provider Type: InvalidProvider"):
        sess.set_providers(["InvalidProvider"])
    sess.set_providers(["CPUExecutionProvider"], [{"x": 1}])
    assert sess.get_provider_options() == {"CPUExecutionProvider": {"x": "1"}}


def test_check_and_normalize_provider_args():
    f = C.check_and_normalize_provider_args
    valid = ["a", "b", "c"]
    assert f(None, None, valid) == ([], [])
    assert f([("a", {1: 2}), "b"], None, valid) == (["a", "b"], [{"1": "2"}, {}])
    assert f(["a", "b"], [{1: 2}, {}], valid) == (["a", "b"], [{"1": "2"}, {}])
    with pytest.warns(UserWarning, match="Duplicate provider 'a'"):
        assert f(["a", "b", "a"], [{"x": 1}, {}, {"y": 2}], valid) == (["a", "b"], [{"x": "1"}, {}])
    for providers, options in ((3, None), ([3], None), (["a"], 3), (["a"], ["not dict"]), (["a", "b"], [{1: 2}]),
                               ([("a", {1: 2})], [{3: 4}])):
        with pytest.raises(ValueError):
            f(providers, options, valid)


def test_module_information():
    assert sdx.get_version_string() == sdx.__version__
    info = sdx.get_build_info()
    assert info.startswith("Build Info: sdx " + sdx.__version__) and "CPU kernels:" in info
    assert sdx.get_device() == "CPU"
    sdx.enable_telemetry_events()
    sdx.disable_telemetry_events()


# The callback that raises is reported through sys.unraisablehook, by design.
@pytest.mark.filterwarnings("ignore::pytest.PytestUnraisableExceptionWarning")
def test_logger_callback_receives_session_records():
    records = []
    sdx.set_default_logger_callback(lambda *r: records.append(r), severity=0)
    try:
        sdx.InferenceSession(mul_model().SerializeToString())
        assert records, "no record reached the callback"
        sev, category, logid, where, message = records[-1]
        assert isinstance(sev, int) and category == "session" and "graph 'mul'" in message
        for bad in (5, -1):
            with pytest.raises(RuntimeError, match="severity"):
                sdx.set_default_logger_callback(records.append, severity=bad)
        with pytest.raises(RuntimeError, match="callable"):
            sdx.set_default_logger_callback("not a callable")

        def raising(*_):
            raise ValueError("from the callback")

        sdx.set_default_logger_callback(raising, severity=0)
        sdx.InferenceSession(mul_model().SerializeToString())  # reported, not raised
    finally:
        sdx.set_default_logger_callback(None)
        sdx.set_default_logger_severity(2)
    count = len(records)
    sdx.InferenceSession(mul_model().SerializeToString())
    assert len(records) == count
