"""`sdx serve` dynamic batching (src/serve/batcher.h) against tritonclient.grpc: a model folder with a
config.json batches concurrent single-row requests into one run, each caller gets exactly the rows an
unbatched in-process sdx.InferenceSession gives it (bitwise), the batch-size histogram shows batches of more
than one row, batches padded up to a preferred size (pad_to_preferred_batch_size) give each caller its own
rows bitwise too, and a bad config.json fails its model's load with the reason in the repository index."""
import json
import threading
import time

import numpy as np
import pytest
from onnx import TensorProto, helper

from models import mlp_model
from test_serve import grpcclient, infer_input, start_server, stop_server, wait_ready, write_model  # noqa: F401 (skips)
from test_serve_admission import free_port, sample, scrape

import sdx  # noqa: E402

CLIENTS = 16


def fixed_batch_model():
    """Relu on x: [1, 4]: its leading dimension is fixed, so it cannot be batched."""
    g = helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "fixed",
                          [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 4])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 4])])
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])


def write_config(root, name, config):
    (root / name / "config.json").write_text(config if isinstance(config, str) else json.dumps(config))


@pytest.fixture(scope="module")
def batching_server(tmp_path_factory):
    root = tmp_path_factory.mktemp("batching_models")
    write_model(root, "mlp", 1, mlp_model())
    # A long delay and one preferred size of all the clients: the batch runs when the 16 are there.
    write_config(root, "mlp", {"max_batch_size": CLIENTS, "dynamic_batching": {
        "preferred_batch_size": [CLIENTS], "max_queue_delay_microseconds": 2_000_000}})
    # Padded: a batch of 5 rows (flushed by the delay, below the largest preferred size) runs as 8.
    write_model(root, "mlp_pad", 1, mlp_model())
    write_config(root, "mlp_pad", {"max_batch_size": CLIENTS, "dynamic_batching": {
        "preferred_batch_size": [8, CLIENTS], "max_queue_delay_microseconds": 300_000,
        "pad_to_preferred_batch_size": True}})
    write_model(root, "fixed", 1, fixed_batch_model())
    write_config(root, "fixed", {"max_batch_size": 8})
    write_model(root, "badjson", 1, mlp_model())
    write_config(root, "badjson", '{"max_batch_size": 8, "dynamic_batching": {"max_queue_delay_microseconds": -5}}')
    metrics_port = free_port()
    log_path = tmp_path_factory.mktemp("batching") / "server.log"
    proc, port = start_server(root, log_path, "--metrics-port", str(metrics_port), "--max-queue", "64")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, log_path)
        yield root, port, metrics_port, client
    finally:
        stop_server(proc)


def test_concurrent_single_rows_are_batched_and_each_gets_its_rows(batching_server):
    root, port, metrics_port, _ = batching_server
    local = sdx.InferenceSession(str(root / "mlp" / "1" / "model.onnx"))
    rng = np.random.default_rng(7)
    xs = [rng.standard_normal((1, 4)).astype(np.float32) for _ in range(CLIENTS)]
    clients = [grpcclient.InferenceServerClient(f"127.0.0.1:{port}") for _ in range(CLIENTS)]
    results = [None] * CLIENTS
    errors = []
    start = threading.Barrier(CLIENTS)

    def call(i):
        try:
            start.wait()
            r = clients[i].infer("mlp", [infer_input("x", xs[i])], request_id=f"row-{i}")
            results[i] = (r.get_response().id, r.as_numpy("probs"), r.as_numpy("logits"))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(CLIENTS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for i, x in enumerate(xs):
        probs, logits = local.run(["probs", "logits"], {"x": x})  # unbatched, in process
        rid, got_probs, got_logits = results[i]
        assert rid == f"row-{i}"
        assert got_probs.shape == (1, 2) and got_logits.shape == (1, 2)
        assert got_probs.tobytes() == probs.tobytes()
        assert got_logits.tobytes() == logits.tobytes()

    text = scrape(metrics_port)
    batches = sample(text, "sdx_batch_size_count", model="mlp")
    rows = sample(text, "sdx_batch_size_sum", model="mlp")
    singles = sample(text, "sdx_batch_size_bucket", model="mlp", le="1")
    assert rows == CLIENTS
    assert batches < CLIENTS and batches - singles >= 1, text  # at least one batch of more than one row
    assert sample(text, "sdx_batch_queue_delay_seconds_count", model="mlp") == CLIENTS


def test_padded_batches_give_each_caller_its_rows_bitwise(batching_server):
    root, port, metrics_port, _ = batching_server
    local = sdx.InferenceSession(str(root / "mlp_pad" / "1" / "model.onnx"))
    rng = np.random.default_rng(11)
    n = 5  # below the preferred 8: the delay flushes them and the batch is padded with 3 rows
    xs = [rng.standard_normal((1 + i % 2, 4)).astype(np.float32) for i in range(n)]  # 1 and 2 rows: 7 in all
    clients = [grpcclient.InferenceServerClient(f"127.0.0.1:{port}") for _ in range(n)]
    results, errors = [None] * n, []
    start = threading.Barrier(n)

    def call(i):
        try:
            start.wait()
            r = clients[i].infer("mlp_pad", [infer_input("x", xs[i])])
            results[i] = (r.as_numpy("probs"), r.as_numpy("logits"))
        except Exception as e:  # noqa: BLE001 (reported below)
            errors.append(e)

    threads = [threading.Thread(target=call, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert not errors, errors
    for i, x in enumerate(xs):
        probs, logits = local.run(["probs", "logits"], {"x": x})  # unbatched, in process
        assert results[i][0].shape == (x.shape[0], 2)
        assert results[i][0].tobytes() == probs.tobytes()
        assert results[i][1].tobytes() == logits.tobytes()
    text = scrape(metrics_port)
    assert sample(text, "sdx_batch_size_sum", model="mlp_pad") == 7  # the callers' rows; padding not counted
    assert sample(text, "sdx_batch_size_count", model="mlp_pad") < n, text  # some were batched together


def test_requests_that_cannot_batch_run_alone(batching_server):
    root, _, _, client = batching_server
    local = sdx.InferenceSession(str(root / "mlp" / "1" / "model.onnx"))
    x = np.random.default_rng(8).standard_normal((CLIENTS + 3, 4)).astype(np.float32)  # above max_batch_size
    r = client.infer("mlp", [infer_input("x", x)])
    assert r.as_numpy("probs").tobytes() == local.run(["probs"], {"x": x})[0].tobytes()


def test_bad_configs_are_refused_with_their_reason(batching_server):
    client = batching_server[3]
    index = {m["name"]: m for m in client.get_model_repository_index(as_json=True)["models"]}
    assert index["mlp"]["state"] == "READY"
    fixed = index["fixed"]
    assert fixed["state"] == "UNAVAILABLE"
    assert "config.json: field 'max_batch_size' is 8, but the model's input 'x' has no leading batch dimension" \
        in fixed["reason"], fixed
    bad = index["badjson"]
    assert bad["state"] == "UNAVAILABLE"
    assert "config.json: field 'dynamic_batching.max_queue_delay_microseconds' must be in 0..10000000, not -5" \
        in bad["reason"], bad
    assert not client.is_model_ready("fixed")
