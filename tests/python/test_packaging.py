"""Packaging: the distribution is "sdx-runtime" (import name `sdx`), and the package carries the C/C++ SDK
(CMakeLists.txt, "Install layout"): sdx/include/sdx/*.h, sdx/lib/libsdx.so and
sdx/lib/cmake/sdx/sdxConfig.cmake, found through sdx._paths. No wheel is built here:
scripts/build_wheel.sh makes the release wheel and scripts/check_wheel_clean_install.sh proves it.

SDX_PACKAGING_BUILD_DIR (default build/wheel, scripts/setup.sh's) is the configured build folder whose
install rules test_cmake_install_lays_out_the_package checks."""
import importlib.util
import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BUILD_DIR = os.path.join(ROOT, os.environ.get("SDX_PACKAGING_BUILD_DIR", os.path.join("build", "wheel")))
HEADERS = ("sdx.h", "sdx_runtime_c.h", "session.h", "session_options.h", "status.h", "tensor.h",
           "element_type.h", "dtype_defs.inc")
CMAKE = shutil.which("cmake")


def _pyproject():
    text = open(os.path.join(ROOT, "pyproject.toml")).read()
    try:
        import tomllib
    except ImportError:  # Python < 3.11: the two values read here
        return {"project": {"name": re.search(r'^name\s*=\s*"([^"]+)"', text, re.M).group(1)}}
    return tomllib.loads(text)


def _paths_module(package_dir):
    """python/sdx/_paths.py, loaded on its own (without `sdx`), as if it were in package_dir."""
    spec = importlib.util.spec_from_file_location("sdx_paths_under_test", os.path.join(ROOT, "python", "sdx", "_paths.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    mod._PACKAGE_DIR = package_dir
    return mod


def _check_layout(package_dir):
    paths = _paths_module(package_dir)
    for h in HEADERS:
        assert os.path.isfile(os.path.join(paths.get_include(), "sdx", h)), h
    assert os.path.isfile(os.path.join(paths.get_lib_dir(), "libsdx.so"))
    for f in ("sdxConfig.cmake", "sdxConfigVersion.cmake", "sdxTargets.cmake"):
        assert os.path.isfile(os.path.join(paths.get_cmake_dir(), f)), f
    # No header of src/ leaks into the SDK, and every public header is shipped.
    shipped = set(os.listdir(os.path.join(paths.get_include(), "sdx")))
    assert shipped == set(os.listdir(os.path.join(ROOT, "include", "sdx")))


def test_distribution_name_and_package():
    meta = _pyproject()
    assert meta["project"]["name"] == "sdx-runtime"  # "sdx" on PyPI is an unrelated project
    if "tool" in meta:
        assert meta["tool"]["scikit-build"]["wheel"]["packages"] == ["python/sdx"]  # import name: sdx
        assert meta["project"]["scripts"]["sdx"] == "sdx.cli:main"


def test_paths_module_names_the_cmake_prefix_layout():
    paths = _paths_module("/x/site-packages/sdx")
    assert paths.get_include() == "/x/site-packages/sdx/include"
    assert paths.get_lib_dir() == "/x/site-packages/sdx/lib"
    assert paths.get_cmake_dir() == "/x/site-packages/sdx/lib/cmake/sdx"
    r = subprocess.run([sys.executable, os.path.join(ROOT, "python", "sdx", "_paths.py"), "--cmake-dir"],
                       capture_output=True, text=True, timeout=30)
    assert r.returncode == 0 and r.stdout.strip().endswith(os.path.join("sdx", "lib", "cmake", "sdx")), r.stderr


def test_scripts_parse():
    for s in ("build_wheel.sh", "check_wheel_clean_install.sh", "setup.sh"):
        r = subprocess.run(["bash", "-n", os.path.join(ROOT, "scripts", s)], capture_output=True, text=True)
        assert r.returncode == 0, (s, r.stderr)


@pytest.mark.skipif(CMAKE is None, reason="cmake not installed")
@pytest.mark.skipif(not os.path.isfile(os.path.join(BUILD_DIR, "cmake_install.cmake")),
                    reason=f"{BUILD_DIR} is not a configured build (bash scripts/setup.sh)")
def test_cmake_install_lays_out_the_package(tmp_path):
    r = subprocess.run([CMAKE, "--install", BUILD_DIR, "--prefix", str(tmp_path)], capture_output=True, text=True,
                       timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    _check_layout(str(tmp_path / "sdx"))
    ext = [f for f in os.listdir(tmp_path / "sdx") if f.startswith("_sdx") and f.endswith(".so")]
    if ext:  # built with SDX_BUILD_PYTHON: the extension finds libsdx in lib/
        d = subprocess.run(["readelf", "-d", str(tmp_path / "sdx" / ext[0])], capture_output=True, text=True).stdout
        assert "[$ORIGIN/lib]" in d, d


def _installed_sdx():
    """The `sdx` the suite runs against, when it was installed by pip (scripts/setup.sh), else None."""
    try:
        import importlib.metadata as md
        import sdx
    except ImportError:
        return None
    try:
        dist = md.distribution("sdx-runtime")
    except md.PackageNotFoundError:
        return None
    return sdx, dist


def test_installed_distribution_is_sdx_runtime():
    import importlib.metadata as md
    try:
        import sdx
    except ImportError:
        pytest.skip("sdx is not importable (bash scripts/setup.sh installs it)")
    if not hasattr(md, "packages_distributions"):
        pytest.skip("Python < 3.10")
    owners = md.packages_distributions().get("sdx", [])
    if not owners:
        pytest.skip(f"sdx is not installed by pip ({sdx.__file__})")
    # Only "sdx-runtime" owns the package's files: scripts/setup.sh uninstalls the old distribution "sdx".
    assert owners == ["sdx-runtime"], f"sdx is installed as {owners}: rerun bash scripts/setup.sh"
    assert md.version("sdx-runtime") == sdx.__version__


@pytest.mark.skipif(CMAKE is None or shutil.which("c++") is None, reason="cmake or c++ not installed")
def test_find_package_builds_a_program_against_the_installed_package(tmp_path):
    found = _installed_sdx()
    if found is None:
        pytest.skip("sdx is not installed by pip (scripts/setup.sh installs it)")
    sdx, _ = found
    from sdx import _paths
    _check_layout(os.path.dirname(os.path.abspath(_paths.__file__)))
    r = subprocess.run([sys.executable, "-m", "sdx._paths", "--cmake-dir"], capture_output=True, text=True, timeout=60,
                       cwd=tmp_path)
    assert r.returncode == 0 and r.stdout.strip() == _paths.get_cmake_dir(), r.stderr
    src = tmp_path / "src"
    src.mkdir()
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.16)\nproject(consumer C CXX)\n"
        f"find_package(sdx {sdx.__version__} CONFIG REQUIRED)\n"
        "add_executable(consumer main.cc)\ntarget_link_libraries(consumer PRIVATE sdx::sdx)\n"
        "add_executable(consumer_c main.c)\ntarget_link_libraries(consumer_c PRIVATE sdx::sdx)\n")
    (src / "main.cc").write_text(
        '#include <cstdio>\n#include "sdx/sdx.h"\n'
        'int main() {\n  auto s = sdx::Session::load("no-such-model.onnx");\n'
        '  std::printf("%s\\n", s.status().to_string().c_str());\n  return s.is_ok() ? 1 : 0;\n}\n')
    (src / "main.c").write_text(
        '#include <stdio.h>\n#include "sdx/sdx_runtime_c.h"\n'
        'int main(void) { printf("abi %d\\n", (int)sdxGetAbiVersion()); return sdxGetAbiVersion() > 0 ? 0 : 1; }\n')
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    r = subprocess.run([CMAKE, "-S", str(src), "-B", str(tmp_path / "b"), *gen, f"-DCMAKE_PREFIX_PATH={_paths.get_cmake_dir()}"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([CMAKE, "--build", str(tmp_path / "b")], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    r = subprocess.run([str(tmp_path / "b" / "consumer")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and "no-such-model.onnx" in r.stdout, r.stdout + r.stderr
    r = subprocess.run([str(tmp_path / "b" / "consumer_c")], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0 and r.stdout.startswith("abi "), r.stdout + r.stderr
