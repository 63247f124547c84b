import os
import sys

import pytest

# Tests run against the installed `sdx` package (scripts/setup.sh installs it). Running from the
# repository root must not shadow it with the source folder, which lacks the native module.
HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path = [p for p in sys.path if os.path.abspath(p or ".") not in (ROOT, os.path.join(ROOT, "python"))]


@pytest.fixture
def tmp_model_dir(tmp_path):
    return tmp_path
