#!/usr/bin/env bash
# Fuzzes the ONNX parsers with libFuzzer (clang, ASan + UBSan), seeded with the
# models and tensors of the ONNX node test suite.
#
#   bash scripts/fuzz.sh [onnx_model|tensor_proto] [SECONDS]
# Crashes are written to build/fuzz/crashes/.
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-onnx_model}
seconds=${2:-60}
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "[sdx fuzz] installing clang and its libFuzzer runtime" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSDX_BUILD_FUZZERS=ON -DSDX_BUILD_TESTS=OFF -DSDX_BUILD_PYTHON=ON >/dev/null
ninja -C build/fuzz "${target}_fuzzer" >/dev/null
data=$(python3 python/sdx/conformance_data.py)
corpus=build/fuzz/corpus/$target
mkdir -p "$corpus" build/fuzz/crashes
if [ -z "$(ls -A "$corpus")" ]; then
  if [ "$target" = onnx_model ]; then
    for d in "$data"/*/; do cp "$d/model.onnx" "$corpus/$(basename "$d").onnx"; done
  else
    for f in "$data"/*/test_data_set_0/*.pb; do cp "$f" "$corpus/$(basename "$(dirname "$(dirname "$f")")")_$(basename "$f")"; done
  fi
fi
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "build/fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -artifact_prefix=build/fuzz/crashes/ "$corpus"
