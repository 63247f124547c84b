"""The layer rule of src/ (SDX_LAYERS in CMakeLists.txt, checked by tools/check_layers.py before any layer
compiles): the tree obeys it, and a forbidden include, an unknown folder or a broken table fails."""
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "tools", "check_layers.py")
CMAKELISTS = os.path.join(ROOT, "CMakeLists.txt")


def run_check(src, *extra):
    return subprocess.run([sys.executable, CHECK, "--src", src, "--from-cmake", CMAKELISTS, *extra],
                          capture_output=True, text=True, timeout=120)


def test_the_tree_obeys_the_table():
    r = run_check(os.path.join(ROOT, "src"))
    assert r.returncode == 0, r.stderr


@pytest.fixture
def tree(tmp_path):
    dst = tmp_path / "src"
    shutil.copytree(os.path.join(ROOT, "src"), dst)
    return dst


@pytest.mark.parametrize("victim, include, layer, target", [
    ("opt/pass.cc", "backend/kernel.h", "opt", "backend/kernel.h"),            # the optimizer reaching a backend
    ("runtime/session.cc", "frontend/onnx/onnx_loader.h", "runtime", "frontend/onnx/onnx_loader.h"),
    ("core/shape.cc", "ir/graph.h", "core", "ir/graph.h"),                     # upwards from the bottom
    ("backend/cpu/jit/jit_engine.cc", "runtime/session.h", "backend", "runtime/session.h"),  # the JIT is backend
    ("serve/model_repository.cc", "runtime/session.h", "serve", "runtime/session.h"),  # the server: public API
])
def test_a_forbidden_include_fails_naming_file_line_and_rule(tree, victim, include, layer, target):
    path = tree / victim
    lines = path.read_text().split("\n")
    lines.insert(1, f'#include "{include}"')
    path.write_text("\n".join(lines))
    r = run_check(str(tree))
    assert r.returncode == 1
    assert f"{path}:2: {layer} may not include {target}" in r.stderr
    assert "SDX_LAYERS" in r.stderr


def test_a_folder_without_a_row_fails(tree):
    (tree / "cluster").mkdir()
    (tree / "cluster" / "router.cc").write_text('#include "runtime/session.h"\n')
    r = run_check(str(tree))
    assert r.returncode == 1 and "not a layer" in r.stderr


def test_a_broken_table_is_an_error(tree):
    r = subprocess.run([sys.executable, CHECK, "--src", str(tree), "--layer", "opt=core,nosuch", "--layer", "core="],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 2 and "nosuch" in r.stderr


def test_the_build_runs_the_check_before_every_layer():
    text = open(CMAKELISTS).read()
    assert "add_dependencies(sdx_${layer} sdx_check_layers)" in text
    assert "tools/check_layers.py" in text


def test_the_public_headers_stand_alone(tmp_path):
    r = run_check(os.path.join(ROOT, "src"), "--public", os.path.join(ROOT, "include"))
    assert r.returncode == 0, r.stderr
    public = tmp_path / "include" / "sdx"
    shutil.copytree(os.path.join(ROOT, "include", "sdx"), public)
    header = public / "session.h"
    lines = header.read_text().split("\n")
    lines.insert(1, '#include "runtime/session.h"')
    header.write_text("\n".join(lines))
    r = run_check(os.path.join(ROOT, "src"), "--public", str(tmp_path / "include"))
    assert r.returncode == 1
    assert f"{header}:2: a public header may not include runtime/session.h" in r.stderr
