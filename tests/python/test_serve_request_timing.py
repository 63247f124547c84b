"""`sdx serve`'s whole server-side time per ModelInfer (src/serve/request_timing.h, a gRPC server
interceptor): every successful call is observed once in sdx_server_request_seconds and
sdx_server_overhead_seconds of its model, failed calls are not, the span holds the handler's (so it is never
shorter than sdx_request_duration_seconds), it grows with the request's size (protobuf parsing and
serialization are inside), and SDX_SERVE_NO_REQUEST_TIMING=1 leaves the interceptor out."""
import os
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

from test_serve import grpcclient, infer_input, start_server, stop_server, wait_ready, write_model  # noqa: F401 (skips)
from test_serve_admission import free_port, sample, scrape
from tritonclient.utils import InferenceServerException

WIDTH = 1024


def relu_model():
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "relu",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", WIDTH])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", WIDTH])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def serve(tmp_path_factory, env=None):
    root = tmp_path_factory.mktemp("timing_models")
    write_model(root, "relu", 1, relu_model())
    metrics_port = free_port()
    log_path = root / "server.log"
    saved = dict(os.environ)
    os.environ.update(env or {})
    try:
        proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port))
    finally:
        os.environ.clear()
        os.environ.update(saved)
    client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
    wait_ready(client, log_path)
    return proc, client, metrics_port


def totals(metrics_port, served=0):
    """The metrics once the interceptor has observed `served` successful calls in all. It observes a call when
    gRPC destroys the call, after the response has gone out, so the client can hold a response whose call is
    not counted yet: wait (up to 10 s) for the last of its three histograms rather than race it."""
    deadline = time.monotonic() + 10
    while True:
        text = scrape(metrics_port)
        t = {name: sample(text, name, model="relu") for name in (
            "sdx_server_request_seconds_count", "sdx_server_request_seconds_sum", "sdx_server_overhead_seconds_count",
            "sdx_server_send_seconds_count", "sdx_request_duration_seconds_count", "sdx_request_duration_seconds_sum")}
        if t["sdx_server_send_seconds_count"] >= served or time.monotonic() > deadline:
            return t
        time.sleep(0.01)


def diff(after, before):
    return {k: after[k] - before[k] for k in after}


def run(client, rows, n):
    x = np.random.default_rng(rows).standard_normal((rows, WIDTH)).astype(np.float32)
    for _ in range(n):
        out = client.infer("relu", [infer_input("x", x)]).as_numpy("y")
        assert out.tobytes() == np.maximum(x, 0).tobytes()


def test_each_successful_call_is_timed_once_and_holds_the_handler(tmp_path_factory):
    proc, client, metrics_port = serve(tmp_path_factory)
    try:
        run(client, 1, 3)  # warm-up: the model's plan is frozen
        before = totals(metrics_port, 3)
        run(client, 1, 20)
        small = diff(totals(metrics_port, 23), before)
        assert small["sdx_server_request_seconds_count"] == 20
        assert small["sdx_server_overhead_seconds_count"] == 20
        assert small["sdx_server_send_seconds_count"] == 20
        assert small["sdx_request_duration_seconds_count"] == 20
        # The interceptor's span holds the handler's, call by call.
        assert small["sdx_server_request_seconds_sum"] >= small["sdx_request_duration_seconds_sum"], small

        # A failed call (a wrong shape) is counted by the handler but not timed by the interceptor.
        before = totals(metrics_port, 23)
        with pytest.raises(InferenceServerException):
            client.infer("relu", [infer_input("x", np.zeros((1, WIDTH + 1), np.float32))])
        failed = diff(totals(metrics_port, 23), before)
        assert failed["sdx_request_duration_seconds_count"] == 1
        assert failed["sdx_server_request_seconds_count"] == 0

        # 1024 rows (4 MiB each way): parsing and serializing them is inside the span, the handler is not
        # charged for it, so the span exceeds the handler's time by far more than for one row.
        run(client, 1024, 2)
        before = totals(metrics_port, 25)
        run(client, 1024, 10)
        big = diff(totals(metrics_port, 35), before)
        assert big["sdx_server_request_seconds_count"] == 10
        gap_small = (small["sdx_server_request_seconds_sum"] - small["sdx_request_duration_seconds_sum"]) / 20
        gap_big = (big["sdx_server_request_seconds_sum"] - big["sdx_request_duration_seconds_sum"]) / 10
        assert gap_big > gap_small + 50e-6, (gap_small, gap_big)
    finally:
        stop_server(proc)


def test_the_kill_switch_leaves_the_interceptor_out(tmp_path_factory):
    proc, client, metrics_port = serve(tmp_path_factory, {"SDX_SERVE_NO_REQUEST_TIMING": "1"})
    try:
        run(client, 1, 5)
        t = totals(metrics_port)
        assert t["sdx_request_duration_seconds_count"] == 5
        assert t["sdx_server_request_seconds_count"] == 0
    finally:
        stop_server(proc)
