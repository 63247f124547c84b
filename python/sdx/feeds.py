"""Feeds for a session from command-line specs (NAME=FILE.npy, NAME=DIMS), random values for the
inputs not given. Its own module so that the commands that need feeds (cli's run and inspect, bench,
profiling) share it without importing one another: only __main__ imports cli.

    feeds = make_feeds(sess, ["x=1x3x224x224", "mask=mask.npy"], seed=0, dim=1)
"""
from __future__ import annotations

import numpy as np


def _parse_dims(text: str) -> list[int]:
    text = text.strip()
    if text in ("", "scalar"):
        return []
    return [int(x) for x in text.replace(",", "x").split("x")]


def _random_input(arg, dims: list[int] | None, rng: np.random.Generator, dim_default: int) -> np.ndarray:
    from ._session import _SDX_TO_NP

    if dims is None:
        dims = [d if isinstance(d, int) and d >= 0 else dim_default for d in (arg.shape or [])]
    elem = arg.type[len("tensor("):-1] if arg.type.startswith("tensor(") else "float"
    if elem == "string":
        return np.array([f"s{i}" for i in range(int(np.prod(dims)))], dtype=object).reshape(dims)
    dt = _SDX_TO_NP.get(elem)
    if dt is None:
        raise SystemExit(f"sdx run: cannot make a random value for input '{arg.name}' of type {arg.type}; pass it with --input")
    dt = np.dtype(dt)
    if dt == np.bool_:
        return rng.random(dims) < 0.5
    if dt.kind in "iu":
        return rng.integers(0, 10, size=dims).astype(dt)
    return rng.standard_normal(dims).astype(dt)


def make_feeds(sess, specs, seed: int, dim: int) -> dict:
    """Feeds from NAME=FILE.npy / NAME=DIMS specs; random values for the inputs not given."""
    given: dict[str, np.ndarray] = {}
    dims_for: dict[str, list[int]] = {}
    for spec in specs or []:
        if "=" not in spec:
            raise SystemExit(f"sdx: expected NAME=FILE.npy or NAME=DIMS, got '{spec}'")
        name, value = spec.split("=", 1)
        if value.endswith(".npy"):
            given[name] = np.load(value, allow_pickle=False)
        else:
            try:
                dims_for[name] = _parse_dims(value)
            except ValueError:
                raise SystemExit(f"sdx: '{value}' is neither a .npy file nor dims like 1x3x224x224") from None
    known = {a.name for a in sess.get_inputs()}
    for name in list(given) + list(dims_for):
        if name not in known:
            raise SystemExit(f"sdx: the model has no input '{name}'; its inputs are: {', '.join(sorted(known))}")
    rng = np.random.default_rng(seed)
    feeds = {}
    for a in sess.get_inputs():
        feeds[a.name] = given[a.name] if a.name in given else _random_input(a, dims_for.get(a.name), rng, dim)
    return feeds
