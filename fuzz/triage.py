"""Groups the crash and hang repros of one or more findings folders by cause.

The signature of a repro is its outcome (signal or exit), the first sdx frames of its gdb backtrace
(or, without one, the last meaningful stderr line: a std::terminate message, an assertion, a Python
fatal error) and the op or mutation named in the case. One line per group, with a count and up to
three repro paths.

    python3 fuzz/triage.py build/fuzz-findings/structural-seed1 build/fuzz-findings/empty-input-sweep
"""
from __future__ import annotations

import argparse
import collections
import glob
import os
import re

_SDX_FRAME = re.compile(r"^#\d+ ((?:sdx::|\(anonymous namespace\)::)?\S*sdx\S*|[\w:~<>]+)(?: at (\S+))?")
_BORING = ("__pthread_kill", "raise", "abort", "__GI_", "std::__terminate", "__cxa_", "std::terminate", "__gnu_cxx",
           "std::", "_Unwind", "__libc", "__memmove", "__memcpy", "__memset", "__strlen", "operator new", "malloc",
           "free", "_int_", "??")


def _frames(text: str) -> list:
    out = []
    in_bt = False
    for ln in text.splitlines():
        if ln.startswith("--- gdb"):
            in_bt = True
            continue
        if in_bt and ln.startswith("#"):
            body = ln.split(" ", 1)[1] if " " in ln else ln
            name = body.split(" at ")[0]
            if not name.startswith(_BORING) and ("sdx" in body or "onnx" in body):
                name = name.replace("(anonymous namespace)::", "").replace("[clone .constprop.0]", "")
                out.append(re.sub(r"\(.*", "", name)[:90])
    return out


def _message(text: str) -> str:
    lines = text.split("--- child stderr (tail) ---", 1)[-1].split("--- gdb", 1)[0].splitlines()
    keys = ("terminate called", "what():", "Assertion", "Fatal Python error", "AddressSanitizer", "runtime error",
            "Killed", "MemoryError", "std::bad_alloc", "stack overflow")
    for ln in lines:
        if any(k in ln for k in keys):
            return ln.strip()[:160]
    return ""


def signature(text: str) -> tuple:
    outcome = re.search(r"^outcome: (\w+): (.*)$", text, re.M)
    kind, detail = (outcome.group(1), outcome.group(2)) if outcome else ("?", "")
    detail = re.sub(r" \(not reproduced.*", "", detail)
    frames = _frames(text)
    where = " <- ".join(frames[:3]) if frames else _message(text)
    return kind, detail[:60], where


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("folders", nargs="+")
    args = ap.parse_args()
    groups = collections.defaultdict(list)
    for folder in args.folders:
        for txt in sorted(glob.glob(os.path.join(folder, "*.txt"))):
            with open(txt, errors="replace") as f:
                text = f.read()
            muts = re.search(r"^mutations: (.*)$", text, re.M)
            groups[signature(text)].append((txt[:-4], muts.group(1) if muts else ""))
    for (kind, detail, where), items in sorted(groups.items(), key=lambda kv: -len(kv[1])):
        print(f"\n[{len(items)}] {kind}: {detail}\n    at: {where or '(no backtrace)'}")
        for path, muts in items[:3]:
            print(f"    {path}\n        {muts[:240]}")


if __name__ == "__main__":
    main()
