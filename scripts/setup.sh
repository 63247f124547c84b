#!/usr/bin/env bash
# Installs what sdx needs (Debian packages + PyPI), then builds and installs the
# `sdx` Python package and CLI (distribution "sdx-runtime"). Safe to re-run: it skips what is already
# there and rebuilds incrementally (ccache + a persistent build/wheel folder). The self-contained release
# wheel is scripts/build_wheel.sh's.
#
#   bash scripts/setup.sh            # build without C++ tests
#   SDX_BUILD_TESTS=ON bash scripts/setup.sh
set -euo pipefail
cd "$(dirname "$0")/.."

ONNX_VERSION=1.23.2
APT_PACKAGES="build-essential cmake ninja-build ccache libprotobuf-dev protobuf-compiler libgtest-dev libopenblas-dev libdnnl-dev libxxhash-dev libgrpc++-dev protobuf-compiler-grpc libcivetweb-dev nlohmann-json3-dev"
# grpcio-tools (cmake/serve.cmake generates the sdx.v1 stubs of sdx.remote with it) stays below 1.81: from
# 1.81 on it needs protobuf 7, which would replace the protobuf 6 that onnx and tritonclient run on.
PIP_PACKAGES="numpy onnx==${ONNX_VERSION} pytest nanobind>=2.0 scikit-build-core>=0.10 lizard ml_dtypes flatbuffers tritonclient[grpc] grpcio grpcio-tools<1.81 pyyaml"

log() { echo "[sdx setup] $*" >&2; }

missing=""
for p in $APT_PACKAGES; do
  dpkg -s "$p" >/dev/null 2>&1 || missing="$missing $p"
done
if [ -n "$missing" ]; then
  log "installing Debian packages:$missing"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO=sudo
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing >/dev/null
fi

PY=${PYTHON:-python3}
read -r -a PIP_ARGS <<<"$PIP_PACKAGES"  # one word per package, never glob-expanded ("tritonclient[grpc]")
if ! $PY -c "import numpy, onnx, pytest, nanobind, scikit_build_core, lizard, ml_dtypes, flatbuffers, tritonclient.grpc, grpc, grpc_tools, yaml; assert onnx.__version__ == '${ONNX_VERSION}'" 2>/dev/null; then
  log "installing Python packages: $PIP_PACKAGES"
  $PY -m pip install -q --disable-pip-version-check "${PIP_ARGS[@]}"
fi

# The distribution is "sdx-runtime" (the import name stays `sdx`); one installed under the old name "sdx"
# owns the same files, so it goes first.
if $PY -m pip show sdx >/dev/null 2>&1; then
  log "uninstalling the distribution \"sdx\" (now \"sdx-runtime\")"
  $PY -m pip uninstall -y -q --disable-pip-version-check sdx
fi

export CCACHE_BASEDIR="$PWD"
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
log "building and installing sdx (log: build/pip-install.log)"
mkdir -p build
if ! $PY -m pip install --no-build-isolation --disable-pip-version-check -v . \
      -Ccmake.define.SDX_BUILD_TESTS="${SDX_BUILD_TESTS:-OFF}" >build/pip-install.log 2>&1; then
  tail -n 60 build/pip-install.log >&2
  log "build failed; full log in build/pip-install.log"
  exit 1
fi
log "installed: $(command -v sdx)"
