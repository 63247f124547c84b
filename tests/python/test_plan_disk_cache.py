"""The disk plan cache (src/api/plan_disk_cache.h), each case in fresh processes with a cache folder of its
own: the second process starts from the entry the first wrote (PLAN_CACHE_HIT, its first call freezes from
the recorded plan, outputs bit for bit the same), a damaged entry is refused, deleted and written again,
options that change the graph get entries of their own, the size cap evicts the least recently used entry,
concurrent processes leave one sound entry, and a folder others may write is refused."""
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from models import cnn_bn, mlp_model

CHILD = r"""
import hashlib, json, sys
import numpy as np
import sdx
import sdx.diagnostics
sdx.diagnostics.enable("CACHE")
path = sys.argv[1]
kw = json.loads(sys.argv[2])
o = sdx.SessionOptions()
for k, v in kw.items():
    setattr(o, k, v)
sess = sdx.InferenceSession(path, o)
feeds = {i.name: np.random.default_rng(0).standard_normal([d if isinstance(d, int) else 2 for d in i.shape]).astype(np.float32)
         for i in sess.get_inputs()}
modes = []
for _ in range(3):
    outs, rep = sess.run_with_report(None, feeds)
    modes.append(rep["execution_mode"])
h = hashlib.sha256(b"".join(np.ascontiguousarray(o).tobytes() for o in outs)).hexdigest()
del sess  # joins the cache writer
cats = sdx.diagnostics.report().get("categories", {})
counts = cats.get("CACHE", {}).get("counts", {})
print(json.dumps({"sha": h, "modes": modes, "counts": counts}))
"""


def _run(model_path, cache_dir, env_extra=None, **options):
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="1", SDX_DISK_PLAN_CACHE_DIR=str(cache_dir))
    env.update(env_extra or {})
    r = subprocess.run([sys.executable, "-c", CHILD, str(model_path), json.dumps(options)], capture_output=True,
                       text=True, env=env, cwd="/", timeout=300)
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout.strip().splitlines()[-1])
    out["stderr"] = r.stderr
    return out


def _entries(cache_dir):
    d = cache_dir / "v1"
    return sorted(p for p in d.iterdir() if p.suffix == ".sdx") if d.exists() else []


@pytest.fixture
def cnn_path(tmp_path):
    p = tmp_path / "cnn.onnx"
    p.write_bytes(cnn_bn().SerializeToString())
    return p


def test_second_process_starts_from_the_entry(cnn_path, tmp_path):
    cache = tmp_path / "cache"
    cold = _run(cnn_path, cache)
    assert cold["counts"].get("PLAN_CACHE_MISS") == 1 and cold["counts"].get("PLAN_CACHE_WRITTEN") == 1, cold
    assert cold["modes"][-1] == "CPU_REPLAY", cold
    assert len(_entries(cache)) == 1
    warm = _run(cnn_path, cache)
    assert warm["counts"].get("PLAN_CACHE_HIT") == 1 and "PLAN_CACHE_MISS" not in warm["counts"], warm
    assert "PLAN_CACHE_WRITTEN" not in warm["counts"], warm  # nothing new to keep
    assert warm["counts"].get("PLAN_FROM_BUNDLE") == 1, warm  # the first call froze from the entry
    assert warm["sha"] == cold["sha"]
    # The cache off: nothing read, nothing written.
    off = _run(cnn_path, tmp_path / "other", env_extra={"SDX_DISK_PLAN_CACHE": "0"})
    assert off["counts"] == {} and not (tmp_path / "other").exists() and off["sha"] == cold["sha"]


def test_a_damaged_entry_is_refused_deleted_and_written_again(cnn_path, tmp_path):
    cache = tmp_path / "cache"
    first = _run(cnn_path, cache)
    (entry,) = _entries(cache)
    data = bytearray(entry.read_bytes())
    data[len(data) // 2] ^= 0x5A
    entry.write_bytes(bytes(data))
    again = _run(cnn_path, cache)
    assert "refused and deleted" in again["stderr"] and "checksum" in again["stderr"], again["stderr"]
    assert again["counts"].get("PLAN_CACHE_REFUSED") == 1 and again["counts"].get("PLAN_CACHE_WRITTEN") == 1, again
    assert again["sha"] == first["sha"]
    third = _run(cnn_path, cache)
    assert third["counts"].get("PLAN_CACHE_HIT") == 1 and third["sha"] == first["sha"], third
    # A truncated entry too.
    (entry,) = _entries(cache)
    entry.write_bytes(entry.read_bytes()[:1000])
    fourth = _run(cnn_path, cache)
    assert fourth["counts"].get("PLAN_CACHE_REFUSED") == 1 and fourth["sha"] == first["sha"], fourth


def test_options_that_change_the_graph_get_their_own_entry(tmp_path):
    path = tmp_path / "mlp.onnx"
    path.write_bytes(mlp_model().SerializeToString())
    cache = tmp_path / "cache"
    a = _run(path, cache)
    b = _run(path, cache, optimizer_enabled=False)
    assert len(_entries(cache)) == 2 and b["counts"].get("PLAN_CACHE_MISS") == 1, b
    # Thread counts do not change the entry.
    c = _run(path, cache, intra_op_num_threads=1)
    assert c["counts"].get("PLAN_CACHE_HIT") == 1 and c["sha"] == a["sha"], c


def test_the_size_cap_evicts_the_least_recently_used_entry(tmp_path):
    cache = tmp_path / "cache"
    paths = []
    for i, model in enumerate((mlp_model(), cnn_bn())):
        p = tmp_path / f"m{i}.onnx"
        p.write_bytes(model.SerializeToString())
        paths.append(p)
    _run(paths[0], cache)
    (first,) = _entries(cache)
    # A cap below the two entries together: writing the second deletes the first (older).
    cap = first.stat().st_size + 1
    _run(paths[1], cache, env_extra={"SDX_DISK_PLAN_CACHE_MAX_BYTES": str(cap)})
    left = _entries(cache)
    assert len(left) == 1 and left[0] != first, left


def test_concurrent_processes_leave_one_sound_entry(cnn_path, tmp_path):
    cache = tmp_path / "cache"
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="1", SDX_DISK_PLAN_CACHE_DIR=str(cache))
    procs = [subprocess.Popen([sys.executable, "-c", CHILD, str(cnn_path), "{}"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env, cwd="/") for _ in range(4)]
    shas = set()
    for p in procs:
        out, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
        shas.add(json.loads(out.strip().splitlines()[-1])["sha"])
    assert len(shas) == 1
    assert len(_entries(cache)) == 1 and not [f for f in (cache / "v1").iterdir() if ".tmp." in f.name]
    after = _run(cnn_path, cache)
    assert after["counts"].get("PLAN_CACHE_HIT") == 1 and after["sha"] in shas, after


def test_a_folder_others_may_write_is_refused(cnn_path, tmp_path):
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o777)
    os.chmod(cache, 0o777)
    out = _run(cnn_path, cache)
    assert "disk plan cache off" in out["stderr"] and "refused" in out["stderr"], out["stderr"]
    assert out["counts"].get("PLAN_CACHE_OFF") == 1 and not (cache / "v1").exists(), out


def test_inspect_says_the_optimizer_did_not_run_on_a_cached_graph(cnn_path, tmp_path):
    # A session that starts from a cache entry gets the optimized graph: its report must not claim the
    # optimizer was switched off (it was not), nor list rewrites it did not make.
    cache = tmp_path / "cache"
    _run(cnn_path, cache)
    env = dict(os.environ, SDX_DISK_PLAN_CACHE="1", SDX_DISK_PLAN_CACHE_DIR=str(cache))
    r = subprocess.run([sys.executable, "-m", "sdx", "inspect", str(cnn_path), "--optimized"], capture_output=True,
                       text=True, env=env, cwd="/", timeout=300)
    assert r.returncode == 0, r.stderr
    assert "optimizer: not run, the graph came optimized" in r.stdout, r.stdout
    assert "SDX_OPTIMIZER_ENABLED=0" not in r.stdout
