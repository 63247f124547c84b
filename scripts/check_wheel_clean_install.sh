#!/usr/bin/env bash
# Proves the release wheel (scripts/build_wheel.sh) on a machine with no build tools:
#
#   bash scripts/check_wheel_clean_install.sh [dist/sdx_runtime-....whl]      (as root: debootstrap, chroot)
#
# 1. The wheel: its size, the libraries it bundles (sdx_runtime.libs/).
# 2. A Debian bookworm minbase chroot (debootstrap; python3 and python3-venv only: no compiler, no -dev
#    package; kept in SDX_CHROOT, default /tmp/sdx-chroot, between runs): a fresh venv,
#    `pip install` of the wheel (numpy comes from PyPI), then
#    - ldd of every ELF file the wheel installed: what comes from the system must be glibc's family
#      (libc, libm, libgcc_s, libpthread, libdl, librt, ld-linux) or libstdc++, and nothing is "not found";
#    - `import sdx` runs a small model made on the host with onnx (Conv -> Relu -> Flatten -> MatMul ->
#      Add: oneDNN and OpenBLAS), checked against onnx's reference evaluator; `sdx inspect` on it.
# 3. On the host: a C++ and a C program built against the wheel's headers with find_package(sdx)
#    (CMAKE_PREFIX_PATH from `python3 -m sdx._paths --cmake-dir`), run on the same model; then the C++
#    one again inside the chroot, against the libsdx that pip installed there.
set -euo pipefail
cd "$(dirname "$0")/.."
REPO=$PWD
PY=${PYTHON:-python3}
CHROOT=${SDX_CHROOT:-/tmp/sdx-chroot}
WORK=${SDX_CHECK_DIR:-$REPO/build/check-wheel}
WHEEL=${1:-$(ls -t dist/sdx_runtime-*manylinux*.whl 2>/dev/null | head -n 1)}
[ -n "$WHEEL" ] && [ -f "$WHEEL" ] || { echo "no wheel: run scripts/build_wheel.sh first" >&2; exit 1; }
WHEEL=$(readlink -f "$WHEEL")
log() { echo "[sdx check] $*" >&2; }

echo "== wheel"
echo "$(basename "$WHEEL"): $(du -h "$WHEEL" | cut -f1) ($(stat -c %s "$WHEEL") bytes)"
echo "bundled: $($PY -m zipfile -l "$WHEEL" | awk '$1 ~ /^sdx_runtime.libs\// {sub(".*/", "", $1); printf "%s ", $1}')"
echo "C/C++ SDK: $($PY -m zipfile -l "$WHEEL" | awk '$1 ~ /^sdx\/(include|lib)\// {printf "%s ", $1}')"

# --- the model and its expected output, made on the host (onnx is not installed in the chroot)
rm -rf "$WORK"
mkdir -p "$WORK"
$PY - "$WORK" <<'EOF'
import sys, numpy as np, onnx
from onnx import TensorProto, helper, numpy_helper
from onnx.reference import ReferenceEvaluator
out = sys.argv[1]
rng = np.random.default_rng(0)
inits = [numpy_helper.from_array(rng.standard_normal(s).astype(np.float32), n)
         for n, s in [("W", (4, 3, 3, 3)), ("B", (4,)), ("M", (256, 10)), ("b", (10,))]]
nodes = [helper.make_node("Conv", ["x", "W", "B"], ["c"], pads=[1, 1, 1, 1]),
         helper.make_node("Relu", ["c"], ["r"]),
         helper.make_node("Flatten", ["r"], ["f"], axis=1),
         helper.make_node("MatMul", ["f", "M"], ["m"]),
         helper.make_node("Add", ["m", "b"], ["y"])]
graph = helper.make_graph(nodes, "wheel_check", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, 8, 8])],
                          [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
model.ir_version = 8
onnx.checker.check_model(model)
onnx.save(model, f"{out}/model.onnx")
x = rng.standard_normal((1, 3, 8, 8)).astype(np.float32)
(y,) = ReferenceEvaluator(model).run(None, {"x": x})
np.save(f"{out}/x.npy", x)
np.save(f"{out}/expected.npy", y)
x.tofile(f"{out}/x.bin")
y.astype(np.float32).tofile(f"{out}/expected.bin")
EOF

# --- the chroot
if [ ! -x "$CHROOT/usr/bin/python3" ] || [ ! -e "$CHROOT/usr/lib/python3.11/venv" ]; then
  command -v debootstrap >/dev/null || { apt-get update -qq; DEBIAN_FRONTEND=noninteractive apt-get install -y -qq debootstrap >/dev/null; }
  log "debootstrap bookworm into $CHROOT (about a minute)"
  for m in proc dev; do mountpoint -q "$CHROOT/$m" && { echo "$CHROOT/$m is mounted: umount it first" >&2; exit 1; }; done
  rm -rf --one-file-system "$CHROOT"
  debootstrap --variant=minbase --include=python3,python3-venv bookworm "$CHROOT" http://deb.debian.org/debian \
    >"$WORK/debootstrap.log" 2>&1 || { tail -n 30 "$WORK/debootstrap.log" >&2; exit 1; }
fi
cp /etc/resolv.conf "$CHROOT/etc/resolv.conf"
# pip in the chroot trusts what the host's pip trusts (a proxy's CA, where the network has one).
for f in "${PIP_CERT:-}" "${REQUESTS_CA_BUNDLE:-}" "${SSL_CERT_FILE:-}" /etc/ssl/certs/ca-certificates.crt; do
  if [ -f "$f" ]; then mkdir -p "$CHROOT$(dirname "$f")"; cp "$f" "$CHROOT$f"; fi
done
mounted=""
cleanup() { for m in $mounted; do umount "$m" 2>/dev/null || true; done; }
trap cleanup EXIT
for m in proc dev; do
  if ! mountpoint -q "$CHROOT/$m"; then mount --bind "/$m" "$CHROOT/$m"; mounted="$CHROOT/$m $mounted"; fi
done
echo "== chroot $CHROOT: Debian $(cat "$CHROOT/etc/debian_version"), $(chroot "$CHROOT" python3 --version)"
tools=$(chroot "$CHROOT" sh -c 'for t in cc gcc g++ c++ clang ld as make cmake; do command -v $t; done' || true)
devs=$(chroot "$CHROOT" sh -c "dpkg-query -W -f '\${Package}\n' | grep -E -- '-dev(:|\$)'" || true)
[ -z "$tools$devs" ] || { echo "the chroot is not clean: $tools $devs" >&2; exit 1; }
echo "no compiler, linker, make or cmake; no -dev package"

rm -rf "$CHROOT/root/sdx-check"
mkdir -p "$CHROOT/root/sdx-check"
cp "$WHEEL" "$WORK"/model.onnx "$WORK"/x.npy "$WORK"/expected.npy "$WORK"/x.bin "$WORK"/expected.bin "$CHROOT/root/sdx-check/"
log "venv + pip install $(basename "$WHEEL") in the chroot (numpy from PyPI)"
chroot "$CHROOT" /bin/bash -euo pipefail -c '
  cd /root/sdx-check
  rm -rf /opt/sdx-venv
  python3 -m venv /opt/sdx-venv
  /opt/sdx-venv/bin/pip install -q --disable-pip-version-check ./*.whl
  /opt/sdx-venv/bin/pip list --disable-pip-version-check 2>/dev/null | grep -E "^(sdx-runtime|numpy) "'

echo "== ldd in the chroot (every ELF file the wheel installed)"
chroot "$CHROOT" /opt/sdx-venv/bin/python - <<'EOF'
import glob, os, subprocess, sys, sysconfig
site = sysconfig.get_paths()["platlib"]
files = sorted(glob.glob(f"{site}/sdx/**/*.so*", recursive=True) + glob.glob(f"{site}/sdx_runtime.libs/*"))
glibc = {"libc.so.6", "libm.so.6", "libgcc_s.so.1", "libpthread.so.0", "libdl.so.2", "librt.so.1",
         "ld-linux-x86-64.so.2", "libmvec.so.1", "linux-vdso.so.1"}
allowed = glibc | {"libstdc++.so.6"}
system, bad = set(), []
for f in files:
    out = subprocess.run(["ldd", f], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if not parts or "statically linked" in line:  # a library with no dependencies of its own
            continue
        name = parts[0]
        where = parts[2] if len(parts) > 2 and parts[1] == "=>" else parts[0]
        if "not found" in line:
            bad.append(f"{os.path.basename(f)}: {name} not found")
        elif where.startswith(site) or name == "linux-vdso.so.1":
            continue
        else:
            system.add(name)
            if name not in allowed and os.path.basename(name) not in allowed:
                bad.append(f"{os.path.basename(f)}: {name} from the system ({where})")
    if os.path.basename(f) in ("libsdx.so",) or os.path.basename(f).startswith("_sdx"):
        print(f"ldd {os.path.relpath(f, site)}:")
        print("\n".join("  " + l.strip() for l in out.splitlines()))
print(f"{len(files)} ELF files; from the system: {' '.join(sorted(system, key=os.path.basename))}")
if bad:
    print("NOT self-contained:\n  " + "\n  ".join(bad))
    sys.exit(1)
print("self-contained: nothing from the system beyond glibc's family and libstdc++")
EOF

echo "== import sdx in the chroot"
chroot "$CHROOT" /bin/bash -euo pipefail -c '
cd /root/sdx-check
/opt/sdx-venv/bin/python - <<"EOF"
import importlib.metadata, numpy as np, sdx
print("sdx", sdx.__version__, "(distribution sdx-runtime", importlib.metadata.version("sdx-runtime") + ") from", sdx.__file__)
sess = sdx.InferenceSession("model.onnx")
x, expected = np.load("x.npy"), np.load("expected.npy")
(y,) = sess.run(None, {"x": x})
err = float(np.abs(y - expected).max())
print("inputs", [(i.name, i.type, i.shape) for i in sess.get_inputs()], "-> y", y.shape, y.dtype)
print("y[0, :4] =", np.array2string(y[0, :4], precision=4), "  max |sdx - onnx reference| =", f"{err:.2e}")
assert err < 1e-4, err
from sdx import _paths
print("C/C++ SDK:", _paths.get_cmake_dir())
EOF
/opt/sdx-venv/bin/python -m sdx._paths --cmake-dir >/dev/null
/opt/sdx-venv/bin/sdx inspect model.onnx'

# --- find_package(sdx) on the host, against the wheel's files (unpacked as pip would lay them out)
echo "== find_package(sdx) on the host"
tree="$WORK/site-packages"
$PY -m zipfile -e "$WHEEL" "$tree"
cmake_dir=$(PYTHONPATH="$tree" $PY -m sdx._paths --cmake-dir)
echo "python3 -m sdx._paths --cmake-dir -> ${cmake_dir#$REPO/}"
mkdir -p "$WORK/consumer"
cat >"$WORK/consumer/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.16)
project(sdx_consumer C CXX)
find_package(sdx 0.1 CONFIG REQUIRED)
message(STATUS "sdx ${sdx_VERSION}: ${sdx_DIR}")
add_executable(consumer main.cc)
target_link_libraries(consumer PRIVATE sdx::sdx)
add_executable(consumer_c main.c)
target_link_libraries(consumer_c PRIVATE sdx::sdx)
EOF
cat >"$WORK/consumer/main.cc" <<'EOF'
// A C++ user of the wheel: loads the model, runs it on x, compares with onnx's reference output.
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

#include "sdx/sdx.h"

static std::vector<float> read_floats(const char* path) {
  std::ifstream f(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<float> v(bytes.size() / sizeof(float));
  std::copy(bytes.begin(), bytes.begin() + v.size() * sizeof(float), reinterpret_cast<char*>(v.data()));
  return v;
}

int main(int argc, char** argv) {
  if (argc != 4) return 2;
  sdx::Result<sdx::Session> loaded = sdx::Session::load(argv[1]);
  if (!loaded.is_ok()) { std::fprintf(stderr, "%s\n", loaded.status().to_string().c_str()); return 1; }
  std::vector<float> x = read_floats(argv[2]), expected = read_floats(argv[3]);
  const int64_t dims[] = {1, 3, 8, 8};
  sdx::TensorView view{sdx::ElementType::kFloat32, dims, 4, x.data()};
  sdx::Result<sdx::Value> value = sdx::Value::borrow(view);
  if (!value.is_ok()) return 1;
  sdx::Result<std::vector<sdx::Value>> outs = loaded.value().run({{"x", value.value()}});
  if (!outs.is_ok()) { std::fprintf(stderr, "%s\n", outs.status().to_string().c_str()); return 1; }
  const float* y = static_cast<const float*>(outs.value()[0].data());
  float err = 0;
  for (size_t i = 0; i < expected.size(); ++i) err = std::fmax(err, std::fabs(y[i] - expected[i]));
  std::printf("C++: y[0, :4] = %.4f %.4f %.4f %.4f  max |sdx - onnx reference| = %.2e\n", y[0], y[1], y[2], y[3], err);
  return err < 1e-4f ? 0 : 1;
}
EOF
cat >"$WORK/consumer/main.c" <<'EOF'
/* A C user of the wheel: the stable C ABI links and answers. */
#include <stdio.h>
#include "sdx/sdx_runtime_c.h"
int main(void) {
  printf("C: sdxGetAbiVersion() = %d\n", (int)sdxGetAbiVersion());
  return sdxGetAbiVersion() > 0 ? 0 : 1;
}
EOF
cmake -S "$WORK/consumer" -B "$WORK/consumer/build" -DCMAKE_PREFIX_PATH="$cmake_dir" -DCMAKE_BUILD_TYPE=Release \
  >"$WORK/consumer-configure.log" 2>&1 || { cat "$WORK/consumer-configure.log" >&2; exit 1; }
grep -E "^-- sdx " "$WORK/consumer-configure.log" | sed "s|$REPO/||"
cmake --build "$WORK/consumer/build" >"$WORK/consumer-build.log" 2>&1 || { cat "$WORK/consumer-build.log" >&2; exit 1; }
"$WORK/consumer/build/consumer" "$WORK/model.onnx" "$WORK/x.bin" "$WORK/expected.bin"
"$WORK/consumer/build/consumer_c"
echo "runpath of the host build: $(readelf -d "$WORK/consumer/build/consumer" | sed -n 's/.*Library runpath: //p' | sed "s|$REPO/||g")"
cp "$WORK/consumer/build/consumer" "$CHROOT/root/sdx-check/"
chroot "$CHROOT" /bin/bash -euo pipefail -c '
  cd /root/sdx-check
  export LD_LIBRARY_PATH=$(/opt/sdx-venv/bin/python -m sdx._paths --lib-dir)
  echo -n "in the chroot, "; ./consumer model.onnx x.bin expected.bin'
echo "== OK: $(basename "$WHEEL") installs and runs with no build tools"
