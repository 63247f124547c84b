"""`sdx serve --memory-budget` (src/serve/model_cache.h): a budget that holds two of three models, used
through Triton's client (KServe, repository models) and through sdx.remote (sdx.v1 uploads). Evictions and
reloads show in /metrics, an evicted model answers bitwise equal to the in-process sdx.InferenceSession after
its reload, a frequently used model survives while a rarely used one is evicted, an unloaded model is not
reloaded, and a model bigger than the budget gets RESOURCE_EXHAUSTED naming it, its bytes and the budget.

Each model is x [N, 64] -> MatMul 64x128 -> Relu -> MatMul 128x16: 40960 weight bytes (fp32). The budget,
100000 bytes, holds two (81920) and not three; the big one (327680 bytes) fits in none of this size."""
import hashlib
import os
import re
import stat

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

grpcclient = pytest.importorskip("tritonclient.grpc", reason="pip install 'tritonclient[grpc]' (scripts/setup.sh)")
grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")
from tritonclient.utils import InferenceServerException  # noqa: E402

import sdx  # noqa: E402
from sdx.serve import find_server  # noqa: E402
from test_serve import infer_input, start_server, stop_server, wait_ready, write_model  # noqa: E402
from test_serve_admission import free_port, sample, scrape  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

BUDGET = 100000
MODEL_BYTES = (64 * 128 + 128 * 16) * 4  # 40960


def two_layer(seed: int, hidden: int = 128, inputs: int = 64) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w1 = numpy_helper.from_array(rng.standard_normal((inputs, hidden)).astype(np.float32), "w1")
    w2 = numpy_helper.from_array(rng.standard_normal((hidden, 16)).astype(np.float32), "w2")
    g = helper.make_graph([helper.make_node("MatMul", ["x", "w1"], ["h"]), helper.make_node("Relu", ["h"], ["r"]),
                           helper.make_node("MatMul", ["r", "w2"], ["y"])], f"two_layer_{seed}",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["N", inputs])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["N", 16])], [w1, w2])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def big_model() -> onnx.ModelProto:
    return two_layer(99, hidden=1024)  # (64*1024 + 1024*16) * 4 = 327680 bytes


BIG_BYTES = (64 * 1024 + 1024 * 16) * 4


def x_of(seed: int) -> np.ndarray:
    return np.random.default_rng(100 + seed).standard_normal((3, 64)).astype(np.float32)


def local(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    return sdx.InferenceSession(model.SerializeToString()).run(["y"], {"x": x})[0]


def total(text: str, name: str) -> float:
    """The sum of a family's series."""
    return sum(float(line.rsplit(" ", 1)[1]) for line in text.splitlines() if line.startswith(name + "{"))


@pytest.fixture(scope="module")
def kserve(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_models")
    for i in range(3):
        write_model(root, f"m{i}", 1, two_layer(i))
    write_model(root, "big", 1, big_model())
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("cache") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--memory-budget", str(BUDGET))
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, log_path)
        yield client, metrics_port, log_path
    finally:
        stop_server(proc)


def infer(client, name: str, seed: int) -> np.ndarray:
    return client.infer(name, [infer_input("x", x_of(seed))]).as_numpy("y")


def test_budget_holds_two_of_three_and_evicted_models_reload_bitwise(kserve):
    client, metrics_port, _ = kserve
    text = scrape(metrics_port)
    assert sample(text, "sdx_cache_budget_bytes") == BUDGET
    # Loading all three at start evicted one already: only two are held.
    assert sample(text, "sdx_cache_bytes") == 2 * MODEL_BYTES
    assert total(text, "sdx_cache_evictions_total") == 1
    for _ in range(2):  # round-robin over three models with room for two: every call after the first misses
        for i in range(3):
            assert client.is_model_ready(f"m{i}")  # evicted or not
            got = infer(client, f"m{i}", i)
            assert got.tobytes() == local(two_layer(i), x_of(i)).tobytes()
    text = scrape(metrics_port)
    assert total(text, "sdx_cache_misses_total") >= 4
    assert total(text, "sdx_cache_evictions_total") >= 5
    assert sample(text, "sdx_cache_bytes") <= BUDGET
    for i in range(3):
        assert sample(text, "sdx_cache_model_bytes", model=f"m{i}") in (0, MODEL_BYTES)
    # The index says which one is evicted; it stays READY.
    index = client.get_model_repository_index(as_json=True)["models"]
    rows = {m["name"]: m for m in index}
    assert all(rows[f"m{i}"]["state"] == "READY" for i in range(3))
    assert sum("evicted" in rows[f"m{i}"].get("reason", "") for i in range(3)) == 1


def test_a_frequently_used_model_survives_a_rarely_used_one(kserve):
    client, metrics_port, _ = kserve
    for _ in range(30):
        infer(client, "m0", 0)
    infer(client, "m1", 1)  # rare: loaded (m0 stays) or already there
    before = scrape(metrics_port)
    got = infer(client, "m2", 2)  # a miss whichever it is: room for it comes from m1, not m0
    assert got.tobytes() == local(two_layer(2), x_of(2)).tobytes()
    after = scrape(metrics_port)
    assert sample(after, "sdx_cache_evictions_total", model="m0") == sample(before, "sdx_cache_evictions_total",
                                                                            model="m0")
    assert sample(after, "sdx_cache_evictions_total", model="m1") == sample(before, "sdx_cache_evictions_total",
                                                                            model="m1") + 1
    assert sample(after, "sdx_cache_model_bytes", model="m0") == MODEL_BYTES
    assert sample(after, "sdx_cache_model_bytes", model="m1") == 0
    assert sample(after, "sdx_cache_hits_total", model="m0") >= 29  # the first of the 30 may have reloaded it


def test_a_model_bigger_than_the_budget_is_refused(kserve):
    client, metrics_port, _ = kserve
    with pytest.raises(InferenceServerException) as e:
        client.load_model("big")
    assert e.value.status() == "StatusCode.RESOURCE_EXHAUSTED"
    assert e.value.message() == (f"model 'big' needs {BIG_BYTES} bytes: more than the whole memory budget of "
                                 f"{BUDGET} bytes (--memory-budget)")
    assert not client.is_model_ready("big")
    # Nothing was evicted for it: the two models held are still held.
    assert sample(scrape(metrics_port), "sdx_cache_bytes") == 2 * MODEL_BYTES
    assert sample(scrape(metrics_port), "sdx_cache_refusals_total", model="big") >= 2  # at start, and now


def test_an_unloaded_model_is_not_reloaded_on_demand(kserve):
    client, metrics_port, _ = kserve
    client.unload_model("m1")
    before = sample(scrape(metrics_port), "sdx_cache_misses_total", model="m1")
    assert not client.is_model_ready("m1")
    with pytest.raises(InferenceServerException) as e:
        infer(client, "m1", 1)
    assert e.value.status() == "StatusCode.NOT_FOUND"
    assert "'m1' is not loaded" in e.value.message()
    assert sample(scrape(metrics_port), "sdx_cache_misses_total", model="m1") == before
    client.load_model("m1")  # loaded again by the API: served again
    assert infer(client, "m1", 1).tobytes() == local(two_layer(1), x_of(1)).tobytes()


# sdx.v1 uploads: an empty repository, the same budget; uploaded models are kept on disk for their reloads.

@pytest.fixture(scope="module")
def uploads(tmp_path_factory):
    root = tmp_path_factory.mktemp("cache_uploads")
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("cache_remote") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--memory-budget", "100000")
    try:
        m = re.search(r"uploads kept in (\S+)", open(log_path).read())
        assert m, open(log_path).read()
        yield f"127.0.0.1:{port}", metrics_port, m.group(1), proc
    finally:
        stop_server(proc)
    assert not os.path.exists(m.group(1)), "the private cache folder outlived the server"


def fp_of(model: onnx.ModelProto) -> str:
    return "sha256:" + hashlib.sha256(model.SerializeToString()).hexdigest()


def test_uploads_are_evicted_kept_on_disk_and_reload_bitwise(uploads):
    address, metrics_port, cache_dir, _ = uploads
    assert stat.S_IMODE(os.stat(cache_dir).st_mode) == 0o700
    models = [two_layer(10 + i) for i in range(3)]
    with sdx.remote.Connection(address) as conn:
        sessions = [sdx.remote.InferenceSession(conn, m.SerializeToString()) for m in models]
        assert all(s.uploaded for s in sessions)
        text = scrape(metrics_port)
        assert sample(text, "sdx_cache_bytes") == 2 * MODEL_BYTES
        assert total(text, "sdx_cache_evictions_total") == 1
        evicted = [fp_of(m) for m in models if sample(text, "sdx_cache_model_bytes", model=fp_of(m)) == 0]
        assert evicted == [fp_of(models[0])]
        for m in models:  # every upload kept, private to the server
            path = os.path.join(cache_dir, fp_of(m)[len("sha256:"):] + ".onnx")
            assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
            assert open(path, "rb").read() == m.SerializeToString()
        # The evicted one is still registered: a new client does not upload it again.
        again = sdx.remote.InferenceSession(conn, models[0].SerializeToString())
        assert not again.uploaded
        for _ in range(2):
            for i, (m, s) in enumerate(zip(models, sessions)):
                got = s.run(["y"], {"x": x_of(i)})[0]
                assert got.tobytes() == local(m, x_of(i)).tobytes()
        text = scrape(metrics_port)
        assert total(text, "sdx_cache_misses_total") >= 4
        assert sample(text, "sdx_cache_bytes") <= 100000
        # Frequent beats rare here too.
        for _ in range(30):
            sessions[0].run(["y"], {"x": x_of(0)})
        sessions[1].run(["y"], {"x": x_of(1)})
        before = scrape(metrics_port)
        sessions[2].run(["y"], {"x": x_of(2)})
        after = scrape(metrics_port)
        for i, moved in ((0, 0), (1, 1)):
            fp = fp_of(models[i])
            assert sample(after, "sdx_cache_evictions_total", model=fp) == \
                sample(before, "sdx_cache_evictions_total", model=fp) + moved


def test_an_upload_bigger_than_the_budget_is_refused(uploads):
    address, metrics_port, cache_dir, _ = uploads
    from sdx._proto import remote_pb2, remote_pb2_grpc

    data = big_model().SerializeToString()
    channel = grpc.insecure_channel(address)
    try:
        stub = remote_pb2_grpc.RemoteServiceStub(channel)
        with pytest.raises(grpc.RpcError) as e:
            stub.RegisterModel(iter([remote_pb2.ModelChunk(data=data)]), timeout=60)
        assert e.value.code() == grpc.StatusCode.RESOURCE_EXHAUSTED
        assert e.value.details() == (f"uploaded model {fp_of(big_model())} needs {BIG_BYTES} bytes: more than the "
                                     f"whole memory budget of {BUDGET} bytes (--memory-budget)")
        assert not stub.HasModel(remote_pb2.HasModelRequest(fingerprint=fp_of(big_model())), timeout=30).has_model
    finally:
        channel.close()
    assert not os.path.exists(os.path.join(cache_dir, fp_of(big_model())[len("sha256:"):] + ".onnx"))
    # sdx.remote says so too (RESOURCE_EXHAUSTED is retried; one attempt here).
    with pytest.raises(sdx.ResourceExhausted, match=re.escape(f"needs {BIG_BYTES} bytes: more than the whole "
                                                              f"memory budget of {BUDGET} bytes")):
        sdx.remote.InferenceSession(address, data, max_attempts=1)


def test_the_launcher_reads_byte_sizes_as_the_server_does():
    import argparse

    from sdx.serve import byte_size

    assert [byte_size(t) for t in ("0", "1000", "512K", "512M", "2G", "3T", "2GiB")] == \
        [0, 1000, 512 << 10, 512 << 20, 2 << 30, 3 << 40, 2 << 30]
    for bad in ("", "-1", "1.5G", "2g", "G", "12X", "9999999999T"):
        with pytest.raises(argparse.ArgumentTypeError, match="is not a byte count"):
            byte_size(bad)
