"""Materializes the ONNX backend node test suite of the installed onnx package.

Older onnx wheels ship the suite as files under onnx/backend/test/data/node; newer
ones no longer do, so we generate the same files with onnx's own test-case
collector (onnx.backend.test.case.node), exactly as onnx's `cmd_tools
generate-data` used to: model.onnx plus test_data_set_0/{input,output}_N.pb.
"""
from __future__ import annotations

import json
import os
import shutil
import sys
import warnings


def default_cache_dir() -> str:
    import onnx

    base = os.environ.get("SDX_CACHE_DIR") or os.path.join(os.path.expanduser("~"), ".cache", "sdx")
    return os.path.join(base, "onnx-node-tests", onnx.__version__)


def shipped_node_dir() -> str | None:
    import onnx

    d = os.path.join(os.path.dirname(onnx.__file__), "backend", "test", "data", "node")
    return d if os.path.isdir(d) and os.listdir(d) else None


def _write_value(f, value, vi, name, numpy_helper):
    t = vi.type
    if t.HasField("sequence_type"):
        f.write(numpy_helper.from_list(value, name).SerializeToString())
    elif t.HasField("optional_type"):
        f.write(numpy_helper.from_optional(value, name).SerializeToString())
    elif t.HasField("map_type"):
        f.write(numpy_helper.from_dict(value, name).SerializeToString())
    else:
        from onnx import TensorProto

        if isinstance(value, TensorProto):
            f.write(value.SerializeToString())
        else:
            f.write(numpy_helper.from_array(value, name).SerializeToString())


def generate(out_dir: str, quiet: bool = False) -> str:
    """Writes the node suite under out_dir/node and returns that path."""
    node_dir = os.path.join(out_dir, "node")
    stamp = os.path.join(out_dir, "complete.json")
    if os.path.exists(stamp):
        return node_dir
    import onnx
    from onnx import numpy_helper

    if not quiet:
        print(f"sdx: generating the onnx {onnx.__version__} node test suite into {node_dir} ...", file=sys.stderr, flush=True)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.node as node_cases

        cases = node_cases.collect_testcases(None)
    tmp = node_dir + ".tmp"
    shutil.rmtree(tmp, ignore_errors=True)
    os.makedirs(tmp)
    for case in cases:
        case_dir = os.path.join(tmp, case.name)
        os.makedirs(case_dir)
        with open(os.path.join(case_dir, "model.onnx"), "wb") as f:
            f.write(case.model.SerializeToString())
        with open(os.path.join(case_dir, "meta.json"), "w") as f:
            json.dump({"rtol": case.rtol, "atol": case.atol}, f)
        for i, (inputs, outputs) in enumerate(case.data_sets):
            ds = os.path.join(case_dir, f"test_data_set_{i}")
            os.makedirs(ds)
            graph = case.model.graph
            for j, value in enumerate(inputs):
                with open(os.path.join(ds, f"input_{j}.pb"), "wb") as f:
                    _write_value(f, value, graph.input[j], graph.input[j].name, numpy_helper)
            for j, value in enumerate(outputs):
                with open(os.path.join(ds, f"output_{j}.pb"), "wb") as f:
                    _write_value(f, value, graph.output[j], graph.output[j].name, numpy_helper)
    shutil.rmtree(node_dir, ignore_errors=True)
    os.rename(tmp, node_dir)
    with open(stamp, "w") as f:
        json.dump({"onnx": onnx.__version__, "cases": len(cases)}, f)
    if not quiet:
        print(f"sdx: wrote {len(cases)} cases", file=sys.stderr, flush=True)
    return node_dir


def node_test_dir() -> str:
    """The node suite directory: the shipped one if present, else generated (cached)."""
    return shipped_node_dir() or generate(default_cache_dir())


if __name__ == "__main__":
    print(node_test_dir())
