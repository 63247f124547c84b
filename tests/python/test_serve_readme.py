"""The README's "Serving" section, run as written: its two shell commands (make the bundled default model into
a repository, start `sdx serve` on it) and its tritonclient snippet, whose result must equal in-process
sdx.InferenceSession's bitwise. The only changes: `sdx` runs as `python -m sdx` (the package under test), and
the server takes a free port instead of 8001 (several servers run in CI), which the snippet is pointed at.

Also here: a repository version served from a `model.sdx` bundle (`sdx compile`'s output) with an
instance_group config, through tritonclient."""
import json
import os
import re
import shlex
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import onnx
import pytest

import sdx
from sdx.serve import find_server
from test_serve import start_server, stop_server, wait_ready
from test_serve_admission import free_port

grpcclient = pytest.importorskip("tritonclient.grpc", reason="pip install tritonclient[grpc] (scripts/setup.sh)")
pytestmark = pytest.mark.skipif(find_server() is None, reason="sdx built without gRPC: no sdx-serve")

ROOT = Path(__file__).resolve().parents[2]


def serving_blocks():
    """(bash lines, python snippet) of the README's Serving section: its first bash and python blocks."""
    text = (ROOT / "README.md").read_text()
    section = text[text.index("\n## Serving\n"):]
    section = section[:section.index("\n## ", 5)]
    bash = re.search(r"```bash\n(.*?)```", section, re.S).group(1)
    python = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    lines = [line.split("#")[0].strip() for line in bash.splitlines()]
    return [line for line in lines if line], python


def test_the_readme_serving_commands_and_client_snippet_work_as_written(tmp_path):
    commands, snippet = serving_blocks()
    assert len(commands) == 2 and "sdx serve --model-repository" in commands[1], commands
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    # `mkdir -p ... && python3 scripts/make_default_model.py ...`, from the repository's root as the README
    # reads, writing into tmp_path.
    make = commands[0].replace("models/", f"{tmp_path}/models/").replace("python3 ", f"{sys.executable} ")
    subprocess.run(make, shell=True, check=True, cwd=ROOT, env=env, timeout=300)
    argv = shlex.split(commands[1])
    assert argv[:2] == ["sdx", "serve"]
    port = free_port()
    log_path = tmp_path / "server.log"
    with open(log_path, "w") as log:
        proc = subprocess.Popen([sys.executable, "-m", "sdx", *argv[1:], "--port", str(port), "--metrics-port", "0"],
                                cwd=tmp_path, stdout=log, stderr=subprocess.STDOUT, env=env)
    try:
        deadline = time.time() + 120
        while f"listening on 127.0.0.1:{port}" not in log_path.read_text():
            assert proc.poll() is None and time.time() < deadline, log_path.read_text()
            time.sleep(0.05)
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        try:
            wait_ready(client, log_path)
        finally:
            client.close()
        assert "8001" in snippet
        scope: dict = {}
        exec(compile(snippet.replace("8001", str(port)), "README.md (Serving)", "exec"), scope)  # noqa: S102
        got = scope["result"].as_numpy(scope["meta"].outputs[0].name)
        local = sdx.InferenceSession(str(tmp_path / "models" / "classifier" / "1" / "model.onnx"))
        want = local.run(None, {scope["meta"].inputs[0].name: scope["x"]})[0]
        assert got.dtype == want.dtype and got.shape == want.shape
        np.testing.assert_array_equal(got, want)
    finally:
        assert stop_server(proc) == 0, log_path.read_text()[-3000:]


def test_a_bundle_version_with_instances_serves_like_the_onnx_model(tmp_path):
    sys.path.insert(0, str(ROOT / "scripts"))
    from make_default_model import build  # noqa: E402

    model = build()
    x = np.random.default_rng(5).random((1, 3, 32, 32), dtype=np.float32)
    name = model.graph.input[0].name
    root = tmp_path / "models"
    (root / "compiled" / "1").mkdir(parents=True)
    (root / "compiled" / "1" / "model.sdx").write_bytes(sdx.compile_bundle(model.SerializeToString(), [{name: x}]))
    (root / "compiled" / "config.json").write_text(json.dumps({"instance_group": [{"count": 2, "kind": "KIND_CPU"}]}))
    proc, port = start_server(root, tmp_path / "server.log")
    try:
        client = grpcclient.InferenceServerClient(f"127.0.0.1:{port}")
        wait_ready(client, tmp_path / "server.log")
        meta = client.get_model_metadata("compiled")
        inp = grpcclient.InferInput(name, list(x.shape), "FP32")
        inp.set_data_from_numpy(x)
        got = client.infer("compiled", [inp]).as_numpy(meta.outputs[0].name)
        want = sdx.InferenceSession(model.SerializeToString()).run(None, {name: x})[0]
        np.testing.assert_array_equal(got, want)
        client.close()
    finally:
        assert stop_server(proc) == 0
