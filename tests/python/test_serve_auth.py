"""`sdx serve --auth-token-file` and `--tls-cert/--tls-key` (src/serve/auth.h): without the bearer token a
call of either service is UNAUTHENTICATED, with a wrong one too, with the right one it runs; the health
service answers without one; sdx.remote's token= works. A TLS server accepts tritonclient with ssl=True and
the certificate as root, and refuses a plaintext client. A bad token or certificate file stops the start."""
import shutil
import subprocess
import sys

import numpy as np
import pytest

from models import mlp_model

grpcclient = pytest.importorskip("tritonclient.grpc", reason="pip install 'tritonclient[grpc]' (scripts/setup.sh)")
grpc = pytest.importorskip("grpc", reason="pip install grpcio (scripts/setup.sh)")
from tritonclient.utils import InferenceServerException  # noqa: E402

import sdx  # noqa: E402
from sdx.serve import find_server  # noqa: E402
from test_serve import infer_input, start_server, stop_server, wait_ready, write_model  # noqa: E402

pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

TOKEN = "s3cret-token"
GOOD = {"authorization": f"Bearer {TOKEN}"}


@pytest.fixture(scope="module")
def repository(tmp_path_factory):
    root = tmp_path_factory.mktemp("models")
    write_model(root, "mlp", 1, mlp_model())
    return root


@pytest.fixture(scope="module")
def token_server(repository, tmp_path_factory):
    d = tmp_path_factory.mktemp("auth")
    (d / "token").write_text(TOKEN + "\n")  # the trailing newline is not part of the token
    proc, port = start_server(repository, d / "server.log", "--auth-token-file", str(d / "token"))
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(_Authed(client), d / "server.log")
        yield client, port, d / "server.log"
    finally:
        stop_server(proc)


class _Authed:
    def __init__(self, client):
        self.client = client

    def is_server_ready(self):
        return self.client.is_server_ready(headers=GOOD)


def status_of(call):
    with pytest.raises(InferenceServerException) as e:
        call()
    return e.value.status(), e.value.message()


def test_kserve_calls_need_the_token(token_server):
    client, _, log = token_server
    assert status_of(lambda: client.is_server_live()) == ("StatusCode.UNAUTHENTICATED", "missing bearer token")
    assert status_of(lambda: client.get_server_metadata(headers={"authorization": "Bearer nope"})) == (
        "StatusCode.UNAUTHENTICATED", "wrong bearer token")
    assert status_of(lambda: client.get_model_repository_index(headers={"authorization": "Basic x"}))[0] == \
        "StatusCode.UNAUTHENTICATED"
    x = np.random.default_rng(0).standard_normal((2, 4)).astype(np.float32)
    assert status_of(lambda: client.infer("mlp", [infer_input("x", x)]))[0] == "StatusCode.UNAUTHENTICATED"
    assert client.is_server_live(headers=GOOD)
    assert client.get_server_metadata(headers=GOOD).name == "sdx"
    out = client.infer("mlp", [infer_input("x", x)], headers=GOOD).as_numpy("probs")
    np.testing.assert_array_equal(out, sdx.InferenceSession(mlp_model().SerializeToString()).run(None, {"x": x})[0])
    assert TOKEN not in open(log).read()  # never logged


def test_health_service_needs_no_token(token_server):
    _, port, _ = token_server
    with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
        check = channel.unary_unary("/grpc.health.v1.Health/Check")
        assert check(b"", timeout=10) == b"\x08\x01"  # SERVING


def test_remote_service_needs_the_token(token_server):
    _, port, _ = token_server
    pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no sdx.v1 stubs")
    import sdx.remote
    model = mlp_model().SerializeToString()
    x = np.ones((3, 4), np.float32)
    with sdx.remote.InferenceSession(f"127.0.0.1:{port}", model, token=TOKEN) as sess:
        (y,) = sess.run(["probs"], {"x": x})
    np.testing.assert_array_equal(y, sdx.InferenceSession(model).run(["probs"], {"x": x})[0])
    for token in (None, "nope"):
        with pytest.raises(sdx.SdxError) as e:
            sdx.remote.InferenceSession(f"127.0.0.1:{port}", model, token=token, max_attempts=1)
        assert "UNAUTHENTICATED" in str(e.value) or "bearer token" in str(e.value), str(e.value)


def test_bad_token_file_stops_the_start(repository, tmp_path):
    exe = find_server()
    (tmp_path / "empty").write_text("\n")
    for path, words in ((tmp_path / "empty", "is empty"), (tmp_path / "absent", "cannot read")):
        r = subprocess.run([exe, "--model-repository", str(repository), "--port", "0", "--metrics-port", "0",
                            "--auth-token-file", str(path)], capture_output=True, text=True, timeout=60)
        assert r.returncode == 2 and words in r.stderr, r.stderr
    r = subprocess.run([sys.executable, "-m", "sdx", "serve", "--model-repository", str(repository),
                        "--tls-cert", str(tmp_path / "absent")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "--tls-cert and --tls-key go together" in r.stderr, r.stderr


@pytest.fixture(scope="module")
def tls_server(repository, tmp_path_factory):
    if shutil.which("openssl") is None:
        pytest.skip("no openssl command to make a self-signed certificate")
    d = tmp_path_factory.mktemp("tls")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1", "-keyout", str(d / "key.pem"),
                    "-out", str(d / "cert.pem")], check=True, capture_output=True, timeout=120)
    proc, port = start_server(repository, d / "server.log", "--tls-cert", str(d / "cert.pem"),
                              "--tls-key", str(d / "key.pem"))
    try:
        yield port, d / "cert.pem", d / "server.log"
    finally:
        stop_server(proc)


def test_tls(tls_server):
    port, cert, log = tls_server
    client = grpcclient.InferenceServerClient(f"localhost:{port}", ssl=True, root_certificates=str(cert))
    wait_ready(client, log)
    x = np.ones((2, 4), np.float32)
    out = client.infer("mlp", [infer_input("x", x)]).as_numpy("probs")
    np.testing.assert_array_equal(out, sdx.InferenceSession(mlp_model().SerializeToString()).run(None, {"x": x})[0])
    plain = grpcclient.InferenceServerClient(f"localhost:{port}")
    assert status_of(lambda: plain.is_server_live(client_timeout=5))[0] in (
        "StatusCode.UNAVAILABLE", "StatusCode.DEADLINE_EXCEEDED")


def test_tls_with_sdx_remote(tls_server):
    port, cert, _ = tls_server
    pytest.importorskip("sdx._proto.remote_pb2_grpc", reason="sdx built without grpcio-tools: no sdx.v1 stubs")
    import sdx.remote
    model = mlp_model().SerializeToString()
    x = np.ones((1, 4), np.float32)
    with sdx.remote.InferenceSession(f"localhost:{port}", model,
                                     credentials=grpc.ssl_channel_credentials(root_certificates=cert.read_bytes())) as sess:
        (y,) = sess.run(["probs"], {"x": x})
    np.testing.assert_array_equal(y, sdx.InferenceSession(model).run(["probs"], {"x": x})[0])


def test_tls_and_token_together(repository, tls_server, tmp_path):
    _, cert, _ = tls_server
    (tmp_path / "token").write_text(TOKEN)
    proc, port = start_server(repository, tmp_path / "server.log", "--tls-cert", str(cert), "--tls-key",
                              str(cert.parent / "key.pem"), "--auth-token-file", str(tmp_path / "token"))
    try:
        client = grpcclient.InferenceServerClient(f"localhost:{port}", ssl=True, root_certificates=str(cert))
        wait_ready(_Authed(client), tmp_path / "server.log")
        assert status_of(lambda: client.is_server_live()) == ("StatusCode.UNAUTHENTICATED", "missing bearer token")
        assert client.is_server_live(headers=GOOD)
    finally:
        stop_server(proc)
