"""Mutations of the tensors a model carries: initializers (main graph and subgraphs), the tensors of
Constant / ConstantOfShape attributes, and sparse initializers. Dims (huge, negative, zero, rank
changes) with the data left as it was, data_type swaps, raw_data length mismatches, the typed data
fields (float_data, int32_data, ...) in the wrong field or with the wrong count, name collisions.

Same contract as mutate_graph: `fn(model, rng) -> str | None`, editing the model in place.
"""
from __future__ import annotations

import onnx
from onnx import AttributeProto, TensorProto, helper

from mutate_graph import DIM_EDGE, ELEM_TYPES, graphs

TYPED_FIELDS = ["float_data", "int32_data", "int64_data", "double_data", "uint64_data", "string_data"]


def tensors(model: onnx.ModelProto) -> list:
    """(where, TensorProto) for every initializer and every tensor-valued attribute, subgraphs included."""
    out = []
    for path, g in graphs(model):
        out += [(f"{path} initializer '{t.name}'", t) for t in g.initializer]
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.TENSOR:
                    out.append((f"{path}:{n.name or n.op_type}.{a.name}", a.t))
                out += [(f"{path}:{n.name or n.op_type}.{a.name}[{i}]", t) for i, t in enumerate(a.tensors)]
    return out


def _pick(model, rng, pred=lambda t: True):
    cands = [x for x in tensors(model) if pred(x[1])]
    return rng.choice(cands) if cands else None


def tensor_dims(model, rng):
    t = _pick(model, rng)
    if not t:
        return None
    where, ten = t
    how = rng.choice(["edge", "edge", "edge", "append", "scalar", "double"])
    dims = list(ten.dims)
    if how == "edge" and dims:
        dims[rng.randrange(len(dims))] = rng.choice(DIM_EDGE)
    elif how == "append":
        dims.append(rng.choice([0, 1, 2, 2**31]))
    elif how == "scalar":
        dims = []
    else:
        dims = (dims or [1]) + [2] + dims
    del ten.dims[:]
    ten.dims.extend(dims)
    return f"{where} dims -> {dims[:10]} (data unchanged)"


def tensor_dtype(model, rng):
    t = _pick(model, rng)
    if not t:
        return None
    where, ten = t
    old = ten.data_type
    ten.data_type = rng.choice([x for x in ELEM_TYPES if x != old])
    return f"{where} data_type {old} -> {ten.data_type} (data unchanged)"


def tensor_raw_length(model, rng):
    t = _pick(model, rng, lambda x: x.HasField("raw_data"))
    if not t:
        return None
    where, ten = t
    raw = ten.raw_data
    how = rng.choice(["minus1", "half", "empty", "plus1", "plus7", "double"])
    new = {"minus1": raw[:-1], "half": raw[: len(raw) // 2], "empty": b"", "plus1": raw + b"\x01",
           "plus7": raw + b"\x7f" * 7, "double": raw + raw}[how]
    ten.raw_data = new
    return f"{where} raw_data {len(raw)} -> {len(new)} bytes ({how})"


def tensor_typed_fields(model, rng):
    """Data in a typed field that does not match data_type, with a wrong count, or next to raw_data."""
    t = _pick(model, rng)
    if not t:
        return None
    where, ten = t
    field = rng.choice(TYPED_FIELDS)
    count = rng.choice([0, 1, 3, 1000])
    keep_raw = rng.random() < 0.3
    if not keep_raw:
        ten.ClearField("raw_data")
    for f in TYPED_FIELDS:
        ten.ClearField(f)
    if field == "string_data":
        ten.string_data.extend([b"x"] * count)
    elif field in ("float_data", "double_data"):
        getattr(ten, field).extend([1.5] * count)
    elif field == "uint64_data":
        getattr(ten, field).extend([2**64 - 1] * count)
    else:
        getattr(ten, field).extend([rng.choice([70000, -1, 2**31 - 1, -2**31, 255, 0x7C01])] * count)
    return f"{where} data in {field} x{count}" + (" next to raw_data" if keep_raw else "")


def tensor_location(model, rng):
    """data_location / segment forms that name data which is not there."""
    t = _pick(model, rng)
    if not t:
        return None
    where, ten = t
    how = rng.choice(["external_no_entries", "external_keep_raw", "segment", "bad_location"])
    if how == "external_no_entries":
        ten.data_location = TensorProto.EXTERNAL
        ten.ClearField("raw_data")
    elif how == "external_keep_raw":
        ten.data_location = TensorProto.EXTERNAL
        ten.external_data.add(key="location", value="missing.bin")
    elif how == "segment":
        ten.segment.begin, ten.segment.end = rng.choice([(0, 1), (5, 2), (-1, 2**62)])
    else:
        try:
            ten.data_location = rng.choice([2, 7, -1])
        except ValueError:
            return None
    return f"{where} {how}"


def tensor_names(model, rng):
    path, g = rng.choice(graphs(model))
    if not g.initializer:
        return None
    ten = g.initializer[rng.randrange(len(g.initializer))]
    how = rng.choice(["duplicate", "empty", "node_output", "graph_output"])
    old = ten.name
    if how == "duplicate":
        g.initializer.append(onnx.TensorProto())
        g.initializer[-1].CopyFrom(ten)
        g.initializer[-1].data_type = TensorProto.INT64 if ten.data_type != TensorProto.INT64 else TensorProto.FLOAT
    elif how == "empty":
        ten.name = ""
    elif how == "node_output":
        outs = [o for n in g.node for o in n.output if o]
        if not outs:
            return None
        ten.name = rng.choice(outs)
    else:
        if not g.output:
            return None
        ten.name = g.output[0].name
    return f"{path} initializer '{old}' name {how} -> '{ten.name}'"


def sparse_initializer(model, rng):
    """A sparse initializer with out-of-range, negative or miscounted indices, read by a node."""
    dims = rng.choice([[4], [2, 3], [2**40], [0], [-1]])
    idx_vals = rng.choice([[0, 1], [7, 1], [-1, 0], [0, 0], [1, 0], [2**62, 0], [0, 1, 2, 3, 4]])
    idx_dims = rng.choice([[len(idx_vals)], [len(idx_vals), 1], [1, len(idx_vals)]])
    nv = rng.choice([2, 3, 0])
    values = helper.make_tensor("sdx_fuzz_sparse", TensorProto.FLOAT, [nv], [1.0] * nv)
    indices = helper.make_tensor("", TensorProto.INT64, [], [])
    indices.dims.extend(idx_dims)
    indices.int64_data.extend(idx_vals)
    sp = helper.make_sparse_tensor(values, indices, dims)
    model.graph.sparse_initializer.append(sp)
    users = [n for n in model.graph.node if n.input]
    if users:
        n = rng.choice(users)
        n.input[rng.randrange(len(n.input))] = "sdx_fuzz_sparse"
    return f"sparse initializer dims {dims} indices {idx_vals} shape {idx_dims} values {list(values.dims)}"


MUTATIONS = {
    "tensor_dims": ("dims_dtypes", tensor_dims, 4),
    "tensor_dtype": ("dims_dtypes", tensor_dtype, 4),
    "tensor_raw_length": ("raw_data", tensor_raw_length, 5),
    "tensor_typed_fields": ("raw_data", tensor_typed_fields, 3),
    "tensor_location": ("raw_data", tensor_location, 1),
    "tensor_names": ("graph_io", tensor_names, 2),
    "sparse_initializer": ("raw_data", sparse_initializer, 1),
}
