#!/usr/bin/env bash
# Fuzzes sdx with libFuzzer (clang, ASan + UBSan), seeded with the committed corpus fuzz/corpus/<target>/
# (regenerate it with `python3 fuzz/make_corpus.py`).
#
#   bash scripts/fuzz.sh [onnx_model|onnx_loader|tensor_proto|bundle|serve_request] [SECONDS]
#
# onnx_model   whole models: load, verify, optimize, plan, run (links all of libsdx: a full ASan build)
# onnx_loader  whole models through the front end only: parse, import, type inference, verifier
# tensor_proto TensorProto / SequenceProto / OptionalProto parsing
# bundle       .sdx bundles: the container checks, the optimized graph with its node opsets, the model gate
# serve_request sdx-serve's request decoding: bytes as a KServe inference.ModelInferRequest, decoded against
#              a fixed model's inputs (needs gRPC installed, as sdx-serve does: cmake/serve.cmake)
# (onnx_loader, tensor_proto, bundle and serve_request link a small library of src/core, src/frontend and
# src/ir.)
#
# The working corpus (the committed seeds plus what libFuzzer adds) is build/fuzz/corpus/<target>; the
# repository is never written. Crashes go to build/fuzz/crashes/. Prints the build and fuzzing times.
# SDX_FUZZ_SEED=N fixes libFuzzer's random seed (CI uses 1).
set -euo pipefail
cd "$(dirname "$0")/.."
target=${1:-onnx_model}
seconds=${2:-60}
case "$target" in onnx_model|onnx_loader|tensor_proto|bundle|serve_request) ;; *) echo "unknown fuzz target '$target'" >&2; exit 2 ;; esac
if ! command -v clang++ >/dev/null || ! ls /usr/lib/llvm-*/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  echo "[sdx fuzz] installing clang and its libFuzzer runtime" >&2
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-dev >/dev/null 2>&1 ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq clang libclang-rt-14-dev >/dev/null
fi
export CCACHE_BASEDIR="$PWD"
mkdir -p build
t0=$(date +%s)
cmake -S . -B build/fuzz -G Ninja -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DSDX_BUILD_FUZZERS=ON -DSDX_BUILD_TESTS=OFF -DSDX_BUILD_PYTHON=OFF >build/fuzz-configure.log
ninja -C build/fuzz "${target}_fuzzer" >build/fuzz-build.log 2>&1 || { tail -n 40 build/fuzz-build.log; exit 1; }
t1=$(date +%s)
echo "[sdx fuzz] built ${target}_fuzzer in $((t1 - t0)) s" >&2
corpus=build/fuzz/corpus/$target
seeds=fuzz/corpus/$target
[ "$target" = onnx_loader ] && seeds=fuzz/corpus/onnx_model   # same input format
mkdir -p "$corpus" build/fuzz/crashes
cp -n "$seeds"/* "$corpus"/
ASAN_OPTIONS=detect_leaks=0:allocator_may_return_null=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
  "build/fuzz/${target}_fuzzer" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -max_len=65536 \
  -print_final_stats=1 ${SDX_FUZZ_SEED:+-seed="$SDX_FUZZ_SEED"} -artifact_prefix=build/fuzz/crashes/ "$corpus"
echo "[sdx fuzz] fuzzed ${target} for $(($(date +%s) - t1)) s (build + fuzz $(($(date +%s) - t0)) s)" >&2
