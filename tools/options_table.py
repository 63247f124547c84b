#!/usr/bin/env python3
"""The README's options table against the session option table (src/runtime/session_options.inc).

    PYTHONPATH=build/python python3 tools/options_table.py          # a markdown row for every option
    PYTHONPATH=build/python python3 tools/options_table.py --check  # what README.md gets wrong; exit 1 if any

The README's rows are hand-written (their "meaning" says more than a row's one-line help), so they are
checked rather than generated: every option of the table has a row naming its Python name (and C++
field), with its environment variable and its default; every row that names an option names one of the
table; rows whose first cell is "—" are variables that are not session options, and each must be a
switch of the table (SDX_NO_MEMORY_PLANNER) or one of NOT_SESSION_OPTIONS below. A new row in the table
without its README row fails tests/python/test_options_table.py. `--print` rows are a starting point.

A README default cell is the table's default as this script writes it (on/off for booleans, the number,
the mode name, "none" for an empty string or list), optionally followed by " (explanation)"; backticks
are ignored.
"""
from __future__ import annotations

import argparse
import pathlib
import re
import sys

# Variables documented in the options table that no session reads: process-wide kill switches and caches,
# diagnostics and the op timing tracker (each read by its own subsystem).
NOT_SESSION_OPTIONS = {"SDX_NO_ONEDNN", "SDX_NO_WINOGRAD", "SDX_NO_POINTWISE_CONV", "SDX_CACHE_DIR", "SDX_DIAGNOSTICS_ENABLED", "SDX_OP_TIMING"}

README_HEADER = "| `SessionOptions` field (Python / C++) | environment variable | default | meaning |"
REPO = pathlib.Path(__file__).resolve().parent.parent


def render_default(row: dict) -> str:
    """The table's default as the README writes it."""
    d = row["default"]
    if isinstance(d, bool):
        return "on" if d else "off"
    if isinstance(d, list):
        return ",".join(d) if d else "none"
    if isinstance(d, str):
        return d if d else "none"
    return repr(d)


def markdown_rows(table: list[dict], switches: list[dict]) -> list[str]:
    rows = []
    for r in table:
        field = f"`{r['name']}`" if r["field"] == r["name"] else f"`{r['name']}` / `{r['field']}`"
        rows.append(f"| {field} | `{r['env']}` | {render_default(r)} | {r['help']} |")
    for s in switches:
        rows.append(f"| — | `{s['env']}=1` | unset | {s['help']} |")
    return rows


def _cells(line: str) -> list[str]:
    # Cells split on "|" that markdown does not escape ("\|" stays inside a cell).
    return [c.strip() for c in re.split(r"(?<!\\)\|", line.strip().strip("|"))]


def readme_rows(readme: str) -> list[list[str]]:
    """The options table's rows (cells), after its header and separator."""
    lines = readme.splitlines()
    try:
        start = next(i for i, line in enumerate(lines) if line.strip() == README_HEADER)
    except StopIteration:
        raise ValueError(f"README has no options table (header {README_HEADER!r})") from None
    rows = []
    for line in lines[start + 2:]:
        if not line.startswith("|"):
            break
        rows.append(_cells(line))
    return rows


def problems(table: list[dict], switches: list[dict], readme: str) -> list[str]:
    """Every way the README's options table disagrees with the session option table (empty: none)."""
    out: list[str] = []
    by_env: dict[str, list[str]] = {}
    for cells in readme_rows(readme):
        if len(cells) != 4:
            out.append(f"README options row with {len(cells)} cells, not 4: {' | '.join(cells)[:80]}")
            continue
        m = re.match(r"`(SDX_[A-Z0-9_]+(?:=[^`]*)?)`", cells[1])
        if not m:
            out.append(f"README options row names no variable first: {cells[1][:60]}")
            continue
        if m.group(1) in by_env:
            out.append(f"README options table has two rows for {m.group(1)}")
        by_env[m.group(1)] = cells

    options = {r["env"]: r for r in table}
    switch_envs = {s["env"] for s in switches}
    for env, cells in by_env.items():
        name = env.split("=")[0]
        if cells[0].startswith("—"):
            if env in options:
                out.append(f"README marks {env} as not a session option ('—'), but it is {options[env]['name']}")
            elif name not in switch_envs and name not in NOT_SESSION_OPTIONS:
                out.append(f"README row for {env} is neither an option, a switch of the table, nor in NOT_SESSION_OPTIONS")
        elif env not in options:
            out.append(f"README row for {env} names no option of src/runtime/session_options.inc")

    for r in table:
        cells = by_env.get(r["env"])
        if cells is None:
            out.append(f"option {r['name']} ({r['env']}) has no row in README's options table")
            continue
        names = set(re.findall(r"`([^`]+)`", cells[0]))
        for want in {r["name"], r["field"]}:
            if want not in names:
                out.append(f"README row for {r['env']} does not name `{want}` in its first cell")
        want = render_default(r)
        got = cells[2].replace("`", "")
        if got != want and not got.startswith(want + " ("):
            out.append(f"README default of {r['name']} ({r['env']}) is {got!r}; the table's is {want!r}")
    for env in sorted(switch_envs):
        if not any(e.split("=")[0] == env for e in by_env):
            out.append(f"switch {env} has no row in README's options table")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="compare README.md's options table with the table")
    ap.add_argument("--readme", default=str(REPO / "README.md"))
    args = ap.parse_args()
    from sdx import _sdx

    table, switches = _sdx.session_option_table(), _sdx.session_option_switches()
    if not args.check:
        print(README_HEADER)
        print("|---|---|---|---|")
        print("\n".join(markdown_rows(table, switches)))
        return 0
    found = problems(table, switches, pathlib.Path(args.readme).read_text())
    for p in found:
        print(p, file=sys.stderr)
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
