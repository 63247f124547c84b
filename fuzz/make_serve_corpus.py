"""Writes the libFuzzer seed corpus of the serve_request target, fuzz/corpus/serve_request/: serialized
KServe v2 inference.ModelInferRequest messages for the fixed model of fuzz/serve_request_fuzzer.cc
(inputs a FP32 [N, 3], idx INT64 [2], s BYTES [N], h FP16 [2, 2]; outputs sum, t). Valid requests in raw
and typed form, and the near misses the decoder must refuse: a wrong byte count, a wrong datatype, a
missing, unknown or repeated input, a negative or huge dimension, a truncated BYTES element, an unknown
output. Each file is a few hundred bytes; the messages come from tritonclient's generated protobuf
classes (the same package and field numbers as proto/kserve/grpc_service.proto).

    python3 fuzz/make_serve_corpus.py              # rewrites fuzz/corpus/serve_request/
    python3 fuzz/make_serve_corpus.py --out DIR    # somewhere else
"""
from __future__ import annotations

import argparse
import os
import shutil
import struct

import numpy as np
from tritonclient.grpc import service_pb2

HERE = os.path.dirname(os.path.abspath(__file__))


def _bytes_elements(items) -> bytes:
    return b"".join(struct.pack("<I", len(s)) + s for s in items)


def _request(inputs, outputs=(), model="m") -> service_pb2.ModelInferRequest:
    """inputs: (name, datatype, shape, raw bytes or None, typed-contents setter or None)."""
    req = service_pb2.ModelInferRequest(model_name=model, id="seed")
    for name, datatype, shape, raw, typed in inputs:
        t = req.inputs.add(name=name, datatype=datatype, shape=shape)
        if typed is not None:
            typed(t.contents)
        if raw is not None:
            req.raw_input_contents.append(raw)
    for name in outputs:
        req.outputs.add(name=name)
    return req


def requests() -> dict:
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    idx = np.array([1, -1], dtype=np.int64)
    h = np.array([[0.5, 1.0], [-2.0, 65504.0]], dtype=np.float16)
    strings = _bytes_elements([b"hello", b"", b"\xff\x00"])
    good = [("a", "FP32", [2, 3], a.tobytes(), None), ("idx", "INT64", [2], idx.tobytes(), None),
            ("s", "BYTES", [3], strings, None), ("h", "FP16", [2, 2], h.tobytes(), None)]

    def replace(i, item):
        return good[:i] + [item] + good[i + 1:]

    out = {
        "raw_all": _request(good),
        "raw_outputs": _request(good, outputs=["sum", "t"]),
        "typed_all": _request([
            ("a", "FP32", [2, 3], None, lambda c: c.fp32_contents.extend(a.ravel().tolist())),
            ("idx", "INT64", [2], None, lambda c: c.int64_contents.extend(idx.tolist())),
            ("s", "BYTES", [2], None, lambda c: c.bytes_contents.extend([b"x", b"yz"])),
            ("h", "FP16", [2, 2], h.tobytes(), None)]),
        "empty_batch": _request(replace(0, ("a", "FP32", [0, 3], b"", None))),
        "short_bytes": _request(replace(0, ("a", "FP32", [2, 3], a.tobytes()[:-1], None))),
        "wrong_datatype": _request(replace(1, ("idx", "INT32", [2], idx.astype(np.int32).tobytes(), None))),
        "missing_input": _request(good[:3]),
        "unknown_input": _request(good + [("zzz", "FP32", [1], b"\0\0\0\0", None)]),
        "repeated_input": _request(good + [good[0]]),
        "negative_dim": _request(replace(0, ("a", "FP32", [-2, 3], a.tobytes(), None))),
        "huge_dim": _request(replace(0, ("a", "FP32", [1 << 62, 3], a.tobytes(), None))),
        "truncated_string": _request(replace(2, ("s", "BYTES", [1], struct.pack("<I", 100) + b"abc", None))),
        "unknown_output": _request(good, outputs=["nope"]),
        "unknown_datatype": _request(replace(3, ("h", "FP8", [2, 2], b"\0" * 4, None))),
    }
    return {name: r.SerializeToString() for name, r in out.items()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.path.join(HERE, "corpus", "serve_request"))
    args = ap.parse_args()
    shutil.rmtree(args.out, ignore_errors=True)
    os.makedirs(args.out)
    for name, blob in sorted(requests().items()):
        assert len(blob) < 4096, (name, len(blob))
        with open(os.path.join(args.out, f"{name}.pb"), "wb") as f:
            f.write(blob)
    print(f"wrote {len(requests())} requests to {args.out}")


if __name__ == "__main__":
    main()
