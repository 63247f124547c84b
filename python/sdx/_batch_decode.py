"""Continuous batching for sdx.generate (issue 21): several sequences decode together, one model call per step
for all of them, each joining the batch when a row is free and leaving it when it ends (eos or its
max_new_tokens), between steps.

    batch = BatchDecoder(sess, layout, max_batch=8, kv_bucket=128)
    for seq_id, token in batch.run(prompts, samplers, eos_token_id, counts):
        ...                                   # tokens as they are decoded, sequences interleaved
    batch.report                              # tokens/s, hit rate, batch occupancy, padding waste

Rows. The active sequences occupy rows 0..n-1 of the KV buffers (per past_key_values input, [max_batch, H,
P, D]); a sequence that ends hands its row to the last active one (its K/V rows are copied over), so rows
stay packed. A step feeds the first B rows, B = n rounded up to a batch bucket (1, 2, 4, 8, ..., max_batch:
graphs per batch size with the batch padded up, as in the CUDA-graphs article), so the session replays one
plan per (B, P). Padding rows decode token 0 attending to itself only, and their outputs are dropped.

KV. Row r holds its sequence's `lengths[r]` tokens in slots 0..lengths[r]-1 and zeros after; attention_mask
row r is 1 on those slots, 0 on the empty ones and 1 on the new token, which the model appends at slot P;
position_ids is lengths[r] (GPT-2's learned positions then see the sequence's own positions). P, a multiple
of kv_bucket, grows by a bucket when the longest row fills it. This is _kv_slots.py's padding per row: exact
when the model masks keys by attention_mask, which generate() checks on the first sequence's first step
before it batches (otherwise sequences run one after another at exact shapes).

Prefill. A joining sequence's prompt runs alone (batch 1, its exact length; prompts differ in length), and
its present.* are copied into its row; its first token comes from that call's logits.
"""
from __future__ import annotations

import time
from typing import Any, Callable, Iterator, Sequence

import numpy as np


def batch_buckets(max_batch: int) -> list:
    """1, 2, 4, ... up to max_batch (max_batch itself last when it is not a power of two)."""
    out, b = [], 1
    while b < max_batch:
        out.append(b)
        b *= 2
    return out + [max_batch]


class BatchDecoder:
    def __init__(self, sess: Any, layout: Any, max_batch: int, kv_bucket: int) -> None:
        self.sess, self.layout = sess, layout
        self.max_batch, self.bucket = max_batch, kv_bucket
        self.buckets = batch_buckets(max_batch)
        self.buffers = [np.zeros((max_batch, layout.heads, kv_bucket, layout.head_dim), layout.kv_dtype)
                        for _ in layout.past_names]
        self.lengths: list = []   # per active row: tokens stored
        self.seq_of_row: list = []  # per active row: the sequence index
        self.report: dict = {}

    @property
    def capacity(self) -> int:
        return self.buffers[0].shape[2]

    def _grow(self, needed: int) -> None:
        """Makes room for `needed` tokens plus the next step's (capacity a multiple of the bucket)."""
        if needed < self.capacity:
            return
        grown = (needed // self.bucket + 1) * self.bucket
        for i, b in enumerate(self.buffers):
            g = np.zeros((b.shape[0], b.shape[1], grown, b.shape[3]), b.dtype)
            g[:, :, :b.shape[2]] = b
            self.buffers[i] = g

    def _prefill(self, prompt: list) -> tuple[np.ndarray, list]:
        """(the last position's logits, present.* [1, H, len, D]) of the prompt run alone."""
        outs = self.sess.run(self.layout.output_names, self.layout.prefill_feeds(prompt))
        return outs[0][0, -1], outs[1:]

    def _join(self, seq: int, presents: list) -> None:
        length = presents[0].shape[2]
        self._grow(length)
        row = len(self.lengths)
        for b, x in zip(self.buffers, presents):
            b[row, :, :length] = x[0]
            b[row, :, length:] = 0
        self.lengths.append(length)
        self.seq_of_row.append(seq)

    def _leave(self, row: int) -> None:
        """Row `row` ends: the last active row moves into it (K/V, length, sequence)."""
        last = len(self.lengths) - 1
        if row != last:
            n = self.lengths[last]
            for b in self.buffers:
                b[row, :, :n] = b[last, :, :n]
                b[row, :, n:] = 0
            self.lengths[row], self.seq_of_row[row] = self.lengths[last], self.seq_of_row[last]
        self.lengths.pop()
        self.seq_of_row.pop()

    def _feeds(self, tokens: list, rows: int) -> dict:
        n, p, layout = len(self.lengths), self.capacity, self.layout
        ids = np.zeros((rows, 1), np.int64)
        ids[:n, 0] = tokens
        mask = np.zeros((rows, p + 1), np.int64)
        for r, length in enumerate(self.lengths):
            mask[r, :length] = 1
        mask[:, p] = 1
        feeds = {"input_ids": ids, "attention_mask": mask}
        if layout.has_position_ids:
            pos = np.zeros((rows, 1), np.int64)
            pos[:n, 0] = self.lengths
            feeds["position_ids"] = pos
        feeds.update((name, b[:rows]) for name, b in zip(layout.past_names, self.buffers))
        return feeds

    def _store(self, outs: list) -> None:
        """Each active row's new K/V into its next slot: from the new-K/V outputs [B, H, 1, D] or from
        present.* [B, H, P + 1, D] (its last slot)."""
        p = self.capacity
        for b, x in zip(self.buffers, outs):
            for r, length in enumerate(self.lengths):
                b[r, :, length] = x[r, :, 0] if x.shape[2] == 1 else x[r, :, p]
        self.lengths = [length + 1 for length in self.lengths]

    def run(self, prompts: Sequence[list], samplers: list, eos_token_id: int | None,
            counts: Sequence[int]) -> Iterator[tuple[int, int]]:
        """Yields (sequence index, token) as tokens are decoded; fills self.report at the end. counts: per
        sequence, its max_new_tokens. Sequences join in order as rows free up."""
        layout, sess = self.layout, self.sess
        limits = list(counts)
        pending = list(range(len(prompts)))
        produced = [0] * len(prompts)
        next_token: dict = {}  # row's sequence -> the token the next step feeds
        with_report = hasattr(sess, "run_with_report")
        names = layout.bucket_output_names or layout.output_names
        steps = replayed = decoded = 0
        occupancy, kv_waste, step_s = [], [], []
        t_start = time.perf_counter()
        prefill_s = 0.0

        def finished(seq: int, token: int) -> bool:
            return produced[seq] >= limits[seq] or (eos_token_id is not None and token == eos_token_id)

        while pending or self.lengths:
            while pending and len(self.lengths) < self.max_batch:
                seq = pending.pop(0)
                t0 = time.perf_counter()
                logits, presents = self._prefill(prompts[seq])
                token = samplers[seq](logits)
                prefill_s += time.perf_counter() - t0
                produced[seq] += 1
                yield seq, token
                if not finished(seq, token):
                    self._join(seq, presents)
                    next_token[seq] = token
            if not self.lengths:
                continue
            n = len(self.lengths)
            rows = next(b for b in self.buckets if b >= n)
            t0 = time.perf_counter()
            feeds = self._feeds([next_token[s] for s in self.seq_of_row], rows)
            if with_report:
                outs, run_report = sess.run_with_report(names, feeds)
            else:
                outs, run_report = sess.run(names, feeds), None
            steps += 1
            replayed += bool(run_report and run_report.get("execution_mode") == "CPU_REPLAY")
            occupancy.append(n / rows)
            kv_waste.append(sum(self.capacity - length for length in self.lengths) / (n * (self.capacity + 1)))
            self._store(outs[1:])
            ended = []
            for r, seq in enumerate(self.seq_of_row):
                token = samplers[seq](outs[0][r, -1])
                produced[seq] += 1
                decoded += 1
                next_token[seq] = token
                if finished(seq, token):
                    ended.append(r)
            step_s.append(time.perf_counter() - t0)
            for r in range(n):
                yield self.seq_of_row[r], next_token[self.seq_of_row[r]]
            for r in sorted(ended, reverse=True):  # from the last row: a moved row is never one that ended
                self._leave(r)
            if self.lengths:
                self._grow(max(self.lengths))
        wall = time.perf_counter() - t_start
        self.report = {
            "sequences": len(prompts), "max_batch": self.max_batch, "batch_buckets": self.buckets,
            "new_tokens": sum(produced), "wall_s": wall, "tokens_per_s": sum(produced) / wall if wall else None,
            "prefill_s": prefill_s, "decode_steps": steps, "decoded_tokens": decoded,
            "decode_tokens_per_s": decoded / sum(step_s) if step_s else None,
            "step_latency_p50_us": float(np.percentile(np.asarray(step_s) * 1e6, 50)) if step_s else None,
            "replayed_steps": replayed if with_report else None,
            "hit_rate": (replayed / steps if steps else None) if with_report else None,
            "batch_occupancy": float(np.mean(occupancy)) if occupancy else None,
            "padding_waste": float(np.mean(kv_waste)) if kv_waste else 0.0,
            "kv_bucket": self.bucket}
