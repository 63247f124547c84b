"""Prints the `.attrs({...})` declaration of ONNX operators for src/ir/schemas/*.cc,
from the installed onnx package's spec: every attribute of every opset version.

    python3 tools/onnx_attrs.py Conv MaxPool ai.onnx.ml:LabelEncoder
    python3 tools/onnx_attrs.py --apply src/ir/schemas/*.cc   # add missing declarations in place
"""
from __future__ import annotations

import re
import sys

import onnx.defs

_TYPES = {
    "FLOAT": "kFloat", "INT": "kInt", "STRING": "kString", "TENSOR": "kTensor", "GRAPH": "kGraph",
    "FLOATS": "kFloats", "INTS": "kInts", "STRINGS": "kStrings", "TENSORS": "kTensors", "GRAPHS": "kGraphs",
    "SPARSE_TENSOR": "kSparseTensor", "TYPE_PROTO": "kTypeProto", "TYPE_PROTOS": "kTypeProtos",
}


def attributes(op: str, domain: str = "") -> dict[str, str] | None:
    found: dict[str, str] = {}
    any_schema = False
    for s in onnx.defs.get_all_schemas_with_history():
        if s.name != op or s.domain != domain:
            continue
        any_schema = True
        for name, a in s.attributes.items():
            t = _TYPES[a.type.name]
            found[name] = t if found.get(name, t) == t else "kUndefined"
    return found if any_schema else None


def declaration(op: str, domain: str = "") -> str | None:
    attrs = attributes(op, domain)
    if attrs is None:
        return None
    items = ", ".join(f'{{"{n}", AttrType::{t}}}' for n, t in sorted(attrs.items()))
    return f".attrs({{{items}}})"


def apply(path: str) -> int:
    text = open(path).read()
    pattern = re.compile(r'SDX_OP_SCHEMA(?:_DOMAIN)?\((\w+)(?:,\s*"([^"]*)")?\)(?![^;]*\.attrs\()')
    count = 0

    def repl(m: re.Match) -> str:
        nonlocal count
        decl = declaration(m.group(1), m.group(2) or "")
        if decl is None:
            return m.group(0)
        count += 1
        return m.group(0) + "\n    " + decl + "\n    "

    text = pattern.sub(repl, text)
    open(path, "w").write(text)
    return count


if __name__ == "__main__":
    if sys.argv[1:2] == ["--apply"]:
        for p in sys.argv[2:]:
            print(f"{p}: {apply(p)} declarations added")
    else:
        for arg in sys.argv[1:]:
            domain, _, op = arg.rpartition(":")
            print(f"{arg}: {declaration(op, domain)}")
