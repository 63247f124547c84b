"""get_name() for onnxruntime's Python API test file, pointed at the generated testdata.

The test file does `from helper import get_name`; run.py puts this folder on sys.path and
runs the tests from a work folder holding ./testdata/ (built by make_testdata.py).
get_name returns a path relative to the working directory, as onnxruntime's own helper
does: test_run_with_adapter builds os.getcwd() + "/" + get_name(...), which only works
for a relative path.
"""
import os
import sys


def get_name(name):
    if os.path.exists(name):
        return name
    rel = os.path.join("testdata", name)
    if os.path.exists(rel):
        return rel
    raise FileNotFoundError(f"Unable to find '{name}' or '{rel}' (cwd {os.getcwd()}; run through tools/ort_api_tests/run.py)")


def get_shared_library_filename_for_platform(base_name):
    if sys.platform.startswith("win"):
        return base_name + ".dll"
    if sys.platform.startswith("darwin"):
        return "lib" + base_name + ".dylib"
    return "lib" + base_name + ".so"
