#!/usr/bin/env bash
# Every test: same set-up as the quick start (with the C++ tests built), the
# concurrency tests under ThreadSanitizer, then the C++ tests (ctest) and the
# Python tests (pytest, including the ONNX conformance gate).
set -euo pipefail
cd "$(dirname "$0")/.."
SDX_BUILD_TESTS=ON bash scripts/setup.sh

echo "== Concurrency tests under ThreadSanitizer =="
export CCACHE_BASEDIR="$PWD"
cmake -S . -B build/tsan -G Ninja -DSDX_SANITIZER=thread -DSDX_BUILD_PYTHON=OFF -DSDX_BUILD_TESTS=ON >build/tsan-configure.log
ninja -C build/tsan sdx_tests >build/tsan-build.log 2>&1 || { tail -n 40 build/tsan-build.log; exit 1; }
# Every test whose name says it exercises concurrency; TSAN turns any data race into a failure.
TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build/tsan/tests/sdx_tests --gtest_filter='*Concurren*' --gtest_brief=1
# Every test of sdx-serve's layer (admission, sessions and their reaper, refs, batching, metrics: most of them
# run threads), when gRPC is installed.
if ninja -C build/tsan -t targets all | grep -q '^sdx_serve_tests:'; then
  ninja -C build/tsan sdx_serve_tests >build/tsan-serve-build.log 2>&1 || { tail -n 40 build/tsan-serve-build.log; exit 1; }
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" build/tsan/tests/sdx_serve_tests --gtest_brief=1
fi

echo "== libFuzzer: front-end and server-request targets, 30 s each on the committed corpus (fuzz/README.md) =="
# onnx_model_fuzzer is left out: it needs a clang ASan build of all of libsdx (bash scripts/fuzz.sh onnx_model).
for target in tensor_proto onnx_loader bundle serve_request; do
  SDX_FUZZ_SEED=1 bash scripts/fuzz.sh "$target" 30 >"build/fuzz-$target.log" 2>&1 || { tail -n 60 "build/fuzz-$target.log"; exit 1; }
  grep -E '^\[sdx fuzz\]|^Done ' "build/fuzz-$target.log"
done

echo "== C++ tests (ctest) =="
ctest --test-dir build/wheel --output-on-failure -j"$(nproc)" --timeout 600
echo "== Python tests (pytest) =="
python3 -m pytest tests/python -q -p no:cacheprovider
