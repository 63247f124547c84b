"""The paged rewrite (python/sdx/_paged_graph.py) on mutated decoders: for every mutation of the tiny GPT-2
export (a node dropped, an input rewired, an attribute changed, a reader of a past input added, an input or
output renamed or removed), paged_decoder either declines (None) or returns a model that sdx loads and runs,
or that sdx refuses with one of its own errors naming the problem. Never another exception, a crash or a hang
(each case runs in this process: a crash fails the test run)."""
import random

import numpy as np
import onnx
import pytest

import sdx
from sdx._paged_graph import SLOT_MAP, paged_decoder
from decoders import gpt2_decoder

CASES = 200


@pytest.fixture(scope="module")
def base():
    return gpt2_decoder(2, 32, 2, 64, 64, seed=3)


def mutate(model: onnx.ModelProto, rng: random.Random) -> tuple:
    m = onnx.ModelProto()
    m.CopyFrom(model)
    g = m.graph
    kind = rng.choice(["drop_node", "rewire", "axis", "reader", "rename_input", "drop_output", "past_rank"])
    if kind == "drop_node":
        del g.node[rng.randrange(len(g.node))]
    elif kind == "rewire":
        n = g.node[rng.randrange(len(g.node))]
        if n.input:
            n.input[rng.randrange(len(n.input))] = rng.choice([i.name for i in g.input])
    elif kind == "axis":
        concats = [n for n in g.node if n.op_type in ("Concat", "Gather")]
        n = rng.choice(concats)
        for a in n.attribute:
            if a.name == "axis":
                a.i = rng.choice([-4, -1, 0, 1, 3, 7])
    elif kind == "reader":
        past = rng.choice([i.name for i in g.input if i.name.startswith("past_key_values.")])
        op = rng.choice(["Identity", "Neg", "Shape"])
        g.node.append(onnx.helper.make_node(op, [past], ["extra_reader"]))
        g.output.append(onnx.helper.make_tensor_value_info("extra_reader", onnx.TensorProto.UNDEFINED, None))
    elif kind == "rename_input":
        i = g.input[rng.randrange(len(g.input))]
        i.name = rng.choice(["sdx_slot_map", "past_key_values.9.key", "x"])
    elif kind == "drop_output":
        del g.output[rng.randrange(len(g.output))]
    else:
        i = next(i for i in g.input if i.name.startswith("past_key_values."))
        del i.type.tensor_type.shape.dim[-1]
    return m, kind


def feeds_for(sess) -> dict:
    f = {}
    for a in sess.get_inputs():
        dims = [d if isinstance(d, int) else 2 for d in a.shape]
        if a.name == SLOT_MAP:
            dims = [2, 0]  # a prefill: no past
        if a.name.startswith("sdx_kv_cache."):
            dims = [d if isinstance(d, int) else 32 for d in a.shape]
        dtype = np.int64 if "int64" in a.type else np.float32
        f[a.name] = np.zeros(dims, dtype) if dtype == np.int64 else np.random.default_rng(0).standard_normal(dims).astype(dtype)
    return f


def test_mutated_decoders_are_declined_run_or_refused_cleanly(base, tmp_path):
    rng = random.Random(1234)
    outcomes = {"declined": 0, "ran": 0, "refused": 0}
    for case in range(CASES):
        model, kind = mutate(base, rng)
        path = str(tmp_path / f"m{case}.onnx")
        onnx.save(model, path)
        g = paged_decoder(path)  # declines with None; never raises
        if g is None:
            outcomes["declined"] += 1
            continue
        try:
            sess = sdx.InferenceSession(g.model)
            sess.run(None, feeds_for(sess))
            outcomes["ran"] += 1
        except (sdx.InvalidArgument, sdx.Fail, sdx.NotImplemented, sdx.FailedPrecondition, sdx.OutOfRange,
                sdx.ResourceExhausted) as e:
            assert str(e), (case, kind)
            outcomes["refused"] += 1
    assert sum(outcomes.values()) == CASES
    assert outcomes["declined"] > 0 and outcomes["ran"] > 0, outcomes  # the mutations reach both sides
