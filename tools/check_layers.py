#!/usr/bin/env python3
"""The layer rule of src/: a file in src/<layer>/ includes only its own layer's headers and those of the
layers it is declared to depend on (the table is SDX_LAYERS in CMakeLists.txt; the build passes it here
and runs this check before it compiles any layer, so a forbidden include fails the build).

    python3 tools/check_layers.py --src src --layer core= --layer ir=core --layer opt=core,ir ...
    python3 tools/check_layers.py --src src --from-cmake CMakeLists.txt        # the same table, read from CMake
    python3 tools/check_layers.py --src src --from-cmake CMakeLists.txt --public include   # and the public API

The public headers (include/, with --public) stand alone: users compile against include/ only, so a header
there includes no layer's header at all ("include/sdx/session.h:12: a public header may not include
runtime/session.h (include/ must not reach into src/)").

Exit 0 when every include is allowed; 1 with one line per forbidden include
("src/opt/x.cc:3: opt may not include backend/kernel.h (opt depends on core, ir, obs)"); 2 on a bad table.
An include of a folder that is not a layer (system, generated or third-party headers) is not checked; a
source folder that is not in the table is an error, so a new folder gets a row before it gets code.
"""
from __future__ import annotations

import argparse
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')
SOURCE_EXTS = (".h", ".cc", ".inc", ".cpp", ".hpp")


def parse_rows(rows: list[str]) -> dict[str, set[str]]:
    table: dict[str, set[str]] = {}
    for row in rows:
        if "=" in row:
            name, deps = row.split("=", 1)
        elif ":" in row:
            name, deps = row.split(":", 1)
        else:
            raise ValueError(f"layer row {row!r}: expected NAME=DEP,DEP")
        name = name.strip()
        if not name or name in table:
            raise ValueError(f"layer row {row!r}: empty or repeated layer name")
        table[name] = {d.strip() for d in deps.split(",") if d.strip()}
    for name, deps in table.items():
        unknown = deps - table.keys()
        if unknown:
            raise ValueError(f"layer {name} depends on {', '.join(sorted(unknown))}, which are not layers")
    return table


def rows_from_cmake(path: str) -> list[str]:
    text = open(path, encoding="utf-8").read()
    m = re.search(r"set\(SDX_LAYERS\s+(.*?)\)", text, re.S)
    if not m:
        raise ValueError(f"{path}: no set(SDX_LAYERS ...)")
    return re.findall(r'"([^"]*)"', m.group(1))


def source_files(root: str):
    """Every C/C++ source or header below root, in a stable order."""
    for dirpath, _, files in os.walk(root):
        for name in sorted(files):
            if name.endswith(SOURCE_EXTS):
                yield os.path.join(dirpath, name)


def includes(path: str):
    """(line number, included path) of each quoted #include of a path with a folder in it."""
    with open(path, encoding="utf-8", errors="replace") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if m and "/" in m.group(1):
                yield lineno, m.group(1)


def check(src: str, table: dict[str, set[str]]) -> list[str]:
    problems = []
    for folder in sorted(os.listdir(src)):
        if os.path.isdir(os.path.join(src, folder)) and folder not in table:
            problems.append(f"{os.path.join(src, folder)}: a source folder that is not a layer; add a row to SDX_LAYERS")
    for layer, deps in sorted(table.items()):
        for path in source_files(os.path.join(src, layer)):
            for lineno, included in includes(path):
                target = included.split("/", 1)[0]
                if target not in table or target == layer or target in deps:
                    continue
                allowed = ", ".join(sorted(deps)) or "nothing"
                problems.append(f"{path}:{lineno}: {layer} may not include {included} "
                                f"({layer} depends on {allowed})")
    return problems


def check_public(root: str, table: dict[str, set[str]]) -> list[str]:
    problems = []
    for path in source_files(root):
        for lineno, included in includes(path):
            if included.split("/", 1)[0] in table:
                problems.append(f"{path}:{lineno}: a public header may not include {included} "
                                f"(include/ must not reach into src/)")
    return problems


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--src", required=True, help="the source root (src/)")
    p.add_argument("--layer", action="append", default=[], help="NAME=DEP,DEP (repeat for each layer)")
    p.add_argument("--from-cmake", metavar="CMAKELISTS", help="read the table from set(SDX_LAYERS ...) there")
    p.add_argument("--public", metavar="DIR", help="the public headers (include/): they include no layer")
    p.add_argument("--stamp", help="touch this file when the check passes (for the build)")
    args = p.parse_args(argv)
    try:
        table = parse_rows(args.layer + (rows_from_cmake(args.from_cmake) if args.from_cmake else []))
    except ValueError as e:
        print(f"check_layers: {e}", file=sys.stderr)
        return 2
    if not table:
        print("check_layers: no layers given", file=sys.stderr)
        return 2
    problems = check(args.src, table)
    if args.public:
        problems += check_public(args.public, table)
    for line in problems:
        print(line, file=sys.stderr)
    if problems:
        print(f"check_layers: {len(problems)} forbidden include(s); the layer table is SDX_LAYERS in CMakeLists.txt",
              file=sys.stderr)
        return 1
    if args.stamp:
        with open(args.stamp, "w", encoding="utf-8") as f:
            f.write("ok\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
