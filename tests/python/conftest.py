import os
import sys

import pytest

# The disk plan cache (on by default for users) is off for the suite: many tests load one model again and
# again and check what its first calls do (warmup, freeze, capture), which a cache hit changes.
# test_plan_disk_cache.py turns it on, in folders of its own.
os.environ.setdefault("SDX_DISK_PLAN_CACHE", "0")

# Tests run against the installed `sdx` package (scripts/setup.sh installs it). Running from the
# repository root must not shadow it with the source folder, which lacks the native module.
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]


@pytest.fixture
def tmp_model_dir(tmp_path):
    return tmp_path
