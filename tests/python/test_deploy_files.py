"""deploy/: the Dockerfile, the Kubernetes manifests and the Envoy example (issue 19 item 5). Docker, a
cluster and Envoy are not available in CI, so these files are checked, not run: the YAML parses, the
probes and the Prometheus annotations name the server's default ports, the image's entrypoint and the
Deployment's args are flags `sdx serve --help` lists, and a server started with those flags answers the
standard health service (what Kubernetes' gRPC probe calls) with SERVING."""
from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

yaml = pytest.importorskip("yaml", reason="pip install pyyaml")

ROOT = Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"
KUBE = DEPLOY / "kubernetes"


def load_all(path: Path) -> list:
    return [d for d in yaml.safe_load_all(path.read_text()) if d is not None]


def manifests() -> dict:
    """kind/name -> manifest, over every file of deploy/kubernetes."""
    out = {}
    for path in sorted(KUBE.glob("*.yaml")):
        for doc in load_all(path):
            assert {"apiVersion", "kind", "metadata"} <= set(doc), path
            out[f"{doc['kind']}/{doc['metadata']['name']}"] = doc
    return out


def serve_help() -> str:
    return subprocess.run([sys.executable, "-m", "sdx", "serve", "--help"], capture_output=True, text=True,
                          check=True).stdout


def default_of(help_text: str, flag: str) -> int:
    m = re.search(re.escape(flag) + r"\s+PORT\s+[^\n]*?\(default (\d+)", help_text.replace("\n ", " "))
    assert m, f"no default for {flag} in sdx serve --help"
    return int(m.group(1))


def flags_in(words: list[str]) -> list[str]:
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


def entrypoint() -> list[str]:
    lines = [l for l in (DEPLOY / "Dockerfile").read_text().splitlines() if l.startswith("ENTRYPOINT")]
    assert len(lines) == 1
    return json.loads(lines[0][len("ENTRYPOINT"):])


def container() -> dict:
    (c,) = manifests()["Deployment/sdx-serve"]["spec"]["template"]["spec"]["containers"]
    return c


def test_manifests_parse_and_name_each_other():
    m = manifests()
    assert {"Deployment/sdx-serve", "Service/sdx-serve", "Service/sdx-serve-headless", "ConfigMap/sdx-models",
            "ConfigMap/prometheus-sdx-serve"} <= set(m)
    labels = m["Deployment/sdx-serve"]["spec"]["template"]["metadata"]["labels"]
    for svc in ("Service/sdx-serve", "Service/sdx-serve-headless"):
        assert m[svc]["spec"]["selector"].items() <= labels.items()
        assert {p["targetPort"] for p in m[svc]["spec"]["ports"]} <= {p["name"] for p in container()["ports"]}
    assert m["Service/sdx-serve-headless"]["spec"]["clusterIP"] == "None"
    volumes = m["Deployment/sdx-serve"]["spec"]["template"]["spec"]["volumes"]
    (models,) = [v for v in volumes if v["name"] == "models"]
    assert models["configMap"]["name"] == "sdx-models"
    assert {"name": "models", "mountPath": "/models", "readOnly": True} in container()["volumeMounts"]
    keys = set(m["ConfigMap/sdx-models"]["binaryData"])
    for item in models["configMap"]["items"]:
        assert item["key"] in keys and re.fullmatch(r"[^/]+/\d+/model\.onnx", item["path"]), item
    scrape = yaml.safe_load(m["ConfigMap/prometheus-sdx-serve"]["data"]["prometheus.yml"])
    (job,) = scrape["scrape_configs"]
    assert job["kubernetes_sd_configs"] == [{"role": "pod"}]


def test_probes_and_metrics_use_the_servers_default_ports():
    help_text = serve_help()
    grpc_port, metrics_port = default_of(help_text, "--port"), default_of(help_text, "--metrics-port")
    assert (grpc_port, metrics_port) == (8001, 8002)
    c = container()
    ports = {p["name"]: p["containerPort"] for p in c["ports"]}
    assert ports == {"grpc": grpc_port, "metrics": metrics_port}
    for probe in ("readinessProbe", "livenessProbe", "startupProbe"):
        assert c[probe]["grpc"] == {"port": grpc_port}, probe  # native gRPC probe, health service ""
    args = c["args"]
    assert args[args.index("--port") + 1] == str(grpc_port)
    assert args[args.index("--metrics-port") + 1] == str(metrics_port)
    annotations = manifests()["Deployment/sdx-serve"]["spec"]["template"]["metadata"]["annotations"]
    assert annotations["prometheus.io/scrape"] == "true"
    assert annotations["prometheus.io/port"] == str(metrics_port) and annotations["prometheus.io/path"] == "/metrics"
    spec = manifests()["Deployment/sdx-serve"]["spec"]["template"]["spec"]
    assert spec["terminationGracePeriodSeconds"] > 30  # sdx-serve drains for up to 30 s after SIGTERM
    assert "EXPOSE 8001 8002" in (DEPLOY / "Dockerfile").read_text()


def test_entrypoint_and_args_are_flags_sdx_serve_accepts():
    help_text = serve_help()
    accepted = set(re.findall(r"(--[a-z][a-z-]*)", help_text))
    ep = entrypoint()
    assert ep[:2] == ["sdx", "serve"]
    assert ep[2:] == ["--model-repository", "/models", "--host", "0.0.0.0"]
    for flag in flags_in(ep[2:]) + flags_in(container()["args"]):
        assert flag in accepted, f"{flag} is not a flag of sdx serve"
    text = (DEPLOY / "Dockerfile").read_text()
    assert re.search(r"^FROM \S*bookworm\S* AS build$", text, re.M) and "scripts/build_wheel.sh" in text
    assert re.search(r"^FROM \S*slim-bookworm\S*$", text, re.M)


def test_envoy_routes_sessions_on_the_affinity_key():
    (cfg,) = load_all(DEPLOY / "envoy" / "envoy.yaml")
    (listener,) = cfg["static_resources"]["listeners"]
    hcm = listener["filter_chains"][0]["filters"][0]["typed_config"]
    routes = hcm["route_config"]["virtual_hosts"][0]["routes"]
    session_route = [r for r in routes if r["match"].get("prefix") == "/sdx.v1.RemoteService/"]
    assert session_route and session_route[0]["route"]["hash_policy"] == [{"header": {"header_name": "sdx-session"}}]
    (cluster,) = cfg["static_resources"]["clusters"]
    assert cluster["lb_policy"] in ("RING_HASH", "MAGLEV")
    addr = cluster["load_assignment"]["endpoints"][0]["lb_endpoints"][0]["endpoint"]["address"]["socket_address"]
    assert addr["address"].startswith("sdx-serve-headless.") and addr["port_value"] == 8001
    # The key the balancer hashes is the one the server reads (src/serve/remote_service.cc), and the one the
    # client sends from OpenSession on, with the id it proposes (python/sdx/_remote_connection.py).
    assert '"sdx-session"' in (ROOT / "src" / "serve" / "remote_service.cc").read_text()
    client = (ROOT / "python" / "sdx" / "_remote_connection.py").read_text()
    assert '("sdx-session", self.session_id)' in client and "uuid.uuid4().hex" in client
    assert "OpenSessionRequest(lease_ms=lease_ms, session_id=self.session_id)" in client


def test_dockerfile_leaves_malloc_thresholds_to_the_server():
    """sdx serve fixes glibc's thresholds itself (src/serve/memory_trimmer.h); the image does not override
    them (an ENV there would also stop the server's own setting, which yields to the environment)."""
    text = (DEPLOY / "Dockerfile").read_text()
    assert not re.search(r"^ENV\s+MALLOC_", text, re.M)
    assert "fix_malloc_thresholds" in (ROOT / "src" / "serve" / "remote_service.h").read_text()


def test_server_with_the_deployments_flags_answers_the_health_probe(tmp_path):
    """The entrypoint's and the Deployment's flags, on loopback and free ports, start a server whose
    grpc.health.v1.Health/Check for service "" (Kubernetes' gRPC probe) answers SERVING."""
    grpc = pytest.importorskip("grpc", reason="pip install grpcio")
    from sdx.serve import find_server
    if find_server() is None:
        pytest.skip("sdx built without gRPC: no sdx-serve")
    from test_serve import start_server, stop_server

    args = list(container()["args"])
    args[args.index("--port") + 1] = "0"           # start_server gives --port 0 and reads the port back
    args[args.index("--metrics-port") + 1] = "0"
    args = [a for i, a in enumerate(args) if a != "--port" and (i == 0 or args[i - 1] != "--port")]
    proc, port = start_server(tmp_path, tmp_path / "server.log", *args)
    try:
        with grpc.insecure_channel(f"127.0.0.1:{port}") as channel:
            check = channel.unary_unary("/grpc.health.v1.Health/Check", request_serializer=lambda b: b,
                                        response_deserializer=lambda b: b)
            # HealthCheckRequest{service: ""} is the empty message; HealthCheckResponse{status: SERVING (1)}
            # is field 1, varint 1.
            assert check(b"", timeout=30) == b"\x08\x01"
    finally:
        assert stop_server(proc) == 0
