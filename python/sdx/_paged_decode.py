"""sdx.generate's decode loop on a paged KV cache (issue 21): the decoder in its paged form (_paged_graph.py),
one KV pool (_kv_pool.py) for every sequence, continuous batching, prefix pages shared between prompts.

    dec = PagedGeneration(sess, graph, layout, max_batch=8, kv_bucket=128, pool=KVPool(...))
    for seq, token in dec.run(prompts, samplers, eos_token_id, counts):
        ...
    dec.report, dec.outcomes     # the batch's report; per sequence: None or why it was refused

A step. The active sequences (up to max_batch) are rows 0..n-1 of one call, the batch padded up to a bucket
(1, 2, 4, ..., max_batch) so the session replays one plan per (rows, width). Before the call each row gets a
slot for its new token (a fresh page every page_size tokens); sdx_slot_map row r lists the slots of its past
tokens and -1 after them up to `width` (a multiple of kv_bucket, the longest row rounded up), and
attention_mask is 1 on those tokens and on the new one, 0 on the empty positions. The model attends over the
pool in place (sdx.PagedAttention), then the step's new K/V (extra outputs) go into the reserved slots.
Padding rows have no past at all (slot map -1, mask 1 on their own token only) and their outputs are
dropped. Nothing is copied per step but the new K/V: no row moves when a sequence ends, its pages go back.

Prefill. A joining prompt runs alone at its exact length with the pages of any earlier prompt's common
prefix (whole pages, shared and reference-counted; the pool copies a shared page before writing into it) as
its past, so only the rest of the prompt is computed; its first token comes from that call, whose LM head
runs on the last position only (_paged_graph.LAST_LOGITS, checked once per session against the full logits).

KV pool. kv_pages pages of page_size tokens (default: room for max_batch sequences of the longest request,
rounded up to a power of two); generate() keeps the pool on the session and reuses it for the next request
that fits, so the pool's arrays keep their address (the engine reads them in place) and their shape (the
plans replay).
A prompt waits for pages while others decode; a sequence that needs a page when none is free, or a prompt
longer than the whole pool, is refused (KVPoolExhausted, its outcome says so) and the others continue.
"""
from __future__ import annotations

import time
from typing import Any, Iterator, Sequence

import numpy as np

from ._batch_decode import batch_buckets
from ._kv_pool import KVPool, KVPoolExhausted
from ._paged_graph import LAST_LOGITS, SLOT_MAP


class PagedGeneration:
    def __init__(self, sess: Any, graph: Any, layout: Any, max_batch: int, kv_bucket: int | None,
                 pool: KVPool) -> None:
        self.sess, self.graph, self.layout = sess, graph, layout
        self.max_batch, self.bucket = max_batch, kv_bucket
        self.buckets = batch_buckets(max_batch)
        self.pool = pool
        # The LM head on the last position only (_paged_graph.LAST_LOGITS), once checked against logits.
        self.names = [LAST_LOGITS if self._last_logits() else "logits"] + graph.new_kv_names
        self.cache_feeds = dict(zip(graph.cache_names, self.pool.arrays))
        self.report: dict = {}
        self.outcomes: list = []
        self._prompts: list = []   # (prompt, Sequence) of sequences whose pages may hold a shared prefix
        self.prefix_tokens_shared = 0

    # --- one call ----------------------------------------------------------------------------------------
    def _run(self, feeds: dict, names: list | None = None) -> tuple[list, bool]:
        feeds.update(self.cache_feeds)
        names = self.names if names is None else names
        if hasattr(self.sess, "run_with_report"):
            outs, rep = self.sess.run_with_report(names, feeds)
            return outs, rep.get("execution_mode") == "CPU_REPLAY"
        return self.sess.run(names, feeds), False

    def _shared_prefix(self, prompt: list) -> Any:
        """A fork of the live sequence sharing the most whole pages of prompt's prefix (at most len - 1
        tokens: the last prompt token is always computed), or None."""
        ps, best, best_len = self.pool.page_size, None, 0
        for other, seq in self._prompts:
            n = 0
            while n < len(seq.pages) and (n + 1) * ps <= min(len(prompt) - 1, len(other)) and \
                    other[n * ps:(n + 1) * ps] == prompt[n * ps:(n + 1) * ps]:
                n += 1
            if n * ps > best_len:
                best, best_len = (seq, n), n * ps
        if best is None:
            return None
        seq, n = best
        twin = self.pool.fork(seq)
        for p in twin.pages[n:]:
            self.pool._release(p)
        twin.pages, twin.length = twin.pages[:n], n * ps
        return twin

    def prefill(self, prompt: list) -> tuple[np.ndarray, Any, bool]:
        """(the last position's logits, the sequence, replayed) for a prompt run alone."""
        layout = self.layout
        seq = self._shared_prefix(prompt)
        start = seq.length if seq is not None else 0
        try:
            if seq is None:
                seq = self.pool.new_sequence(0)
            for _ in range(len(prompt) - start):
                self.pool.append(seq)
        except KVPoolExhausted:
            if seq is not None:
                self.pool.free(seq)
            raise
        rest = prompt[start:]
        feeds = {"input_ids": np.asarray([rest], np.int64), "attention_mask": np.ones((1, len(prompt)), np.int64),
                 SLOT_MAP: self.pool.slots(seq, 0, start)[None]}
        if layout.has_position_ids:
            feeds["position_ids"] = np.arange(start, len(prompt), dtype=np.int64)[None]
        if self.graph.last_logits and self._last_logits() is None:
            self._check_last_logits(feeds)
        outs, replayed = self._run(feeds)
        self.pool.write(seq, start, [x[0] for x in outs[1:]])
        self.prefix_tokens_shared += start
        return outs[0][0, -1], seq, replayed

    def _last_logits(self) -> bool | None:
        """Whether the loop reads LAST_LOGITS (None: not checked yet on this session)."""
        if not self.graph.last_logits:
            return False
        return getattr(self.sess, "_sdx_last_logits", None)

    def _check_last_logits(self, feeds: dict) -> None:
        """One call with both outputs: LAST_LOGITS is used from then on when it equals logits' last position."""
        full, last = self._run(dict(feeds), ["logits", LAST_LOGITS])[0]
        ok = full.shape[0] == last.shape[0] and last.shape[1] == 1 and \
            np.allclose(full[:, -1], last[:, 0], rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(full).max(initial=0))))
        try:
            self.sess._sdx_last_logits = ok
        except AttributeError:
            pass
        self.names[0] = LAST_LOGITS if ok else "logits"

    def width(self, longest: int) -> int:
        return (longest // self.bucket + 1) * self.bucket if self.bucket else longest

    def step(self, seqs: list, tokens: list, width: int | None = None) -> tuple[np.ndarray, bool]:
        """One decode step for seqs (each already given its new token's slot by pool.append: its past is
        length - 1 tokens). Returns (logits [n, vocab], replayed)."""
        n = len(seqs)
        rows = next(b for b in self.buckets if b >= n)
        past = [s.length - 1 for s in seqs]
        p = self.width(max(past)) if width is None else width
        slot_map = np.full((rows, p), -1, np.int64)
        mask = np.zeros((rows, p + 1), np.int64)
        mask[:, p] = 1
        new_slots = np.empty(n, np.int64)
        for r, (s, k) in enumerate(zip(seqs, past)):
            slots = self.pool.slots(s, 0, k + 1)
            slot_map[r, :k], new_slots[r] = slots[:k], slots[k]
            mask[r, :k] = 1
        ids = np.zeros((rows, 1), np.int64)
        ids[:n, 0] = tokens
        feeds = {"input_ids": ids, "attention_mask": mask, SLOT_MAP: slot_map}
        if self.layout.has_position_ids:
            pos = np.zeros((rows, 1), np.int64)
            pos[:n, 0] = past
            feeds["position_ids"] = pos
        outs, replayed = self._run(feeds)
        for a, x in zip(self.pool.arrays, outs[1:]):
            a[:, new_slots] = x[:n, :, 0].transpose(1, 0, 2)
        return outs[0][:n, -1], replayed

    # --- the loop ----------------------------------------------------------------------------------------
    def run(self, prompts: Sequence[list], samplers: list, eos_token_id: int | None,
            counts: Sequence[int]) -> Iterator[tuple[int, int]]:
        """Yields (sequence index, token) as tokens are decoded; fills self.report and self.outcomes."""
        pool = self.pool
        self.outcomes = [None] * len(prompts)
        pending = list(range(len(prompts)))
        produced = [0] * len(prompts)
        active: list = []  # [sequence index, Sequence, next token]
        steps = replayed = decoded = 0
        occupancy, waste, step_s, slack = [], [], [], []
        t_start, prefill_s = time.perf_counter(), 0.0
        # Per sequence: its prefill time, the steps it took part in (seconds, replayed, padding share).
        self.per_sequence = [{"prefill_s": None, "steps": [], "replayed": 0, "waste": []} for _ in prompts]

        def finished(i: int, token: int) -> bool:
            return produced[i] >= counts[i] or (eos_token_id is not None and token == eos_token_id)

        def refuse(i: int, err: Exception) -> None:
            self.outcomes[i] = f"refused: {err}"

        while pending or active:
            while pending and len(active) < self.max_batch:
                i = pending[0]
                prompt = prompts[i]
                if pool.pages_for(len(prompt) + 1) > pool.pages:
                    pending.pop(0)
                    refuse(i, KVPoolExhausted(f"KV pool exhausted: the prompt of {len(prompt)} tokens needs "
                                              f"{pool.pages_for(len(prompt) + 1)} pages of {pool.page_size} tokens; "
                                              f"the pool has only {pool.pages} (raise kv_pages)"))
                    continue
                t0 = time.perf_counter()
                try:
                    logits, seq, _ = self.prefill(prompt)
                except KVPoolExhausted as e:
                    if active:
                        break  # wait for pages: decoding sequences free theirs as they end
                    pending.pop(0)
                    refuse(i, e)
                    continue
                pending.pop(0)
                token = samplers[i](logits)
                self.per_sequence[i]["prefill_s"] = time.perf_counter() - t0
                prefill_s += self.per_sequence[i]["prefill_s"]
                produced[i] += 1
                yield i, token
                if finished(i, token):
                    pool.free(seq)
                else:
                    active.append([i, seq, token])
                    self._prompts.append((prompts[i], seq))
            if not active:
                continue
            for entry in list(active):  # a slot for each row's new token
                try:
                    pool.append(entry[1])
                except KVPoolExhausted as e:
                    refuse(entry[0], e)
                    self._end(entry, active)
            if not active:
                continue
            n = len(active)
            rows = next(b for b in self.buckets if b >= n)
            t0 = time.perf_counter()
            seqs = [e[1] for e in active]
            logits, hit = self.step(seqs, [e[2] for e in active])
            steps += 1
            replayed += hit
            slack.append(max(len(s.pages) * pool.page_size - s.length for s in seqs))
            occupancy.append(n / rows)
            width = self.width(max(s.length - 1 for s in seqs))
            waste.append(sum(width - (s.length - 1) for s in seqs) / (n * (width + 1)))
            ended = []
            for r, entry in enumerate(active):
                token = samplers[entry[0]](logits[r])
                produced[entry[0]] += 1
                decoded += 1
                entry[2] = token
                if finished(entry[0], token):
                    ended.append(entry)
            step_s.append(time.perf_counter() - t0)
            for entry in active:
                seq_stats = self.per_sequence[entry[0]]
                seq_stats["steps"].append(step_s[-1])
                seq_stats["replayed"] += hit
                seq_stats["waste"].append((width - (entry[1].length - 1)) / (width + 1))
            for entry in list(active):
                yield entry[0], entry[2]
            for entry in ended:
                self._end(entry, active)
        wall = time.perf_counter() - t_start
        per_token = pool.bytes_per_page // pool.page_size
        longest = max((len(p) + c for p, c in zip(prompts, counts)), default=0)
        self.report = {
            "sequences": len(prompts), "max_batch": self.max_batch, "batch_buckets": self.buckets,
            "new_tokens": sum(produced), "wall_s": wall, "tokens_per_s": sum(produced) / wall if wall else None,
            "prefill_s": prefill_s, "decode_steps": steps, "decoded_tokens": decoded,
            "decode_tokens_per_s": decoded / sum(step_s) if step_s else None,
            "step_latency_p50_us": float(np.percentile(np.asarray(step_s) * 1e6, 50)) if step_s else None,
            "replayed_steps": replayed, "hit_rate": replayed / steps if steps else None,
            "batch_occupancy": float(np.mean(occupancy)) if occupancy else None,
            "padding_waste": float(np.mean(waste)) if waste else 0.0, "kv_bucket": self.bucket,
            "kv_cache": "paged", "kv_page_size": pool.page_size, "kv_pages": pool.pages,
            "kv_pages_peak": pool.peak_pages, "kv_bytes_peak": pool.peak_pages * pool.bytes_per_page,
            "kv_bytes_contiguous": min(self.max_batch, len(prompts)) * longest * per_token,
            "kv_slack_tokens_max": max(slack) if slack else 0,
            "prefix_tokens_shared": self.prefix_tokens_shared,
            "refused": sum(o is not None for o in self.outcomes)}

    def check_padding(self, prompt: list) -> tuple[bool, str]:
        """Runs prompt's first decode step at its exact width and padded to the bucket: padding is kept when
        the logits agree (same argmax, within 1e-4 of the largest magnitude): the model masks empty slots by
        attention_mask. The pool is left as it was."""
        logits, seq, _ = self.prefill(prompt)
        try:
            self.pool.append(seq)
            token = int(np.argmax(logits))
            a = self.step([seq], [token], width=len(prompt))[0][0].astype(np.float64)
            b = self.step([seq], [token], width=self.width(len(prompt)))[0][0].astype(np.float64)
        finally:
            self.pool.free(seq)
            self._prompts.clear()
            self.prefix_tokens_shared = 0
        diff = float(np.max(np.abs(a - b)))
        if int(np.argmax(a)) == int(np.argmax(b)) and diff <= 1e-4 * max(1.0, float(np.max(np.abs(a)))):
            return True, f"passed: logits within {diff:.3g} of the exact-shape step's"
        return False, (f"failed: the padded step's logits differ from the exact-shape step's by up to {diff:.3g} "
                       "(the model does not mask padded keys by attention_mask?); exact shapes used")

    def sequence_report(self, i: int, prompt: list, tokens: list, eos_token_id: int | None) -> dict:
        """One sequence's report in sdx.generate's single-prompt form."""
        st = self.per_sequence[i]
        lat = np.asarray(st["steps"]) * 1e6
        pre = st["prefill_s"]
        stopped = "eos" if eos_token_id is not None and tokens and tokens[-1] == eos_token_id else "max_new_tokens"
        if self.outcomes[i] is not None:
            stopped = "kv_pool_exhausted"
        return {
            "prompt_tokens": len(prompt), "new_tokens": len(tokens),
            "prefill_ms": pre * 1e3 if pre is not None else None,
            "prefill_tokens_per_s": len(prompt) / pre if pre else None,
            "decode_steps": len(lat), "decode_tokens_per_s": len(lat) / (lat.sum() / 1e6) if len(lat) else None,
            "per_token_latency_p50_us": float(np.percentile(lat, 50)) if len(lat) else None,
            "per_token_latency_p90_us": float(np.percentile(lat, 90)) if len(lat) else None,
            "replayed_steps": st["replayed"], "hit_rate": st["replayed"] / len(lat) if len(lat) else None,
            "padding_waste": float(np.mean(st["waste"])) if st["waste"] else 0.0, "stopped_by": stopped,
            "refused": self.outcomes[i], "kv_cache": "paged", "kv_page_size": self.pool.page_size,
            "kv_pages": self.pool.pages, "kv_pages_peak": self.report.get("kv_pages_peak"),
            "kv_bytes_peak": self.report.get("kv_bytes_peak"), "kv_bucket": self.bucket}

    def _end(self, entry: list, active: list) -> None:
        active.remove(entry)
        self._prompts = [(p, s) for p, s in self._prompts if s is not entry[1]]
        self.pool.free(entry[1])
