"""KV streams: a user's own decode loop, onnxruntime style (present.* of one call fed back as past_key_values.* of
the next), runs on the paged form of the decoder with the past kept where the session wrote it, without any
change to the loop (issue 21: "a user's existing step-by-step loop replays without any change to their code").

    sess = sdx.InferenceSession("decoder_with_past.onnx")   # a with-past decoder: streams on (kv_streams)
    out = sess.run(None, feeds)                             # prefill: present.* are views of the stream's buffers
    feeds = {..., "past_key_values.0.key": out[1], ...}     # fed back as they are: a continuation
    out = sess.run(None, feeds)                             # nothing of the past copied; the plan replays

How. InferenceSession.run hands a call to KVStreams.run when the model has the with-past layout. The first call
of a sequence starts a stream: buffers [H, B * capacity, D] per past input, the given past copied in (once).
The call runs on the paged model (_paged_graph.py; sdx.PagedAttention reads the buffers in place through a slot
map), its new K/V go into the buffers, and each present.* returned is a view [B, H, past + S, D] of them. A call
whose past arrays are exactly (`is`) the present views the stream returned last continues it: nothing is
copied, only the new token's K/V written. Anything else (another array, an older present, other shapes, types
the layout does not have) goes the normal way or starts a new stream, so results are always those of the model.

Replay. The slot map and mask are padded to a multiple of `bucket` (128) positions, empty slots masked by
attention_mask (the model's own padding rule), so a step's shapes stay put within a bucket; the first padded
call also runs unpadded and padding is kept only when the outputs agree (kv_streams()["padding"] says why).
The buffers stay at one address per stream (the engine reads them in place: borrowed inputs), and buffers of
sequences that ended are reused by the next when no view of them is alive any more.

A returned present.* is a view, not a copy: writing into it changes the past the next call sees (as feeding the
changed array would). Off with SessionOptions.kv_streams = False (SDX_KV_STREAMS=0).
"""
from __future__ import annotations

import sys
import threading
import weakref
from typing import Any

import numpy as np

from ._decoder_graph import NEW_KV_PREFIX
from ._paged_graph import LOGIT_ROWS, SLOT_MAP, paged_decoder

BUCKET = 128
MAX_STREAMS = 16
MAX_KEPT_BYTES = 64 << 20
_PAST = "past_key_values."


_NO_ROWS = np.zeros(0, np.int64)


class _Stream:
    def __init__(self, buffers: list, batch: int, capacity: int) -> None:
        self.length = 0
        self.returned: dict = {}  # past input name -> weakref to the present view returned for it
        self.key: int | None = None  # its key in KVStreams.streams: id() of the last past_key_values.0 view
        self.set_buffers(buffers, batch, capacity)

    def set_buffers(self, buffers: list, batch: int, capacity: int) -> None:
        self.buffers = buffers  # per past input: [H, batch * capacity, D]
        self.batch, self.capacity = batch, capacity
        self.rows = np.arange(batch, dtype=np.int64)[:, None] * capacity
        # Each buffer seen as [B, H, capacity, D]: a present view is [:, :, :length], a write [:, :, p:p + s].
        self.bhtd = [b.reshape(b.shape[0], batch, capacity, b.shape[2]).transpose(1, 0, 2, 3) for b in buffers]

    def alive(self) -> bool:
        return any(r() is not None for r in self.returned.values())


class KVStreams:
    """The KV streams of one InferenceSession (see the module docstring)."""

    @staticmethod
    def applies(inputs: list, outputs: list) -> bool:
        names = {a.name for a in inputs}
        outs = {a.name for a in outputs}
        return "input_ids" in names and "attention_mask" in names and f"{_PAST}0.key" in names and \
            "present.0.key" in outs

    def __init__(self, owner: Any, source: Any, options: Any) -> None:
        # The model's bytes are kept for the paged form only when small; a path is read again when needed.
        self.owner, self.options = owner, options
        self.source = source if not isinstance(source, bytes) or len(source) <= MAX_KEPT_BYTES else None
        self.lock = threading.Lock()
        self.paged = None           # the session of the paged form, made on the first call that needs it
        self.graph = None
        self.off: str | None = None  # why streams do not run
        self.padding: bool | None = None
        self.padding_check: str | None = None
        self.streams: dict = {}     # id(present view of past_key_values.0.key) -> _Stream
        self.spare: list = []       # buffer sets of ended streams, reused when nothing else holds them
        inputs = [a.name for a in owner.get_inputs()]
        # The element types the model declares for its integer inputs (a feed of another type goes the normal way).
        self.int_types = {a.name: np.int32 if a.type == "tensor(int32)" else np.int64 for a in owner.get_inputs()}
        self.past_names = [n for n in inputs if n.startswith(_PAST)]
        self.present_of = {n: "present." + n[len(_PAST):] for n in self.past_names}
        self.output_names = [a.name for a in owner.get_outputs()]
        self.has_position_ids = "position_ids" in inputs
        self.expected = set(inputs)
        self.calls = self.continued = 0
        if self.source is None:
            self.off = (f"the model was given as {len(source)} bytes (over {MAX_KEPT_BYTES >> 20} MiB, not kept for its "
                        "paged form): load it by path")

    def report(self) -> dict:
        return {"enabled": self.off is None, "reason": self.off, "paged": self.paged is not None,
                "streams": len(self.streams), "calls": self.calls, "continued": self.continued,
                "bucket": BUCKET, "padding": self.padding_check}

    # --- the session of the paged form -----------------------------------------------------------------------
    def _ensure_paged(self) -> bool:
        if self.paged is not None or self.off is not None:
            return self.off is None
        import os

        if isinstance(self.source, (bytes, bytearray)):
            import tempfile

            with tempfile.NamedTemporaryFile(suffix=".onnx", delete=False) as f:
                f.write(self.source)
            try:
                graph = paged_decoder(f.name)
            finally:
                os.unlink(f.name)
        else:
            graph = paged_decoder(self.source)
        if graph is None:
            self.off = ("the model's past is read by more than Concat(past, new) and Shape -> Gather, or its weights "
                        "are in external files: no paged form")
            return False
        from ._session import InferenceSession

        self.graph = graph
        opts = self.options._copy_for_streams()
        self.paged = InferenceSession(graph.model, opts)
        return True

    # --- a call ------------------------------------------------------------------------------------------------
    def run(self, output_names: Any, feeds: Any, want_report: bool) -> Any:
        """The call's outputs (and report), or None: the session runs it the normal way."""
        if self.off is not None or type(feeds) is not dict or set(feeds) != self.expected:
            return None
        shape = self._check(feeds)  # anything the layout does not have goes the normal way, to its errors
        if shape is None:
            return None
        with self.lock:
            stream = self._continued(feeds)
            if stream is not None and (stream.batch, stream.length) != shape[:2]:
                stream = None
            self.continued += stream is not None
        if stream is None:
            if not self._ensure_paged():
                return None
            with self.lock:
                stream = self._start(feeds, *shape)
        with self.lock:
            self.calls += 1
        return self._step(stream, output_names, feeds, want_report)

    def _continued(self, feeds: dict) -> _Stream | None:
        s = self.streams.get(id(feeds[self.past_names[0]]))
        if s is None:
            return None
        for name in self.past_names:
            ref = s.returned.get(name)
            if ref is None or ref() is not feeds[name]:
                return None
        return s

    def _check(self, feeds: dict) -> tuple | None:
        """(batch, past length, new tokens) when the feeds have the layout's types and shapes, else None."""
        ids, mask = feeds["input_ids"], feeds["attention_mask"]
        if type(ids) is not np.ndarray or type(mask) is not np.ndarray or ids.ndim != 2 or mask.ndim != 2:
            return None
        b, s = ids.shape
        p0 = feeds[self.past_names[0]]
        if type(p0) is not np.ndarray or p0.ndim != 4 or p0.dtype != np.float32:
            return None
        _, h, p, d = p0.shape
        if self.graph is not None and (h, d) != (self.graph.heads, self.graph.head_dim):
            return None
        for name in self.past_names:
            x = feeds[name]
            if type(x) is not np.ndarray or x.shape != (b, h, p, d) or x.dtype != np.float32:
                return None
        types = self.int_types
        if mask.shape != (b, p + s) or mask.dtype != types["attention_mask"] or ids.dtype != types["input_ids"] or \
                s < 1 or b < 1:
            return None
        if self.has_position_ids:
            pos = feeds["position_ids"]
            if type(pos) is not np.ndarray or pos.shape != (b, s) or pos.dtype != self.int_types["position_ids"]:
                return None
        return b, p, s

    def _buffers(self, batch: int, capacity: int) -> list:
        h, d = self.graph.heads, self.graph.head_dim
        for i, (key, bufs) in enumerate(self.spare):
            # Reusable when no view of them is alive: each is referenced by the spare list and the call only.
            if key == (batch, capacity) and all(sys.getrefcount(x) <= 3 for x in bufs):
                del self.spare[i]
                return bufs
        return [np.zeros((h, batch * capacity, d), np.float32) for _ in self.past_names]

    def _start(self, feeds: dict, batch: int, past: int, new: int) -> _Stream:
        for key in [k for k, s in self.streams.items() if not s.alive()]:
            s = self.streams.pop(key)
            self.spare.append(((s.batch, s.capacity), s.buffers))
        del self.spare[:-MAX_STREAMS]
        if len(self.streams) >= MAX_STREAMS:  # the least recently started one goes
            self.streams.pop(next(iter(self.streams)))
        capacity = max(2 * BUCKET, -(-(past + new + 1) // BUCKET) * BUCKET)
        stream = _Stream(self._buffers(batch, capacity), batch, capacity)
        if past:
            for v, name in zip(stream.bhtd, self.past_names):
                v[:, :, :past] = feeds[name]
        stream.length = past
        return stream

    def _grow(self, stream: _Stream, needed: int) -> None:
        capacity = max(2 * stream.capacity, -(-(needed + 1) // BUCKET) * BUCKET)
        old, n = stream.bhtd, stream.length
        stream.set_buffers(self._buffers(stream.batch, capacity), stream.batch, capacity)
        for new, v in zip(stream.bhtd, old):
            new[:, :, :n] = v[:, :, :n]

    def _feeds(self, stream: _Stream, feeds: dict, width: int) -> dict:
        b, p = stream.batch, stream.length
        s = feeds["input_ids"].shape[1]
        slot_map = np.full((b, width), -1, np.int64)
        slot_map[:, :p] = stream.rows + np.arange(p, dtype=np.int64)
        user = feeds["attention_mask"]
        mask = np.zeros((b, width + s), user.dtype)
        mask[:, :p] = user[:, :p]
        mask[:, width:] = user[:, p:]
        out = {"input_ids": feeds["input_ids"], "attention_mask": mask, SLOT_MAP: slot_map}
        if self.has_position_ids:
            out["position_ids"] = feeds["position_ids"]
        out.update(zip(self.graph.cache_names, stream.buffers))
        if self.graph.row_logits:
            out[LOGIT_ROWS] = _NO_ROWS  # ROW_LOGITS is not asked for here
        return out

    def _step(self, stream: _Stream, output_names: Any, feeds: dict, want_report: bool) -> Any:
        p, s = stream.length, feeds["input_ids"].shape[1]
        if p + s > stream.capacity:
            self._grow(stream, p + s)
        wanted = list(output_names) if output_names else list(self.output_names)
        others = [n for n in wanted if not n.startswith("present.")]
        names = others + self.graph.new_kv_names
        width = p if self.padding is False or p == 0 else -(-p // BUCKET) * BUCKET
        run = self.paged.run_with_report if want_report else self.paged.run
        res = run(names, self._feeds(stream, feeds, width))
        outs, rep = (res if want_report else (res, None))
        if width != p and self.padding is None:
            exact = self.paged.run(names, self._feeds(stream, feeds, p))
            ok = all(np.allclose(a, b, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(a).max(initial=0))))
                     for a, b in zip(exact[:len(others)], outs[:len(others)]))
            self.padding = ok
            self.padding_check = ("passed: padded and exact steps agree" if ok else
                                  "failed: the padded step differs from the exact one (the model does not mask "
                                  "padded keys by attention_mask?); exact shapes used")
            if not ok:
                outs = exact
        for v, x in zip(stream.bhtd, outs[len(others):]):
            v[:, :, p:p + s] = x
        stream.length = p + s
        views = {self.present_of[name]: v[:, :, :p + s] for name, v in zip(self.past_names, stream.bhtd)}
        with self.lock:
            stream.returned = {name: weakref.ref(views[self.present_of[name]]) for name in self.past_names}
            self.streams.pop(stream.key, None)
            stream.key = id(views[self.present_of[self.past_names[0]]])
            self.streams[stream.key] = stream
        by_name = dict(zip(others, outs[:len(others)]))
        by_name.update(views)
        result = [by_name[n] for n in wanted]
        return (result, rep) if want_report else result
