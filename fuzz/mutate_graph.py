"""Structural mutations of a ModelProto's graph: node inputs and outputs, op types and domains,
attributes (types and ranges), graph inputs and outputs, value kinds, opsets and ir_version, and the
subgraphs of If / Loop / Scan.

Every mutation is `fn(model, rng) -> str | None`: it edits the model in place and returns what it did
(None when the model has nothing it applies to). `rng` is a random.Random, so a case is a pure function
of the fuzzer's seed and case number.

    from mutate_graph import MUTATIONS; desc = MUTATIONS["node_input_empty"][1](model, random.Random(0))
"""
from __future__ import annotations

import math
import random

import onnx
from onnx import AttributeProto, TensorProto, helper

DANGLING = "sdx_fuzz_dangling"
INT_EDGE = [0, 1, -1, 2, -2, 3, 7, 64, 255, 256, 65535, 2**31 - 1, 2**31, -2**31, 2**32, 2**40, 2**62, 2**63 - 1, -2**63]
FLOAT_EDGE = [0.0, -0.0, 1.0, -1.0, 0.5, math.nan, math.inf, -math.inf, 1e-45, 3.4e38, 1e9, -1e9]
DIM_EDGE = [0, -1, -7, 1, 2**31 - 1, 2**31, 2**40, 2**62, 2**63 - 1, -2**63]
ELEM_TYPES = list(range(0, 27)) + [99]
SDX_OPS = {"Attention": ["scale", "mask_value", "causal"], "FusedConv": ["input_layout", "output_layout", "residual_layout",
           "activation", "kernel_shape", "strides", "pads", "group", "dilations"],
           "GatedLinearUnit": ["activation", "activation_params", "axis"], "Linear": ["x_quant", "activation", "activation_params"],
           "BlockedMaxPool": ["kernel_shape", "strides", "pads"], "BlockedAveragePool": ["kernel_shape", "strides", "pads"]}
CONTROL_FLOW = ("If", "Loop", "Scan", "SequenceMap")


# -- walking the model ------------------------------------------------------------------------------
def graphs(model: onnx.ModelProto) -> list:
    """(path, GraphProto) for the main graph and every subgraph, depth first."""
    out = []

    def visit(g, path):
        out.append((path, g))
        for n in g.node:
            for a in n.attribute:
                if a.type == AttributeProto.GRAPH:
                    visit(a.g, f"{path}/{n.name or n.op_type}.{a.name}")
                for i, sg in enumerate(a.graphs):
                    visit(sg, f"{path}/{n.name or n.op_type}.{a.name}[{i}]")
    visit(model.graph, "main")
    return out


def nodes(model: onnx.ModelProto, in_subgraph: bool = False) -> list:
    """(path, graph, node) for every node, or only those inside subgraphs."""
    return [(p, g, n) for p, g in graphs(model) for n in g.node if not in_subgraph or p != "main"]


def _pick_node(model, rng, pred=lambda n: True, in_subgraph=False):
    cands = [t for t in nodes(model, in_subgraph) if pred(t[2])]
    return rng.choice(cands) if cands else None


def _where(path, node) -> str:
    return f"{path}:{node.name or '?'}({node.op_type})"


def _produced(g) -> list:
    return [o for n in g.node for o in n.output if o] + [i.name for i in g.input] + [t.name for t in g.initializer]


# -- node inputs and outputs ------------------------------------------------------------------------
def node_input_empty(model, rng):
    t = _pick_node(model, rng, lambda n: any(n.input))
    if not t:
        return None
    path, g, n = t
    i = rng.choice([k for k, x in enumerate(n.input) if x])
    old, n.input[i] = n.input[i], ""
    return f"{_where(path, n)} input {i} '{old}' -> ''"


def node_input_dangling(model, rng):
    t = _pick_node(model, rng, lambda n: len(n.input) > 0)
    if not t:
        return None
    path, g, n = t
    i = rng.randrange(len(n.input))
    old, n.input[i] = n.input[i], DANGLING
    return f"{_where(path, n)} input {i} '{old}' -> dangling"


def node_input_extra(model, rng):
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    k = rng.choice([1, 1, 2, 8])
    names = _produced(g) or ["x"]
    for _ in range(k):
        n.input.append(rng.choice(["", rng.choice(names)]))
    return f"{_where(path, n)} +{k} inputs -> {list(n.input)[-k:]}"


def node_input_drop(model, rng):
    t = _pick_node(model, rng, lambda n: len(n.input) > 0)
    if not t:
        return None
    path, g, n = t
    keep = rng.randrange(len(n.input))
    del n.input[keep:]
    return f"{_where(path, n)} inputs truncated to {keep}"


def node_input_cycle(model, rng):
    """An input that reads the node's own output, or the output of a node that comes later."""
    t = _pick_node(model, rng, lambda n: len(n.input) > 0 and any(n.output))
    if not t:
        return None
    path, g, n = t
    later = [o for m in list(g.node)[list(g.node).index(n):] for o in m.output if o]
    i = rng.randrange(len(n.input))
    n.input[i] = rng.choice(later)
    return f"{_where(path, n)} input {i} -> later/own output '{n.input[i]}'"


def node_output_mutation(model, rng):
    t = _pick_node(model, rng, lambda n: len(n.output) > 0)
    if not t:
        return None
    path, g, n = t
    i = rng.randrange(len(n.output))
    choice = rng.choice(["empty", "duplicate", "graph_input", "extra", "none"])
    if choice == "empty":
        n.output[i] = ""
    elif choice == "duplicate":
        others = [o for m in g.node if m is not n for o in m.output if o] or [i.name for i in g.input] or ["x"]
        n.output[i] = rng.choice(others)
    elif choice == "graph_input":
        names = [x.name for x in g.input] + [x.name for x in g.initializer]
        if not names:
            return None
        n.output[i] = rng.choice(names)
    elif choice == "extra":
        n.output.extend([f"sdx_fuzz_extra_{k}" for k in range(rng.choice([1, 4]))])
    else:
        del n.output[:]
    return f"{_where(path, n)} output {i} {choice} -> {list(n.output)}"


def node_order(model, rng):
    path, g = rng.choice(graphs(model))
    if len(g.node) < 2:
        return None
    ns = list(g.node)
    how = rng.choice(["reverse", "shuffle", "swap"])
    if how == "reverse":
        ns.reverse()
    elif how == "shuffle":
        rng.shuffle(ns)
    else:
        a, b = rng.sample(range(len(ns)), 2)
        ns[a], ns[b] = ns[b], ns[a]
    copies = [onnx.NodeProto() for _ in ns]
    for c, n in zip(copies, ns):
        c.CopyFrom(n)
    del g.node[:]
    g.node.extend(copies)
    return f"{path} nodes {how} (not topologically sorted)"


def node_duplicate(model, rng):
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    g.node.append(onnx.NodeProto())
    g.node[-1].CopyFrom(n)
    return f"{_where(path, n)} duplicated (same outputs defined twice)"


# -- op types and domains ---------------------------------------------------------------------------
_SCHEMAS = None


def _schemas():
    global _SCHEMAS
    if _SCHEMAS is None:
        _SCHEMAS = sorted({(s.domain, s.name) for s in onnx.defs.get_all_schemas_with_history()})
    return _SCHEMAS


def node_op_type(model, rng):
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    old = f"{n.domain}:{n.op_type}"
    how = rng.choice(["schema", "schema", "schema", "unknown", "empty", "case"])
    if how == "schema":
        n.domain, n.op_type = rng.choice(_schemas())
        if n.domain not in ("", "ai.onnx") and not any(o.domain == n.domain for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(n.domain, 1 if n.domain != "ai.onnx.ml" else 3))
    elif how == "unknown":
        n.op_type = "SdxFuzzUnknownOp"
    elif how == "empty":
        n.op_type = ""
    else:
        n.op_type = n.op_type.lower()
    return f"{_where(path, n)} op {old} -> {n.domain}:{n.op_type} ({how})"


def node_sdx_op(model, rng):
    """Turns a node into one of sdx's internal fused ops (domain "sdx") with random attributes."""
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    old = n.op_type
    n.op_type = rng.choice(sorted(SDX_OPS))
    n.domain = "sdx"
    del n.attribute[:]
    for name in rng.sample(SDX_OPS[n.op_type], k=rng.randint(0, len(SDX_OPS[n.op_type]))):
        n.attribute.append(_random_attribute(name, rng))
    if rng.random() < 0.7 and not any(o.domain == "sdx" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("sdx", rng.choice([1, 1, 0, 2, -1])))
    return f"{_where(path, n)} {old} -> sdx:{n.op_type} attrs {[a.name for a in n.attribute]}"


def node_domain(model, rng):
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    n.domain = rng.choice(["com.microsoft", "ai.onnx.ml", "bogus.domain", "ai.onnx", "sdx", " ", "ai.onnx.preview.training"])
    return f"{_where(path, n)} domain -> '{n.domain}'"


# -- attributes -------------------------------------------------------------------------------------
def _random_tensor(rng) -> TensorProto:
    kind = rng.choice(["empty", "scalar", "vector", "wrongtype", "string"])
    if kind == "empty":
        return helper.make_tensor("t", TensorProto.FLOAT, [0], [])
    if kind == "scalar":
        return helper.make_tensor("t", rng.choice([TensorProto.FLOAT, TensorProto.INT64]), [], [rng.choice([0, 1, -1, 7])])
    if kind == "vector":
        return helper.make_tensor("t", TensorProto.INT64, [3], [rng.choice(INT_EDGE) for _ in range(3)])
    if kind == "wrongtype":
        return helper.make_tensor("t", TensorProto.BOOL, [2, 2], [1, 0, 1, 1])
    return helper.make_tensor("t", TensorProto.STRING, [1], [b"sdx"])


def _random_graph(rng) -> onnx.GraphProto:
    kind = rng.choice(["empty", "identity", "dangling"])
    if kind == "empty":
        return helper.make_graph([], "fuzz_empty", [], [])
    src = "a" if kind == "identity" else DANGLING
    return helper.make_graph([helper.make_node("Identity", [src], ["b"])], f"fuzz_{kind}",
                             [helper.make_tensor_value_info("a", TensorProto.FLOAT, None)],
                             [helper.make_tensor_value_info("b", TensorProto.FLOAT, None)])


def _random_attribute(name: str, rng) -> AttributeProto:
    kind = rng.choice(["i", "f", "s", "ints", "floats", "strings", "t", "g", "tensors", "empty_ints"])
    if kind == "i":
        return helper.make_attribute(name, rng.choice(INT_EDGE))
    if kind == "f":
        return helper.make_attribute(name, rng.choice(FLOAT_EDGE))
    if kind == "s":
        return helper.make_attribute(name, rng.choice([b"", b"bogus", b"NOTSET", b"relu", b"\xff\xfe", b"x" * 4096]))
    if kind == "ints":
        return helper.make_attribute(name, [rng.choice(INT_EDGE) for _ in range(rng.choice([1, 2, 3, 4, 8, 100]))])
    if kind == "floats":
        return helper.make_attribute(name, [rng.choice(FLOAT_EDGE) for _ in range(rng.choice([1, 2, 4]))])
    if kind == "strings":
        return helper.make_attribute(name, [b"", b"Tanh", b"bogus"][: rng.randint(1, 3)])
    if kind == "t":
        return helper.make_attribute(name, _random_tensor(rng))
    if kind == "g":
        return helper.make_attribute(name, _random_graph(rng))
    if kind == "tensors":
        return helper.make_attribute(name, [_random_tensor(rng)], attr_type=AttributeProto.TENSORS)
    return helper.make_attribute(name, [], attr_type=AttributeProto.INTS)


def attr_type_swap(model, rng):
    t = _pick_node(model, rng, lambda n: len(n.attribute) > 0)
    if not t:
        return None
    path, g, n = t
    a = rng.choice(list(n.attribute))
    old = AttributeProto.AttributeType.Name(a.type)
    new = _random_attribute(a.name, rng)
    a.CopyFrom(new)
    return f"{_where(path, n)} attr '{a.name}' {old} -> {AttributeProto.AttributeType.Name(a.type)}"


def attr_type_lie(model, rng):
    """The type field names one kind while another field holds the value (or the type is UNDEFINED)."""
    t = _pick_node(model, rng, lambda n: len(n.attribute) > 0)
    if not t:
        return None
    path, g, n = t
    a = rng.choice(list(n.attribute))
    old = a.type
    a.type = rng.choice([x for x in AttributeProto.AttributeType.values() if x != old])
    return f"{_where(path, n)} attr '{a.name}' type field {AttributeProto.AttributeType.Name(old)} -> " \
           f"{AttributeProto.AttributeType.Name(a.type)} (value unchanged)"


def attr_range(model, rng):
    t = _pick_node(model, rng, lambda n: any(a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT,
                                                         AttributeProto.FLOATS, AttributeProto.STRING) for a in n.attribute))
    if not t:
        return None
    path, g, n = t
    a = rng.choice([a for a in n.attribute if a.type in (AttributeProto.INT, AttributeProto.INTS, AttributeProto.FLOAT,
                                                          AttributeProto.FLOATS, AttributeProto.STRING)])
    if a.type == AttributeProto.INT:
        a.i = rng.choice(INT_EDGE + [a.i + 1, a.i - 1, -a.i])
        what = a.i
    elif a.type == AttributeProto.FLOAT:
        a.f = rng.choice(FLOAT_EDGE)
        what = a.f
    elif a.type == AttributeProto.STRING:
        a.s = rng.choice([b"", b"bogus", a.s.upper(), a.s + b"\x00", b"\xc3\x28"])
        what = a.s[:40]
    elif a.type == AttributeProto.INTS:
        how = rng.choice(["element", "empty", "longer", "shorter", "long"])
        vals = list(a.ints)
        if how == "element" and vals:
            vals[rng.randrange(len(vals))] = rng.choice(INT_EDGE)
        elif how == "empty":
            vals = []
        elif how == "longer":
            vals = vals + [rng.choice(INT_EDGE)]
        elif how == "shorter":
            vals = vals[:-1]
        else:
            vals = [rng.choice([0, 1, -1, 2]) for _ in range(1000)]
        del a.ints[:]
        a.ints.extend(vals)
        what = vals[:8]
    else:
        vals = list(a.floats) or [0.0]
        vals[rng.randrange(len(vals))] = rng.choice(FLOAT_EDGE)
        del a.floats[:]
        a.floats.extend(vals)
        what = vals[:8]
    return f"{_where(path, n)} attr '{a.name}' = {what}"


def attr_remove_add(model, rng):
    t = _pick_node(model, rng)
    if not t:
        return None
    path, g, n = t
    how = rng.choice(["remove", "remove", "unknown", "duplicate", "empty_name"])
    if how == "remove":
        if not n.attribute:
            return None
        name = n.attribute[rng.randrange(len(n.attribute))].name
        keep = [a for a in n.attribute if a.name != name]
        del n.attribute[:]
        n.attribute.extend(keep)
        return f"{_where(path, n)} attr '{name}' removed"
    if how == "duplicate" and n.attribute:
        a = rng.choice(list(n.attribute))
        n.attribute.append(_random_attribute(a.name, rng))
        return f"{_where(path, n)} attr '{a.name}' given twice"
    name = "" if how == "empty_name" else "sdx_fuzz_unknown"
    n.attribute.append(_random_attribute(name, rng))
    return f"{_where(path, n)} attr '{name}' added"


# -- graph inputs, outputs and value kinds ----------------------------------------------------------
def graph_outputs(model, rng):
    path, g = rng.choice(graphs(model))
    how = rng.choice(["none", "dangling", "input", "initializer", "duplicate", "empty", "extra_node_value"])
    if how == "none":
        del g.output[:]
    elif how == "extra_node_value":
        vals = [o for n in g.node for o in n.output if o]
        if not vals:
            return None
        g.output.append(helper.make_tensor_value_info(rng.choice(vals), TensorProto.FLOAT, None))
    elif not g.output:
        return None
    else:
        o = g.output[rng.randrange(len(g.output))]
        if how == "dangling":
            o.name = DANGLING
        elif how == "input":
            if not g.input:
                return None
            o.name = rng.choice(list(g.input)).name
        elif how == "initializer":
            if not g.initializer:
                return None
            o.name = rng.choice(list(g.initializer)).name
        elif how == "duplicate":
            g.output.append(onnx.ValueInfoProto())
            g.output[-1].CopyFrom(o)
        else:
            o.name = ""
    return f"{path} outputs {how} -> {[o.name for o in g.output]}"


def graph_inputs(model, rng):
    path, g = rng.choice(graphs(model))
    how = rng.choice(["remove", "duplicate", "empty", "shadow_initializer", "add_unused"])
    if how == "add_unused":
        g.input.append(helper.make_tensor_value_info("sdx_fuzz_unused", TensorProto.FLOAT, [1]))
    elif how == "shadow_initializer":
        if not g.initializer:
            return None
        t = rng.choice(list(g.initializer))
        g.input.append(helper.make_tensor_value_info(t.name, rng.choice(ELEM_TYPES[1:17]), [rng.choice([1, 2, 3])]))
    elif not g.input:
        return None
    else:
        i = rng.randrange(len(g.input))
        if how == "remove":
            del g.input[i]
        elif how == "duplicate":
            g.input.append(onnx.ValueInfoProto())
            g.input[-1].CopyFrom(g.input[i])
        else:
            g.input[i].name = ""
    return f"{path} inputs {how} -> {[i.name for i in g.input]}"


def _value_infos(model):
    return [(p, kind, v) for p, g in graphs(model) for kind, vs in (("input", g.input), ("output", g.output),
                                                                     ("value_info", g.value_info)) for v in vs]


def value_dims(model, rng):
    cands = [t for t in _value_infos(model) if t[2].type.HasField("tensor_type")]
    if not cands:
        return None
    path, kind, v = rng.choice(cands)
    shape = v.type.tensor_type.shape
    how = rng.choice(["dim", "dim", "dim", "param", "clear_dim", "rank_up", "scalar", "no_shape"])
    if how == "dim" and shape.dim:
        d = shape.dim[rng.randrange(len(shape.dim))]
        d.Clear()
        d.dim_value = rng.choice(DIM_EDGE)
    elif how == "param" and shape.dim:
        d = shape.dim[rng.randrange(len(shape.dim))]
        d.Clear()
        d.dim_param = rng.choice(["", "N", "?", "-1", "x" * 300])
    elif how == "clear_dim" and shape.dim:
        shape.dim[rng.randrange(len(shape.dim))].Clear()
    elif how == "rank_up":
        for _ in range(rng.choice([1, 4, 40])):
            shape.dim.add().dim_value = rng.choice([1, 1, 2, 0])
    elif how == "scalar":
        del shape.dim[:]
    elif how == "no_shape":
        v.type.tensor_type.ClearField("shape")
    else:
        return None
    return f"{path} {kind} '{v.name}' dims {how} -> {[d.dim_value if d.HasField('dim_value') else d.dim_param for d in shape.dim][:10]}"


def value_elem_type(model, rng):
    cands = [t for t in _value_infos(model) if t[2].type.HasField("tensor_type")]
    if not cands:
        return None
    path, kind, v = rng.choice(cands)
    old = v.type.tensor_type.elem_type
    v.type.tensor_type.elem_type = rng.choice(ELEM_TYPES)
    return f"{path} {kind} '{v.name}' elem_type {old} -> {v.type.tensor_type.elem_type}"


def value_kind(model, rng):
    cands = _value_infos(model)
    if not cands:
        return None
    path, kind, v = rng.choice(cands)
    how = rng.choice(["sequence", "optional", "map", "sparse", "none", "no_elem", "optional_seq"])
    tensor = helper.make_tensor_type_proto(TensorProto.FLOAT, None)
    if how == "sequence":
        v.type.CopyFrom(helper.make_sequence_type_proto(tensor))
    elif how == "optional":
        v.type.CopyFrom(helper.make_optional_type_proto(tensor))
    elif how == "optional_seq":
        v.type.CopyFrom(helper.make_optional_type_proto(helper.make_sequence_type_proto(tensor)))
    elif how == "map":
        v.type.CopyFrom(helper.make_map_type_proto(TensorProto.INT64, tensor))
    elif how == "sparse":
        v.type.CopyFrom(helper.make_sparse_tensor_type_proto(TensorProto.FLOAT, [2, 2]))
    elif how == "none":
        v.ClearField("type")
    else:
        v.type.tensor_type.ClearField("elem_type")
    return f"{path} {kind} '{v.name}' value kind -> {how}"


# -- model header -----------------------------------------------------------------------------------
def model_versions(model, rng):
    how = rng.choice(["ir", "ir", "opset", "opset", "no_default", "duplicate", "bogus_domain"])
    if how == "ir":
        model.ir_version = rng.choice([0, -1, 1, 2, 3, 4, 6, 7, 10, 11, 12, 13, 100, 2**62])
        return f"ir_version -> {model.ir_version}"
    default = [o for o in model.opset_import if o.domain in ("", "ai.onnx")]
    if how == "opset" and default:
        default[0].version = rng.choice([0, -1, 1, 5, 6, 7, 9, 10, 11, 13, 22, 23, 24, 25, 26, 100, 2**62])
        return f"default opset -> {default[0].version}"
    if how == "no_default":
        keep = [o for o in model.opset_import if o.domain not in ("", "ai.onnx")]
        del model.opset_import[:]
        model.opset_import.extend(keep)
        return "default-domain opset_import removed"
    if how == "duplicate":
        model.opset_import.append(helper.make_opsetid("", rng.choice([1, 7, 13, 21])))
        return f"opset_import duplicated -> {[(o.domain, o.version) for o in model.opset_import]}"
    model.opset_import.append(helper.make_opsetid(rng.choice(["bogus.domain", "", "sdx"]), rng.choice([1, -5, 2**40])))
    return f"opset_import added {model.opset_import[-1].domain!r}:{model.opset_import[-1].version}"


def model_function(model, rng):
    """A model-local function, possibly recursive, and a node calling it."""
    how = rng.choice(["recursive", "plain", "mutual"])
    fname = "SdxFuzzFn"
    callee = fname if how == "recursive" else ("SdxFuzzFn2" if how == "mutual" else "Relu")
    domain = "" if callee == "Relu" else "sdx.fuzz"
    f = helper.make_function("sdx.fuzz", fname, ["a"], ["b"], [helper.make_node(callee, ["a"], ["b"], domain=domain)],
                             [helper.make_opsetid("", 17), helper.make_opsetid("sdx.fuzz", 1)])
    model.functions.append(f)
    if how == "mutual":
        model.functions.append(helper.make_function("sdx.fuzz", "SdxFuzzFn2", ["a"], ["b"],
                                                    [helper.make_node(fname, ["a"], ["b"], domain="sdx.fuzz")],
                                                    [helper.make_opsetid("sdx.fuzz", 1)]))
    model.opset_import.append(helper.make_opsetid("sdx.fuzz", 1))
    t = _pick_node(model, rng, lambda n: len(n.input) == 1 and len(n.output) == 1)
    if not t:
        return None
    path, g, n = t
    n.op_type, n.domain = fname, "sdx.fuzz"
    del n.attribute[:]
    return f"{_where(path, n)} -> local function ({how})"


# -- subgraphs --------------------------------------------------------------------------------------
def subgraph_attr(model, rng):
    t = _pick_node(model, rng, lambda n: n.op_type in CONTROL_FLOW)
    if not t:
        return None
    path, g, n = t
    gattrs = [a for a in n.attribute if a.type == AttributeProto.GRAPH]
    how = rng.choice(["remove", "replace", "swap_branches", "not_a_graph"])
    if not gattrs:
        return None
    a = rng.choice(gattrs)
    if how == "remove":
        keep = [x for x in n.attribute if x.name != a.name]
        del n.attribute[:]
        n.attribute.extend(keep)
    elif how == "replace":
        a.g.CopyFrom(_random_graph(rng))
    elif how == "swap_branches" and len(gattrs) == 2:
        tmp = onnx.GraphProto()
        tmp.CopyFrom(gattrs[0].g)
        gattrs[0].g.CopyFrom(gattrs[1].g)
        gattrs[1].g.CopyFrom(tmp)
        del gattrs[1].g.output[1:]
        gattrs[1].g.output.append(helper.make_tensor_value_info(DANGLING, TensorProto.FLOAT, None))
    else:
        a.CopyFrom(_random_attribute(a.name, rng))
    return f"{_where(path, n)} subgraph attr '{a.name}' {how}"


def subgraph_signature(model, rng):
    """Adds or removes a body input or output, or renames one so it dangles."""
    cands = [(p, g) for p, g in graphs(model) if p != "main"]
    if not cands:
        return None
    path, g = rng.choice(cands)
    how = rng.choice(["drop_input", "add_input", "drop_output", "add_output", "dangling_output", "input_type"])
    if how == "drop_input" and g.input:
        del g.input[rng.randrange(len(g.input))]
    elif how == "add_input":
        g.input.append(helper.make_tensor_value_info("sdx_fuzz_body_in", TensorProto.FLOAT, None))
    elif how == "drop_output" and g.output:
        del g.output[rng.randrange(len(g.output))]
    elif how == "add_output":
        src = rng.choice(_produced(g) or [DANGLING])
        g.output.append(helper.make_tensor_value_info(src, TensorProto.FLOAT, None))
    elif how == "dangling_output" and g.output:
        g.output[rng.randrange(len(g.output))].name = DANGLING
    elif how == "input_type" and g.input:
        v = g.input[rng.randrange(len(g.input))]
        v.type.CopyFrom(helper.make_tensor_type_proto(rng.choice([TensorProto.STRING, TensorProto.INT8, TensorProto.FLOAT]),
                                                      rng.choice([None, [], [2, 2], [0]])))
    else:
        return None
    return f"{path} {how} -> in {[i.name for i in g.input]} out {[o.name for o in g.output]}"


def subgraph_node(model, rng):
    """One of the node mutations, applied to a node inside a subgraph."""
    fn = rng.choice([node_input_empty, node_input_dangling, node_output_mutation, attr_range, attr_type_swap,
                     node_op_type, node_input_extra])
    inner = _pick_node(model, rng, in_subgraph=True)
    if not inner:
        return None
    # Run the mutation on a model view holding only that subgraph, so it picks from its nodes.
    view = onnx.ModelProto()
    view.graph.CopyFrom(inner[1])
    desc = fn(view, rng)
    if desc is None:
        return None
    inner[1].CopyFrom(view.graph)
    return f"in {inner[0]}: {desc}"


def subgraph_nesting(model, rng):
    """Wraps a node of the main graph in `depth` nested Ifs on a constant true condition."""
    t = _pick_node(model, rng, lambda n: len(n.output) == 1 and len(n.input) >= 1)
    if not t:
        return None
    path, g, n = t
    depth = rng.choice([2, 5, 10, 25, 32])  # protobuf parsers stop at 100 message levels (3 per If)
    out = n.output[0]
    inner = onnx.NodeProto()
    inner.CopyFrom(n)
    src = n.input[0]
    for k in range(depth):
        then = helper.make_graph([inner], f"nest{k}", [], [helper.make_tensor_value_info(inner.output[0], 0, None)])
        # The else branch is one Identity, so the model grows linearly with depth (not 2^depth).
        other = helper.make_graph([helper.make_node("Identity", [src], [f"nest_else{k}"])], f"nest_else{k}", [],
                                  [helper.make_tensor_value_info(f"nest_else{k}", 0, None)])
        inner = helper.make_node("If", ["sdx_fuzz_true"], [out if k == depth - 1 else f"nest_out{k}"],
                                 then_branch=then, else_branch=other)
    n.CopyFrom(inner)
    model.graph.initializer.append(helper.make_tensor("sdx_fuzz_true", TensorProto.BOOL, [], [1]))
    return f"{_where(path, n)} wrapped in {depth} nested Ifs"


def bytes_flip(data: bytes, rng: random.Random) -> tuple:
    """Byte-level damage to a serialized model (the structural mutations' blind spot: the wire format)."""
    b = bytearray(data)
    how = rng.choice(["flip", "flip", "truncate", "insert"])
    if how == "flip":
        for _ in range(rng.choice([1, 2, 4, 16])):
            b[rng.randrange(len(b))] = rng.randrange(256)
    elif how == "truncate":
        del b[rng.randrange(len(b)):]
    else:
        pos = rng.randrange(len(b) + 1)
        b[pos:pos] = bytes(rng.randrange(256) for _ in range(rng.choice([1, 4, 9])))
    return bytes(b), f"bytes {how}"


# family -> [(name, fn, weight)]
MUTATIONS = {
    "node_input_empty": ("inputs", node_input_empty, 6),
    "node_input_dangling": ("inputs", node_input_dangling, 4),
    "node_input_extra": ("inputs", node_input_extra, 2),
    "node_input_drop": ("inputs", node_input_drop, 2),
    "node_input_cycle": ("inputs", node_input_cycle, 1),
    "node_output_mutation": ("outputs", node_output_mutation, 2),
    "node_order": ("outputs", node_order, 1),
    "node_duplicate": ("outputs", node_duplicate, 1),
    "node_op_type": ("ops", node_op_type, 3),
    "node_sdx_op": ("ops", node_sdx_op, 2),
    "node_domain": ("ops", node_domain, 1),
    "attr_type_swap": ("attributes", attr_type_swap, 4),
    "attr_type_lie": ("attributes", attr_type_lie, 1),
    "attr_range": ("attributes", attr_range, 6),
    "attr_remove_add": ("attributes", attr_remove_add, 3),
    "graph_outputs": ("graph_io", graph_outputs, 2),
    "graph_inputs": ("graph_io", graph_inputs, 2),
    "value_dims": ("dims_dtypes", value_dims, 4),
    "value_elem_type": ("dims_dtypes", value_elem_type, 3),
    "value_kind": ("graph_io", value_kind, 2),
    "model_versions": ("versions", model_versions, 2),
    "model_function": ("versions", model_function, 1),
    "subgraph_attr": ("subgraphs", subgraph_attr, 2),
    "subgraph_signature": ("subgraphs", subgraph_signature, 2),
    "subgraph_node": ("subgraphs", subgraph_node, 4),
    "subgraph_nesting": ("subgraphs", subgraph_nesting, 1),
}
