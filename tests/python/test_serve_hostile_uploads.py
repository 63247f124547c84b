"""Hostile model uploads through `sdx serve`'s sdx.v1 RegisterModel (the issue's "run the model-loading fuzz
corpus through the upload path"): every model of the libFuzzer corpus (fuzz/corpus/onnx_model), then seeded
structural mutations of them (fuzz/mutate_graph.py: node inputs and outputs, op types, attributes, dims and
dtypes, opsets, subgraphs) and byte-level damage, each uploaded in chunks as a client would.

Each upload must end as OK or as a clear refusal: a status that names a client error (INVALID_ARGUMENT,
DATA_LOSS, UNIMPLEMENTED, FAILED_PRECONDITION, RESOURCE_EXHAUSTED) with the upload's fingerprint in its
message. Never UNAVAILABLE (the server died), never INTERNAL or UNKNOWN (an error the server did not map), and
the server process is alive and answering after the last one. A model that is accepted is then run once on
the server through a session (inputs of its declared types, symbolic dimensions 1): it must answer or refuse
clearly too."""
import hashlib
import random
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")

from sdx.serve import find_server  # noqa: E402
from test_serve import start_server, stop_server  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

ROOT = Path(__file__).resolve().parents[2]
CORPUS = ROOT / "fuzz" / "corpus" / "onnx_model"
sys.path.insert(0, str(ROOT / "fuzz"))
import mutate_graph  # noqa: E402

# What a refused upload or run may answer: the client sent something wrong.
CLEAR_REFUSALS = {grpc.StatusCode.INVALID_ARGUMENT, grpc.StatusCode.DATA_LOSS, grpc.StatusCode.UNIMPLEMENTED,
                  grpc.StatusCode.FAILED_PRECONDITION, grpc.StatusCode.RESOURCE_EXHAUSTED,
                  grpc.StatusCode.OUT_OF_RANGE}
MUTATED_CASES = 160
SEED = 20261129

# ONNX element type -> (KServe datatype, numpy dtype) for the inputs a run sends; others are not run.
RUN_TYPES = {onnx.TensorProto.FLOAT: ("FP32", np.float32), onnx.TensorProto.INT64: ("INT64", np.int64),
             onnx.TensorProto.INT32: ("INT32", np.int32), onnx.TensorProto.BOOL: ("BOOL", np.bool_),
             onnx.TensorProto.DOUBLE: ("FP64", np.float64), onnx.TensorProto.UINT8: ("UINT8", np.uint8)}


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    pb2_grpc = pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no stubs")
    from sdx._proto import remote_pb2

    root = tmp_path_factory.mktemp("hostile_models")  # empty: every model comes by upload
    log_path = tmp_path_factory.mktemp("hostile") / "server.log"
    proc, port = start_server(root, log_path, "--max-model-bytes", "4000000")
    channel = grpc.insecure_channel(f"127.0.0.1:{port}")
    try:
        grpc.channel_ready_future(channel).result(timeout=60)
        yield remote_pb2, pb2_grpc.RemoteServiceStub(channel), proc, log_path
    finally:
        channel.close()
        assert stop_server(proc) == 0, open(log_path).read()[-4000:]


def corpus_models() -> list:
    """(name, bytes) of every file of the corpus, parsed or not (some seeds are damaged on purpose)."""
    return [(p.name, p.read_bytes()) for p in sorted(CORPUS.iterdir()) if p.is_file()]


def mutated_models() -> list:
    """(description, bytes): seeded structural mutations of the corpus models that parse, and byte damage."""
    rng = random.Random(SEED)
    parsed = []
    for name, data in corpus_models():
        try:
            parsed.append((name, onnx.load_from_string(data)))
        except Exception:  # noqa: BLE001 - a damaged seed: only byte mutations below use its bytes
            continue
    names = sorted(mutate_graph.MUTATIONS)
    cases = []
    while len(cases) < MUTATED_CASES:
        name, model = rng.choice(parsed)
        if rng.random() < 0.2:
            data, what = mutate_graph.bytes_flip(model.SerializeToString(), rng)
            cases.append((f"{name}: {what}", data))
            continue
        m = onnx.ModelProto()
        m.CopyFrom(model)
        mutation = rng.choice(names)
        try:
            what = mutate_graph.MUTATIONS[mutation][1](m, rng)
            data = m.SerializeToString()
        except Exception:  # noqa: BLE001 - the mutation made a message protobuf will not serialize
            continue
        if what is not None:
            cases.append((f"{name}: {mutation}: {what}", data))
    return cases


def upload(pb2, stub, data: bytes):
    """(status code, details, fingerprint) of one chunked RegisterModel."""
    fp = "sha256:" + hashlib.sha256(data).hexdigest()
    chunks = [pb2.ModelChunk(data=data[i:i + 65536], fingerprint=fp if i == 0 else "")
              for i in range(0, max(len(data), 1), 65536)]
    try:
        stub.RegisterModel(iter(chunks), timeout=60)
        return grpc.StatusCode.OK, "", fp
    except grpc.RpcError as e:
        return e.code(), e.details() or "", fp


def run_once(pb2, stub, data: bytes, fp: str):
    """Runs an accepted model once in a new session; (status code, details), or None when its inputs are not
    tensors of types this test sends."""
    model = onnx.load_from_string(data)
    initializers = {t.name for t in model.graph.initializer}
    tensors = []
    for vi in model.graph.input:
        if vi.name in initializers:
            continue
        t = vi.type.tensor_type
        if not vi.type.HasField("tensor_type") or t.elem_type not in RUN_TYPES:
            return None
        dims = [d.dim_value if d.HasField("dim_value") and 0 <= d.dim_value <= 64 else 1 for d in t.shape.dim]
        datatype, dtype = RUN_TYPES[t.elem_type]
        array = np.ones(dims, dtype=dtype)
        tensors.append(pb2.Tensor(name=vi.name, datatype=datatype, shape=dims, raw_contents=array.tobytes()))
    session = stub.OpenSession(pb2.OpenSessionRequest(), timeout=30).session_id
    try:
        stub.Run(pb2.RunRequest(session_id=session, fingerprint=fp, inputs=tensors), timeout=60)
        return grpc.StatusCode.OK, ""
    except grpc.RpcError as e:
        return e.code(), e.details() or ""
    finally:
        stub.CloseSession(pb2.CloseSessionRequest(session_id=session), timeout=30)


def check_cases(server, cases) -> dict:
    pb2, stub, proc, log_path = server
    outcomes = {}
    for what, data in cases:
        code, details, fp = upload(pb2, stub, data)
        assert proc.poll() is None, f"the server died on the upload of {what}:\n{open(log_path).read()[-4000:]}"
        assert code == grpc.StatusCode.OK or code in CLEAR_REFUSALS, (what, code, details)
        if code != grpc.StatusCode.OK:
            assert details.strip() and fp in details, (what, code, details)  # names the upload
        else:
            ran = run_once(pb2, stub, data, fp)
            assert proc.poll() is None, f"the server died running {what}:\n{open(log_path).read()[-4000:]}"
            if ran is not None:
                assert ran[0] == grpc.StatusCode.OK or ran[0] in CLEAR_REFUSALS, (what, *ran)
                assert ran[0] == grpc.StatusCode.OK or ran[1].strip(), (what, *ran)
                code = "OK, ran" if ran[0] == grpc.StatusCode.OK else f"OK, run {ran[0].name}"
        outcomes[str(code)] = outcomes.get(str(code), 0) + 1
    # Still serving: a registered model is found by fingerprint.
    assert stub.HasModel(pb2.HasModelRequest(fingerprint="sha256:" + "0" * 64), timeout=30).has_model is False
    print(outcomes)
    return outcomes


def test_every_corpus_model_uploads_or_is_refused_clearly(server):
    cases = corpus_models()
    assert len(cases) >= 30, f"the corpus at {CORPUS} has {len(cases)} files"
    outcomes = check_cases(server, cases)
    # The corpus holds valid seeds: some must load, and some damaged ones must be refused.
    assert any(k.startswith("OK") for k in outcomes), outcomes


def test_mutated_models_upload_or_are_refused_clearly(server):
    cases = mutated_models()
    assert len(cases) == MUTATED_CASES
    outcomes = check_cases(server, cases)
    assert sum(v for k, v in outcomes.items() if not k.startswith("OK")) > 0, outcomes
