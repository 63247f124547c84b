"""Feed construction (sdx.feeds.make_feeds) is its own module, shared by the commands that need feeds
(cli's run and inspect, bench, profile) so that none of them imports another: only __main__ imports cli."""
import ast
import pathlib

import numpy as np
import pytest

import sdx
from sdx.feeds import make_feeds
from models import mlp_model

PACKAGE = pathlib.Path(sdx.__file__).resolve().parent
SOURCE_PACKAGE = pathlib.Path(__file__).resolve().parent.parent.parent / "python" / "sdx"


def _imported_modules(path: pathlib.Path) -> set:
    """The sdx modules a file imports (relative `from .x import` / `from . import x`, or `sdx.x`)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1 and node.module:
                found.add(node.module.split(".")[0])
            elif node.level == 1:
                found.update(a.name for a in node.names)
            elif node.module and node.module.startswith("sdx."):
                found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found.update(a.name.split(".")[1] for a in node.names if a.name.startswith("sdx."))
    return found


@pytest.mark.parametrize("package", [SOURCE_PACKAGE, PACKAGE], ids=["source", "built"])
def test_only_main_imports_cli(package):
    importers = sorted(p.name for p in package.glob("*.py") if "cli" in _imported_modules(p))
    assert importers == ["__main__.py"]


def test_make_feeds_from_specs_and_random_values(tmp_path):
    sess = sdx.InferenceSession(mlp_model().SerializeToString())
    name = sess.get_inputs()[0].name
    random = make_feeds(sess, [], seed=3, dim=2)
    assert set(random) == {a.name for a in sess.get_inputs()}
    assert np.array_equal(random[name], make_feeds(sess, None, seed=3, dim=2)[name])  # seeded
    given = np.ones(random[name].shape, np.float32)
    np.save(tmp_path / "x.npy", given)
    assert np.array_equal(make_feeds(sess, [f"{name}={tmp_path / 'x.npy'}"], 0, 1)[name], given)
    with pytest.raises(SystemExit, match="has no input 'nope'"):
        make_feeds(sess, ["nope=1x2"], 0, 1)
    with pytest.raises(SystemExit, match="expected NAME=FILE.npy or NAME=DIMS"):
        make_feeds(sess, ["x"], 0, 1)
