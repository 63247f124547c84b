"""External-data cases: an initializer's bytes moved to a file beside the model, then the location,
offset, length and keys of its external_data entries mutated, with special files laid out around it.

A case folder looks like this (the model is loaded from FOLDER/model/model.onnx, so ".." names
FOLDER, which the case owns; nothing outside the case folder is touched):

    FOLDER/outside.bin                  data outside the model folder
    FOLDER/model/model.onnx
    FOLDER/model/weights.bin            8 bytes of padding, then the tensor's bytes (offset 8 is right)
    FOLDER/model/sub/weights.bin        a copy in a sub-folder
    FOLDER/model/fifo.bin               a FIFO (no writer: opening it for reading blocks)
    FOLDER/model/link*.bin, loop_a/b    symlinks: inside, outside, to /dev/zero, dangling, a loop
    FOLDER/model/hard.bin               a hard link to hard_src.bin (a copy of weights.bin)
    FOLDER/model/sublink -> sub         a symlinked folder

Locations that are special files (FIFO, /dev, /proc) must fail fast: those cases carry
max_seconds = 1.0 and the harness reports a slower clean error as slow_error.

    desc, write, max_s, as_bytes = external_case(model, random.Random(1))
    model_path = write("/tmp/case")    # lays the folder out, returns the model path
"""
from __future__ import annotations

import os
import re

import onnx
from onnx import TensorProto, numpy_helper

PAD = 8
LOCATIONS = ["weights.bin", "weights.bin", "sub/weights.bin", "missing.bin", "../outside.bin", "sub/../weights.bin",
             "@ABS_OUTSIDE", "/dev/zero", "/dev/null", "/dev/urandom", "/proc/self/mem", "/proc/self/fd/0", "fifo.bin",
             "link_in.bin", "link_out.bin", "link_zero.bin", "link_fifo.bin", "dangling_link.bin", "loop_a", "sub",
             "sublink/weights.bin", "hard.bin", "", ".", "weights.bin/", "./weights.bin", "WEIGHTS.BIN",
             "x" * 5000, "weights.bin\x00.txt", "~/weights.bin", "sub//weights.bin", "\u00e9.bin"]
SPECIAL = ("/dev/", "/proc/", "fifo", "link_zero", "link_fifo")
NUMBER_FORMS = ["0x{v:x}", "-1", "{v}junk", " {v}", "+{v}", "1e1", "", "99999999999999999999999", str(2**63 - 1),
                str(2**64), "{v}.0", "\uff18", "-0", "{v} ", "0{v}", "{big}"]


def _raw_tensors(model: onnx.ModelProto) -> list:
    out = []
    for t in model.graph.initializer:
        if t.data_type in (TensorProto.STRING, TensorProto.UNDEFINED) or t.data_location == TensorProto.EXTERNAL:
            continue
        try:
            arr = numpy_helper.to_array(t)
        except Exception:  # noqa: BLE001  (a tensor onnx cannot read is not a candidate)
            continue
        if arr.size:
            out.append((t, arr.tobytes()))
    return out


def _number(rng, valid: int, file_size: int) -> tuple:
    form = rng.choice(["valid", "valid", "size", "size_plus1", "minus1", "plus1", "form", "form", "form"])
    if form == "valid":
        return str(valid), "valid"
    if form == "size":
        return str(file_size), "file size"
    if form == "size_plus1":
        return str(file_size + 1), "file size + 1"
    if form == "minus1":
        return str(max(valid - 1, 0)), "valid - 1"
    if form == "plus1":
        return str(valid + 1), "valid + 1"
    s = rng.choice(NUMBER_FORMS).format(v=valid, big=2**62)
    return s, repr(s)


def _layout(model_dir: str, data: bytes) -> None:
    folder = os.path.dirname(model_dir)
    os.makedirs(os.path.join(model_dir, "sub"), exist_ok=True)
    with open(os.path.join(folder, "outside.bin"), "wb") as f:
        f.write(b"\0" * PAD + data)
    for rel in ("weights.bin", "sub/weights.bin", "hard_src.bin"):
        with open(os.path.join(model_dir, rel), "wb") as f:
            f.write(b"\0" * PAD + data)
    j = lambda name: os.path.join(model_dir, name)  # noqa: E731
    os.mkfifo(j("fifo.bin"))
    os.symlink("weights.bin", j("link_in.bin"))
    os.symlink("../outside.bin", j("link_out.bin"))
    os.symlink("/dev/zero", j("link_zero.bin"))
    os.symlink("fifo.bin", j("link_fifo.bin"))
    os.symlink("nowhere.bin", j("dangling_link.bin"))
    os.symlink("loop_b", j("loop_a"))
    os.symlink("loop_a", j("loop_b"))
    os.symlink("sub", j("sublink"))
    os.link(j("hard_src.bin"), j("hard.bin"))  # weights.bin itself keeps a link count of 1


KEYS = ["plain", "plain", "plain", "no_offset", "no_length", "no_location", "dup_location", "unknown_key", "checksum",
        "empty_key", "Location", "keep_raw", "dims_huge"]


def external_case(model: onnx.ModelProto, rng, location: str | None = None, offset: str | None = None,
                  length: str | None = None, keys: str | None = None, as_bytes: bool | None = None) -> tuple | None:
    """A random external-data case; the keyword arguments pin its parts (the systematic sweep's use)."""
    cands = _raw_tensors(model)
    if not cands:
        return None
    t, data = rng.choice(cands)
    name = t.name
    location = rng.choice(LOCATIONS) if location is None else location
    offset, offset_desc = _number(rng, PAD, PAD + len(data)) if offset is None else (offset.format(v=PAD, big=2**62), repr(offset))
    length, length_desc = (_number(rng, len(data), PAD + len(data)) if length is None
                           else (length.format(v=len(data), big=2**62), repr(length)))
    entries = [("location", location), ("offset", offset), ("length", length)]
    keys = rng.choice(KEYS) if keys is None else keys
    if keys == "no_offset":
        entries = [e for e in entries if e[0] != "offset"]
    elif keys == "no_length":
        entries = [e for e in entries if e[0] != "length"]
    elif keys == "no_location":
        entries = entries[1:]
    elif keys == "dup_location":
        entries.append(("location", rng.choice(LOCATIONS)))
    elif keys == "unknown_key":
        entries.append(("sdx_fuzz", "1"))
    elif keys == "checksum":
        entries.append(("checksum", "0" * 40))
    elif keys == "empty_key":
        entries.append(("", "weights.bin"))
    elif keys == "Location":
        entries[0] = ("Location", location)
    as_bytes = rng.random() < 0.1 if as_bytes is None else as_bytes
    mutated = onnx.ModelProto()
    mutated.CopyFrom(model)
    target = next(x for x in mutated.graph.initializer if x.name == name)
    raw = b""
    if keys == "keep_raw":
        raw = data
    target.ClearField("raw_data")
    for f in ("float_data", "int32_data", "int64_data", "double_data", "uint64_data"):
        target.ClearField(f)
    if raw:
        target.raw_data = raw
    if keys == "dims_huge":
        del target.dims[:]
        target.dims.extend([2**31, 2**31])
    target.data_location = TensorProto.EXTERNAL
    for k, v in entries:
        target.external_data.add(key=k, value=v)
    special = any(s in e[1] for e in entries if e[0].lower() == "location" for s in SPECIAL)
    shown = [(k, v if len(v) < 40 else v[:12] + f"...({len(v)} chars)") for k, v in entries]
    desc = (f"initializer '{name}' ({len(data)} bytes) external: {shown}; offset {offset_desc}, length {length_desc}, "
            f"keys {keys}" + (", model given as bytes" if as_bytes else ""))
    blob = mutated.SerializeToString()

    def write(folder: str) -> str:
        folder = os.path.join(folder, "m")
        model_dir = os.path.join(folder, "model")
        os.makedirs(model_dir)
        _layout(model_dir, data)
        path = os.path.join(model_dir, "model.onnx")
        data_out = blob
        if any(v == "@ABS_OUTSIDE" for _, v in entries):  # an absolute path only known once the folder is
            m = onnx.ModelProto()
            m.ParseFromString(blob)
            for e in next(x for x in m.graph.initializer if x.name == name).external_data:
                if e.value == "@ABS_OUTSIDE":
                    e.value = os.path.join(folder, "outside.bin")
            data_out = m.SerializeToString()
        with open(path, "wb") as f:
            f.write(data_out)
        return path

    return desc, write, (1.0 if special else None), as_bytes


# Locations inside the model folder that name weights.bin itself; every other one must be rejected.
ACCEPTABLE_LOCATIONS = {"weights.bin", "sub/weights.bin", "./weights.bin", "sub//weights.bin", "weights.bin/"}
# Offsets and lengths are plain decimal numbers (leading zeros allowed); anything else must be rejected,
# not read as its leading digits ("4junk" as 4, "1e1" as 1, "0x4" as 0).
_DECIMAL = re.compile(r"[0-9]+")


def systematic_cases(model: onnx.ModelProto) -> list:
    """Every location with a valid offset and length, every offset and length form with a valid location,
    every key form, and the special files with the odd number forms: [(case name, must_fail,
    external_case tuple)]. must_fail marks the cases sdx has to reject (the harness reports one that loads
    as accepted_invalid)."""
    import random

    rng = random.Random(0)
    out = []
    valid = dict(offset="{v}", length="{v}", keys="plain", as_bytes=False)
    for loc in dict.fromkeys(LOCATIONS):
        out.append((f"location {loc[:30]!r}", loc not in ACCEPTABLE_LOCATIONS,
                    external_case(model, rng, location=loc, **valid)))
    for form in NUMBER_FORMS:
        bad = not _DECIMAL.fullmatch(form.format(v=PAD, big=1))
        out.append((f"offset {form!r}", bad, external_case(model, rng, location="weights.bin", offset=form,
                                                           length="{v}", keys="plain", as_bytes=False)))
        out.append((f"length {form!r}", bad, external_case(model, rng, location="weights.bin", offset="{v}",
                                                           length=form, keys="plain", as_bytes=False)))
    for k in dict.fromkeys(KEYS):
        out.append((f"keys {k}", k in ("no_location", "dup_location", "Location", "dims_huge"),
                    external_case(model, rng, location="weights.bin", offset="{v}", length="{v}", keys=k, as_bytes=False)))
    for loc in ("fifo.bin", "/dev/zero", "link_zero.bin", "link_fifo.bin", "/proc/self/mem", "/dev/urandom"):
        for off, ln in (("0", "-1"), ("0", "{big}"), ("0x4", "{v}"), ("4junk", "{v}"), ("0", "")):
            out.append((f"location {loc} offset {off!r} length {ln!r}", True,
                        external_case(model, rng, location=loc, offset=off, length=ln, keys="plain", as_bytes=False)))
    out.append(("valid, model given as bytes", True, external_case(model, rng, location="weights.bin", offset="{v}",
                                                                   length="{v}", keys="plain", as_bytes=True)))
    return out
