"""Kernel JIT hygiene, end to end in separate processes: a damaged disk cache is rebuilt and never
loaded (no signal, correct outputs), a library planted in a cache folder another user could write is
never loaded (the JIT stays off and says why), a user without a home folder gets a private cache, and
sessions destroyed in the middle of their compiles leave no compiler process and no temporary file."""
import ctypes
import ctypes.util
import gc
import json
import os
import shutil
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import sdx
from models import elementwise_chain

OTHER_UID = 65534 if os.geteuid() != 65534 else 65533  # "another user" (nobody) for the folders the tests chown


def _xxh3_128(data: bytes) -> str:
    """XXH3-128 in canonical hex, the JIT manifest's digest, from the system's xxHash library (libsdx links it)."""
    lib = ctypes.CDLL(ctypes.util.find_library("xxhash") or "libxxhash.so.0")

    class Hash(ctypes.Structure):
        _fields_ = [("low64", ctypes.c_uint64), ("high64", ctypes.c_uint64)]

    lib.XXH3_128bits.restype = Hash
    lib.XXH3_128bits.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
    h = lib.XXH3_128bits(data, len(data))
    return f"{h.high64:016x}{h.low64:016x}"


def _compiler():
    return shutil.which("c++") or shutil.which("g++")


needs_compiler = pytest.mark.skipif(not _compiler(), reason="no C++ compiler")


def _can_chown(tmp_path):
    probe = tmp_path / "chown-probe"
    probe.write_text("x")
    try:
        os.chown(probe, OTHER_UID, OTHER_UID)
        return True
    except PermissionError:
        return False
    finally:
        probe.unlink()


_chain = elementwise_chain


def _options(cache, enabled=True):
    o = sdx.SessionOptions()
    o.jit_enabled = enabled
    o.jit_cache_dir = str(cache)
    return o


_X = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)

_RUN = textwrap.dedent("""
    import json, sys
    import numpy as np
    import sdx
    model, cache = sys.argv[1:3]
    o = sdx.SessionOptions()
    if cache != "-":
        o.jit_cache_dir = cache
    sess = sdx.InferenceSession(model, o)
    x = np.linspace(-2, 2, 16, dtype=np.float32).reshape(1, 16)
    for _ in range(3):
        (y,), rep = sess.run_with_report(None, {"x": x})
    sess.wait_for_jit(120)
    (y,), rep = sess.run_with_report(None, {"x": x})
    info = sess.introspect({"x": x})
    print(json.dumps({"stats": sess.jit_stats(), "fused": rep["jit_fused_segments"],
                      "status": [s["status"] for s in info["jit_segments"]], "y": y.view(np.uint32).tolist()}))
""")


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if not k.startswith("SDX_JIT_")}
    env.update(extra)
    return env


def _run(model_path, cache, env=None):
    """Runs the model in a fresh process; returns (its JSON report, its stderr). A crash (a signal) fails."""
    out = subprocess.run([sys.executable, "-c", _RUN, str(model_path), str(cache)], capture_output=True, text=True,
                         env=env or _env(), timeout=300)
    assert out.returncode == 0, f"exit {out.returncode} (negative: killed by a signal)\n{out.stderr}"
    return json.loads(out.stdout.strip().splitlines()[-1]), out.stderr


def _reference(model):
    (y,) = sdx.InferenceSession(model.SerializeToString(), _options("", enabled=False)).run(None, {"x": _X})
    return y.view(np.uint32).tolist()


def _build_library(tmp_path, name, source, *flags):
    src = tmp_path / f"{name}.cc"
    src.write_text(source)
    out = tmp_path / f"{name}.so"
    subprocess.run([_compiler(), "-shared", "-fPIC", "-O1", "-o", str(out), str(src), *flags], check=True, timeout=120)
    return out


def _planted_library(tmp_path, marker):
    """A library whose constructor leaves `marker` the moment anything loads it."""
    return _build_library(tmp_path, "planted", textwrap.dedent(f"""
        #include <cstdio>
        __attribute__((constructor)) static void planted() {{
          if (FILE* f = std::fopen("{marker}", "w")) {{ std::fputs("loaded\\n", f); std::fclose(f); }}
        }}
        extern "C" {{ extern const char sdx_jit_abi[] = "sdx-jit-cpp/1"; extern const long long sdx_jit_numel = 16;
        void sdx_jit_segment(const float* const*, float* const*, long long, long long) {{}} }}
    """))


def _entry(cache):
    """The one kernel entry of the cache: (library, manifest)."""
    (so,) = (cache / "v1").glob("*.so")
    return so, so.with_suffix(".manifest")


def _flip(path, at):
    b = bytearray(path.read_bytes())
    b[at % len(b)] ^= 0x01
    path.write_bytes(bytes(b))


@needs_compiler
def test_damaged_cache_files_are_rebuilt_and_never_loaded(tmp_path):
    model = _chain()
    path = tmp_path / "chain.onnx"
    path.write_bytes(model.SerializeToString())
    cache = tmp_path / "cache"
    want = _reference(model)
    marker = tmp_path / "planted-was-loaded"
    planted = _planted_library(tmp_path, marker)
    first, _ = _run(path, cache)
    assert first["fused"] == 1 and first["stats"]["compiled"] == 1 and first["y"] == want
    so, manifest = _entry(cache)
    assert manifest.read_text().startswith("sdx-jit-manifest 2\n")

    def replace_everything():
        for f in (cache / "v1").iterdir():
            if f.is_file():
                f.write_bytes(os.urandom(f.stat().st_size or 64))

    damages = {
        "library truncated": lambda: os.truncate(so, so.stat().st_size // 3),
        "library emptied": lambda: os.truncate(so, 0),
        "a bit flipped in the code": lambda: _flip(so, so.stat().st_size // 2),
        "a bit flipped in the ELF header": lambda: _flip(so, 20),
        "library replaced by a planted one": lambda: shutil.copyfile(planted, so),
        "manifest deleted": lambda: manifest.unlink(),
        "manifest's hash altered": lambda: _flip(manifest, manifest.stat().st_size - 5),
        "manifest truncated": lambda: os.truncate(manifest, 25),
        "every file of the cache replaced": replace_everything,
    }
    for what, damage in damages.items():
        damage()
        got, err = _run(path, cache)
        assert got["y"] == want, what
        assert got["fused"] == 1, (what, got["status"], err)
        assert got["stats"]["compiled"] == 1 and got["stats"]["disk_cache_hits"] == 0, (what, got["stats"])
        assert not marker.exists(), f"{what}: the planted library was loaded"
    again, _ = _run(path, cache)  # rebuilt for good
    assert again["stats"]["disk_cache_hits"] == 1 and again["stats"]["compiled"] == 0 and again["y"] == want


def test_cache_folder_writable_by_others_is_refused(tmp_path):
    model = _chain()
    path = tmp_path / "chain.onnx"
    path.write_bytes(model.SerializeToString())
    cache = tmp_path / "cache"
    (cache / "v1").mkdir(parents=True)
    for folder, mode in ((cache, 0o777), (cache / "v1", 0o775)):
        os.chmod(folder, mode)
        got, err = _run(path, cache)
        assert got["y"] == _reference(model) and got["fused"] == 0
        assert "sdx: warning: JIT disk cache" in err and "refused" in err and "writable by group or others" in err, err
        (status,) = got["status"]
        assert status.startswith("FAILED") and "refused" in status, status
        assert got["stats"]["compiler_runs"] == 0
        os.chmod(folder, 0o700)


@needs_compiler
def test_planted_library_in_another_users_cache_is_never_loaded(tmp_path):
    if not _can_chown(tmp_path):
        pytest.skip("chown to another user is not permitted (not root)")
    model = _chain()
    path = tmp_path / "chain.onnx"
    path.write_bytes(model.SerializeToString())
    cache = tmp_path / "cache"
    first, _ = _run(path, cache)
    assert first["fused"] == 1
    # "Another user" plants a library under the exact kernel name, with a manifest that matches it,
    # and owns the folders: every content check would pass; the folder's owner must not.
    marker = tmp_path / "planted-was-loaded"
    so, manifest = _entry(cache)
    data = _planted_library(tmp_path, marker).read_bytes()
    so.write_bytes(data)
    key = so.stem
    manifest.write_text(f"sdx-jit-manifest 2\nkey {key}\nsize {len(data)}\nxxh3_128 {_xxh3_128(data)}\n")
    for root, dirs, files in os.walk(cache):
        for name in [root, *(os.path.join(root, n) for n in dirs + files)]:
            os.lchown(name, OTHER_UID, OTHER_UID)
    got, err = _run(path, cache)
    assert got["y"] == _reference(model) and got["fused"] == 0
    assert not marker.exists(), "the planted library was loaded"
    assert "refused" in err and f"belongs to uid {OTHER_UID}" in err, err
    (status,) = got["status"]
    assert status.startswith("FAILED") and "refused" in status, status
    # `sdx inspect --jit` says why.
    out = subprocess.run([sys.executable, "-m", "sdx", "inspect", str(path), "--jit"], capture_output=True, text=True,
                         env=_env(SDX_JIT_CACHE_DIR=str(cache)), timeout=300)
    assert out.returncode == 0, out.stderr
    assert "FAILED" in out.stdout and "refused" in out.stdout and f"belongs to uid {OTHER_UID}" in out.stdout, out.stdout
    assert not marker.exists()


@needs_compiler
def test_user_without_home_gets_a_private_cache_not_a_shared_tmp_path(tmp_path):
    # No SDX_CACHE_DIR, XDG_CACHE_HOME or HOME, and (through an LD_PRELOAD shim) no entry in the
    # password database: the kernels go to a private folder under TMPDIR, removed at exit.
    shim = _build_library(tmp_path, "nopasswd", textwrap.dedent("""
        #include <errno.h>
        #include <pwd.h>
        extern "C" int getpwuid_r(uid_t, struct passwd*, char*, size_t, struct passwd** result) {
          *result = nullptr;
          return 0;
        }
        extern "C" struct passwd* getpwuid(uid_t) { return nullptr; }
    """))
    model = _chain()
    path = tmp_path / "chain.onnx"
    path.write_bytes(model.SerializeToString())
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    env = {k: v for k, v in _env().items() if k not in ("HOME", "XDG_CACHE_HOME", "SDX_CACHE_DIR")}
    env.update(TMPDIR=str(tmpdir), LD_PRELOAD=str(shim))
    got, _ = _run(path, "-", env=env)
    assert got["y"] == _reference(model) and got["fused"] == 1
    cache_dir = got["stats"]["cache_dir"]
    assert cache_dir.startswith(str(tmpdir) + "/sdx-jit-private."), cache_dir
    assert os.listdir(tmpdir) == []  # removed when the process ended


def _stat_fields(pid):
    with open(f"/proc/{pid}/stat") as f:
        s = f.read()
    close = s.rindex(")")
    return s[s.index("(") + 1:close], s[close + 2:].split()  # comm, [state, ppid, pgrp, ...]


def _descends_from(pid, ancestor):
    for _ in range(64):
        try:
            _, rest = _stat_fields(pid)
        except (OSError, ValueError):
            return False
        pid = int(rest[1])
        if pid == ancestor:
            return True
        if pid <= 1:
            return False
    return False


def _leftover_processes(tmpdir):
    """Live processes (not zombies) other than this one that descend from it or run with a TMPDIR
    inside `tmpdir` (a compiler orphaned by a killed driver is adopted by init, but keeps its environment)."""
    me, found = os.getpid(), []
    key = b"TMPDIR=" + os.fsencode(str(tmpdir))
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == me:
            continue
        try:
            comm, rest = _stat_fields(name)
            if rest[0] in ("Z", "X"):
                continue
            with open(f"/proc/{name}/environ", "rb") as f:
                env = f.read().split(b"\0")
        except (OSError, ValueError, IndexError):
            continue
        if any(e.startswith(key) for e in env) or _descends_from(name, me):
            found.append((int(name), comm))
    return found


@needs_compiler
def test_sessions_destroyed_mid_compile_leave_no_compiler_process_or_temp_file(tmp_path, monkeypatch):
    tmpdir = tmp_path / "tmp"
    tmpdir.mkdir()
    monkeypatch.setenv("TMPDIR", str(tmpdir))  # the compiler's temporary files would land here
    for k in [k for k in os.environ if k.startswith("SDX_JIT_")]:
        monkeypatch.delenv(k)
    cache = tmp_path / "cache"
    killed_mid_compile = 0
    for i in range(40):
        # New constants each time: a new kernel, so every session starts a compile (a long one:
        # about a second, so the compiler is still running when the session goes).
        sess = sdx.InferenceSession(_chain(ops=1000, seed=1000 + i).SerializeToString(), _options(cache))
        for _ in range(3):
            sess.run(None, {"x": _X})
        deadline = time.monotonic() + 20
        while not _leftover_processes(tmpdir) and sess.jit_stats()["compiled"] == 0 and time.monotonic() < deadline:
            time.sleep(0.01)
        time.sleep((i % 5) * 0.04)  # destroy at varying points of the compile
        if sess.jit_stats()["compiled"] == 0 and _leftover_processes(tmpdir):
            killed_mid_compile += 1
        del sess
        gc.collect()
    time.sleep(1.0)
    assert _leftover_processes(tmpdir) == []
    assert sorted(os.listdir(tmpdir)) == []  # no private compile folder, no cc*.s
    assert list((cache / "v1").glob("*.tmp.*")) == []
    assert killed_mid_compile >= 20, f"only {killed_mid_compile} of 40 sessions were destroyed during a compile"
