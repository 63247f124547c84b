"""A decoder's KV cache in buckets of fixed length, so that decode steps keep their input shapes and the
session replays one captured plan per bucket (issue 21's shape buckets, for the decode loop sdx.generate
drives; the paged cache and buckets inside the engine are later increments).

    slots = KVSlots.from_prefill(present_arrays, bucket=128)   # the prompt's present.* after prefill
    feeds = slots.feeds(token, position)    # past_key_values.* [1, H, P, D], attention_mask [1, P + 1]
    outs = sess.run(names, feeds)
    slots.append(outs[1:])                  # the new token's K/V (present[..., P, :]) into slot `length`

The past fed to the model is a buffer of P = a multiple of `bucket` slots holding the `length` real
tokens first and zeros after; the attention mask is 1 for those tokens, 0 for the empty slots and 1 for
the new token, which the model appends at position P. A model that masks keys by attention_mask (the
with-past exports do) then gives what the exact-shape step gives, up to the order of its float sums over
the longer key axis (empty slots get exactly zero weight). sdx.generate checks that on the first decode
step and falls back to exact shapes when the logits differ. When the buffer is full, it grows to the next
multiple of `bucket` (one new plan per bucket).
"""
from __future__ import annotations

import numpy as np


class KVSlots:
    def __init__(self, buffers: list, length: int, bucket: int) -> None:
        self.buffers = buffers  # per past_key_values input, [1, H, P, D], C-contiguous
        self.length = length    # real tokens stored
        self.bucket = bucket

    @staticmethod
    def capacity_for(length: int, bucket: int) -> int:
        """The buffer length for `length` real tokens: room for them and at least one more step."""
        return (length // bucket + 1) * bucket

    @classmethod
    def from_prefill(cls, presents: list, bucket: int) -> "KVSlots":
        length = presents[0].shape[2]
        p = cls.capacity_for(length, bucket)
        buffers = []
        for x in presents:
            b = np.zeros((x.shape[0], x.shape[1], p, x.shape[3]), x.dtype)
            b[:, :, :length] = x
            buffers.append(b)
        return cls(buffers, length, bucket)

    @property
    def capacity(self) -> int:
        return self.buffers[0].shape[2]

    def mask(self) -> np.ndarray:
        m = np.zeros((1, self.capacity + 1), np.int64)
        m[0, :self.length] = 1
        m[0, -1] = 1  # the new token
        return m

    def append(self, presents: list) -> None:
        """Stores the new token's K/V in the next free slot: each present.* [1, H, P + 1, D] (its last position)
        or the new K/V alone [1, H, 1, D] (_decoder_graph.py's outputs); grows the buffers to the next bucket
        when they are full."""
        p = self.capacity
        for b, x in zip(self.buffers, presents):
            b[:, :, self.length] = x[:, :, 0] if x.shape[2] == 1 else x[:, :, p]
        self.length += 1
        if self.length == p:  # full: the next step needs a free slot
            grown = self.capacity_for(self.length, self.bucket)
            for i, b in enumerate(self.buffers):
                g = np.zeros((b.shape[0], b.shape[1], grown, b.shape[3]), b.dtype)
                g[:, :, :p] = b
                self.buffers[i] = g

    def waste(self) -> float:
        """The share of the fed key positions that are padding (empty slots) at this step."""
        return (self.capacity - self.length) / (self.capacity + 1)
