"""Shape buckets chosen from traffic (issue 21's automatic buckets; the algorithm is plan/bucket_choice.h):
given the sizes a dynamic dim took and how often, the set of at most K bucket sizes with the least expected
padding (plus, with plan_cost, what holding each bucket's plan costs), by an exact dynamic program, where
fixed schemes (powers of two, multiples of N) put buckets whatever the traffic.

    sdx.choose_buckets({1: 900, 3: 40, 7: 60}, 2)            # {'sizes': [1, 7], 'padding': 160.0, ...}
    sdx.choose_buckets([5, 5, 17, 30], 2, power_of_two=True)  # the best 2 powers of two, for comparison
    sdx.choose_buckets_2d([(1, 40), (3, 90), (3, 95)], 2, 2)  # batch x length, padded elements B*L - b*l

A trace is a {size: count} dict or a list of observed sizes (each counting once). Raises sdx.InvalidArgument
for sizes < 0, counts < 0 or max_buckets < 1.
"""
from __future__ import annotations

from collections import Counter
from typing import Iterable, Mapping

from . import _sdx
from ._sdx import InvalidArgument


def _counts(trace: Mapping[int, float] | Iterable[int]) -> tuple[list, list]:
    items = list(trace.items()) if isinstance(trace, Mapping) else list(Counter(int(x) for x in trace).items())
    for size, count in items:
        if int(size) != size or size < 0:
            raise InvalidArgument(f"bucket trace: size {size!r} is not a whole number >= 0")
        if count < 0:
            raise InvalidArgument(f"bucket trace: size {size} has a negative count {count!r}")
    return [int(s) for s, _ in items], [float(c) for _, c in items]


def _check_k(name: str, k: int) -> int:
    if isinstance(k, bool) or not isinstance(k, int) or k < 1:
        raise InvalidArgument(f"{name} must be a whole number >= 1, not {k!r}")
    return k


def choose_buckets(trace: Mapping[int, float] | Iterable[int], max_buckets: int, *, plan_cost: float = 0.0,
                   power_of_two: bool = False) -> dict:
    """{"sizes": ascending bucket sizes (the largest observed size among them), "padding": sum of count *
    (bucket - size), "cost": padding + plan_cost * sum of the sizes}; power_of_two: the best choice among
    powers of two instead of any size."""
    sizes, counts = _counts(trace)
    if plan_cost < 0:
        raise InvalidArgument(f"plan_cost must be >= 0, not {plan_cost!r}")
    return _sdx.choose_buckets(sizes, counts, _check_k("max_buckets", max_buckets), float(plan_cost),
                               bool(power_of_two))


def choose_buckets_2d(trace: Iterable[tuple], max_first: int, max_second: int, *, power_of_two: bool = False) -> dict:
    """Two dims at once, from (first, second) or (first, second, count) entries: {"first", "second": each
    dim's bucket sizes, "padding": padded elements, sum of count * (B * L - b * l)}."""
    first, second, counts = [], [], []
    for entry in trace:
        a, b, c = (tuple(entry) + (1,))[:3]
        for v in (a, b):
            if int(v) != v or v < 0:
                raise InvalidArgument(f"bucket trace: size {v!r} is not a whole number >= 0")
        first.append(int(a))
        second.append(int(b))
        counts.append(float(c))
    return _sdx.choose_buckets_2d(first, second, counts, _check_k("max_first", max_first),
                                  _check_k("max_second", max_second), bool(power_of_two))
