#!/usr/bin/env bash
# Every test: same set-up as the quick start (with the C++ tests built), then the
# C++ tests (ctest), the Python tests (pytest, including the conformance gate).
set -euo pipefail
cd "$(dirname "$0")/.."
SDX_BUILD_TESTS=ON bash scripts/setup.sh
echo "== C++ tests (ctest) =="
ctest --test-dir build/wheel --output-on-failure -j"$(nproc)" --timeout 600
echo "== Python tests (pytest) =="
python3 -m pytest tests/python -q -p no:cacheprovider
