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

Prefill, packed (the CPU form of piecewise plans: calls bucketed by their token count). A joining prompt's
tokens are rows of the same call as the running sequences' decode tokens, one row per token: row i of a
prompt lists the prompt's past slots, then -2 - j for its earlier tokens j of this call (sdx.PagedAttention
reads those from the call's own new keys), so prompts of any lengths and the decode rows share one call
whose shape is only (rows, width): rows = the token count rounded up to a bucket (1, 2, 4, .., 32, then
multiples of 32), width as for a decode step. Any mix of prompt lengths and running sequences replays the
plan of its bucket instead of warming up a plan per prompt length. The pages of an earlier prompt's common
prefix (whole pages, shared and reference-counted; the pool copies a shared page before writing into it) are
the joining prompt's past, so only the rest of it is computed. The LM head runs only on the rows sampled
from (_paged_graph.ROW_LOGITS: each prompt's last token, each decode row; checked once per session against
the full logits). Packing is checked once per session against the prompt run alone at its exact length
(check_padding); a model that fails it (positions not from position_ids, ...) prefills each prompt alone.

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
from ._paged_graph import LOGIT_ROWS, ROW_LOGITS, SLOT_MAP


MAX_PACKED_TOKENS = 512  # prompt tokens one call takes in (a longer prompt still runs, alone)


TOKEN_STEP = 8  # calls with more tokens than the batch buckets are padded to a multiple of this many rows


def token_bucket(n: int, batch: list) -> int:
    """Rows for a call of n tokens: the batch bucket when n fits one, else the next multiple of TOKEN_STEP
    (pieces bucketed by token count). A prefill's cost grows with its rows (on a CPU it is bound by
    arithmetic), so the step is small: at most 7 padded rows; a new bucket costs one warm-up call."""
    if n <= batch[-1]:
        return next(b for b in batch if b >= n)
    return -(-n // TOKEN_STEP) * TOKEN_STEP


class PagedGeneration:
    def __init__(self, sess: Any, graph: Any, layout: Any, max_batch: int, kv_bucket: int | None,
                 pool: KVPool) -> None:
        self.sess, self.graph, self.layout = sess, graph, layout
        self.max_batch, self.bucket = max_batch, kv_bucket
        self.buckets = batch_buckets(max_batch)
        self.pool = pool
        # The LM head on the sampled rows only (_paged_graph.ROW_LOGITS), once checked against logits.
        self.names = [ROW_LOGITS if self._row_logits() else "logits"] + graph.new_kv_names
        self.packed = False  # joining prompts run as rows of the decode call (set once check_padding passed)
        self.cache_feeds = dict(zip(graph.cache_names, self.pool.arrays))
        self.report: dict = {}
        self.outcomes: list = []
        self._prompts: list = []   # (prompt, Sequence) of sequences whose pages may hold a shared prefix
        self.prefix_tokens_shared = 0
        self._step_feeds: dict = {}  # (rows, width) -> _StepFeeds

    # --- one call ----------------------------------------------------------------------------------------
    def _run(self, feeds: dict, names: list | None = None) -> tuple[list, bool]:
        feeds.update(self.cache_feeds)
        names = self.names if names is None else names
        if hasattr(self.sess, "run_with_report"):
            outs, rep = self.sess.run_with_report(names, feeds)
            return outs, rep.get("execution_mode") == "CPU_REPLAY"
        return self.sess.run(names, feeds), False

    def _shared_prefix(self, prompt: list, joining: Sequence = ()) -> Any:
        """A fork of the live sequence sharing the most whole pages of prompt's prefix (at most len - 1
        tokens: the last prompt token is always computed), or None. `joining`: (prompt, Sequence) of prompts
        computed in the same call (their pages are written by it: call() points at their rows)."""
        ps, best, best_len = self.pool.page_size, None, 0
        for other, seq in [*self._prompts, *joining]:
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

    def _reserve(self, prompt: list, joining: Sequence = ()) -> tuple[Any, int]:
        """(the sequence for prompt, its first token to compute): slots for every prompt token, the first
        `start` on pages shared with an earlier prompt (or one of `joining`, see _shared_prefix)."""
        seq = self._shared_prefix(prompt, joining)
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
        self.prefix_tokens_shared += start
        return seq, start

    def prefill(self, prompt: list) -> tuple[np.ndarray, Any, bool]:
        """(the last position's logits, the sequence, replayed) for a prompt run alone as one row."""
        seq, start = self._reserve(prompt)
        rest = prompt[start:]
        feeds = {"input_ids": np.asarray([rest], np.int64), "attention_mask": np.ones((1, len(prompt)), np.int64),
                 SLOT_MAP: self.pool.slots(seq, 0, start)[None]}
        if self.layout.has_position_ids:
            feeds["position_ids"] = np.arange(start, len(prompt), dtype=np.int64)[None]
        if self.graph.row_logits:
            feeds[LOGIT_ROWS] = np.asarray([len(rest) - 1], np.int64)
            if self._row_logits() is None:
                self._check_row_logits(feeds)
        outs, replayed = self._run(feeds)
        self.pool.write(seq, start, [x[0] for x in outs[1:]])
        return (outs[0][0] if self.names[0] == ROW_LOGITS else outs[0][0, -1]), seq, replayed

    def _row_logits(self) -> bool | None:
        """Whether the loop reads ROW_LOGITS (None: not checked yet on this session)."""
        if not self.graph.row_logits:
            return False
        return getattr(self.sess, "_sdx_row_logits", None)

    def _check_row_logits(self, feeds: dict) -> None:
        """One call with both outputs: ROW_LOGITS is used from then on when it equals logits' last position."""
        full, rows = self._run(dict(feeds), ["logits", ROW_LOGITS])[0]
        ok = full.shape[0] == 1 and rows.shape[0] == 1 and \
            np.allclose(full[0, -1], rows[0], rtol=1e-5, atol=1e-5 * max(1.0, float(np.abs(full).max(initial=0))))
        try:
            self.sess._sdx_row_logits = ok
        except AttributeError:
            pass
        self.names[0] = ROW_LOGITS if ok else "logits"

    def width(self, longest: int) -> int:
        return (longest // self.bucket + 1) * self.bucket if self.bucket else longest

    def call(self, items: list, width: int | None = None) -> tuple[np.ndarray, bool]:
        """One call for items (sequence, tokens, start): each sequence's tokens [start, start + len(tokens))
        already have slots (pool.append); each token is a row, seeing its sequence's slots before it (its
        earlier tokens of this call by -2 - row entries, and so are past tokens an earlier item of the call
        computes: a prefix shared with a prompt joining in the same call). Returns (logits [len(items), vocab]
        of each item's last token, replayed)."""
        n = sum(len(t) for _, t, _ in items)
        p = self.width(max(st + len(t) - 1 for _, t, st in items)) if width is None else width
        if n == len(items):
            return self._decode_call(items, p)
        rows = token_bucket(n, self.buckets)
        slot_map = np.full((rows, p), -1, np.int64)
        mask = np.zeros((rows, p + 1), np.int64)
        mask[:, p] = 1
        ids = np.zeros((rows, 1), np.int64)
        pos = np.zeros((rows, 1), np.int64)
        new_slots, last = [], []
        inflight: dict = {}  # slot -> the row computing it in this call (prompts' tokens)
        r = 0
        for seq, toks, start in items:
            k = len(toks)
            slots = self.pool.slots(seq, 0, start + k)
            past = slots[:start]
            if inflight and start:
                at = np.fromiter((inflight.get(int(x), -1) for x in past), np.int64, start)
                past = np.where(at >= 0, -2 - at, past)
            slot_map[r:r + k, :start] = past
            mask[r:r + k, :start] = 1
            if k > 1:  # token i sees tokens j < i of this call: entries -2 - (r + j)
                j = np.arange(k - 1)
                earlier = j[None, :] < np.arange(k)[:, None]
                slot_map[r:r + k, start:start + k - 1] = np.where(earlier, -2 - (r + j)[None, :], -1)
                mask[r:r + k, start:start + k - 1] = earlier
            ids[r:r + k, 0] = toks
            pos[r:r + k, 0] = np.arange(start, start + k)
            new_slots.append(slots[start:])
            if k > 1:
                inflight.update(zip(slots[start:].tolist(), range(r, r + k)))
            r += k
            last.append(r - 1)
        feeds = {"input_ids": ids, "attention_mask": mask, SLOT_MAP: slot_map}
        if self.layout.has_position_ids:
            feeds["position_ids"] = pos
        if self.graph.row_logits:
            picked = np.zeros(token_bucket(len(items), self.buckets), np.int64)
            picked[:len(last)] = last
            feeds[LOGIT_ROWS] = picked
        outs, replayed = self._run(feeds)
        written = np.concatenate(new_slots)
        # The new K/V into their slots: one slot or a run of consecutive ones (a batch-1 step, a prompt on fresh
        # pages) by a plain slice, which numpy copies several times faster than a gather of slots.
        run = n == 1 or bool((np.diff(written) == 1).all())
        at = slice(int(written[0]), int(written[0]) + n) if run else written
        for a, x in zip(self.pool.arrays, outs[1:]):
            a[:, at] = x[:n, :, 0].transpose(1, 0, 2)
        logits = outs[0][:len(items)] if self.names[0] == ROW_LOGITS else outs[0][last, -1]
        return logits, replayed

    def _decode_call(self, items: list, p: int) -> tuple[np.ndarray, bool]:
        """call() for items of one token each (a decode step): the same feeds, written into arrays kept per
        (rows, width) and changed only where a row's past grew or moved (a step's Python is a tenth of a
        batch-1 step of a small model)."""
        n = len(items)
        rows = token_bucket(n, self.buckets)
        bufs = self._step_feeds.get((rows, p))
        if bufs is None:
            bufs = self._step_feeds[(rows, p)] = _StepFeeds(rows, p, self)
        feeds, slot_map, mask, ids, pos, filled = bufs.feeds, bufs.slot_map, bufs.mask, bufs.ids, bufs.pos, bufs.filled
        written = []
        for r, (seq, toks, start) in enumerate(items):
            slots = self.pool.slots(seq, 0, start + 1)
            slot_map[r, :start] = slots[:start]
            was = filled[r]
            if was > start:
                slot_map[r, start:was] = -1
                mask[r, start:was] = 0
            elif was < start:
                mask[r, was:start] = 1
            filled[r] = start
            ids[r, 0] = toks[0]
            pos[r, 0] = start
            written.append(slots[start])
        for r in range(n, rows):  # padding rows: no past
            if filled[r]:
                slot_map[r, :filled[r]] = -1
                mask[r, :filled[r]] = 0
                filled[r] = 0
            ids[r, 0] = pos[r, 0] = 0
        if bufs.picked is not None:
            bufs.picked[:n] = np.arange(n)
            bufs.picked[n:] = 0
        outs, replayed = self._run(feeds)
        if n == 1:  # one slot: a plain index
            s = written[0]
            for a, x in zip(self.pool.arrays, outs[1:]):
                a[:, s] = x[0, :, 0]
        else:
            at = np.asarray(written, np.int64)
            for a, x in zip(self.pool.arrays, outs[1:]):
                a[:, at] = x[:n, :, 0].transpose(1, 0, 2)
        logits = outs[0][:n] if self.names[0] == ROW_LOGITS else outs[0][:n, -1]
        return logits, replayed

    def step(self, seqs: list, tokens: list, width: int | None = None) -> tuple[np.ndarray, bool]:
        """One decode step for seqs (each already given its new token's slot by pool.append: its past is
        length - 1 tokens). Returns (logits [n, vocab], replayed)."""
        return self.call([(s, [t], s.length - 1) for s, t in zip(seqs, tokens)], width)

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
        t_start, prefill_s, prefill_calls, prefill_replayed = time.perf_counter(), 0.0, 0, 0
        # Per sequence: its prefill time, the steps it took part in (seconds, replayed, padding share).
        self.per_sequence = [{"prefill_s": None, "steps": [], "replayed": 0, "waste": []} for _ in prompts]

        def finished(i: int, token: int) -> bool:
            return produced[i] >= counts[i] or (eos_token_id is not None and token == eos_token_id)

        def refuse(i: int, err: Exception) -> None:
            self.outcomes[i] = f"refused: {err}"

        def joined(i: int, seq: Any, logits: np.ndarray, seconds: float) -> Iterator[tuple[int, int]]:
            """A prompt's first token, from its last position's logits: yielded; the sequence joins the batch."""
            token = samplers[i](logits)
            self.per_sequence[i]["prefill_s"] = seconds
            produced[i] += 1
            yield i, token
            if finished(i, token):
                pool.free(seq)
            else:
                active.append([i, seq, token])
                self._prompts.append((prompts[i], seq))

        def too_long(i: int) -> bool:
            need = pool.pages_for(len(prompts[i]) + 1)
            if need > pool.pages:
                refuse(i, KVPoolExhausted(f"KV pool exhausted: the prompt of {len(prompts[i])} tokens needs {need} "
                                          f"pages of {pool.page_size} tokens; the pool has only {pool.pages} "
                                          "(raise kv_pages)"))
            return need > pool.pages

        while pending or active:
            while not self.packed and pending and len(active) < self.max_batch:  # each prompt alone
                i = pending[0]
                if too_long(i):
                    pending.pop(0)
                    continue
                t0 = time.perf_counter()
                try:
                    logits, seq, replayed_alone = self.prefill(prompts[i])
                except KVPoolExhausted as e:
                    if active:
                        break  # wait for pages: decoding sequences free theirs as they end
                    pending.pop(0)
                    refuse(i, e)
                    continue
                pending.pop(0)
                elapsed = time.perf_counter() - t0
                prefill_s, prefill_calls, prefill_replayed = prefill_s + elapsed, prefill_calls + 1, \
                    prefill_replayed + replayed_alone
                yield from joined(i, seq, logits, elapsed)
            for entry in list(active):  # a slot for each row's new token (running sequences come first)
                try:
                    pool.append(entry[1])
                except KVPoolExhausted as e:
                    refuse(entry[0], e)
                    self._end(entry, active)
            joining: list = []  # [sequence index, Sequence, first token to compute]: prompts of this call
            budget = MAX_PACKED_TOKENS
            while self.packed and pending and len(active) + len(joining) < self.max_batch:  # rows of this call
                i = pending[0]
                prompt = prompts[i]
                if too_long(i):
                    pending.pop(0)
                    continue
                if joining and len(prompt) > budget:
                    break
                try:
                    seq, start = self._reserve(prompt, [(prompts[j], sq) for j, sq, _ in joining])
                except KVPoolExhausted as e:
                    if active or joining:
                        break  # wait for pages: decoding sequences free theirs as they end
                    pending.pop(0)
                    refuse(i, e)
                    continue
                pending.pop(0)
                joining.append([i, seq, start])
                budget -= len(prompt) - start
            if not active and not joining:
                continue
            t0 = time.perf_counter()
            seqs = [e[1] for e in active]
            items = [(e[1], [e[2]], e[1].length - 1) for e in active] + \
                [(seq, prompts[i][start:], start) for i, seq, start in joining]
            logits, hit = self.call(items)
            elapsed = time.perf_counter() - t0
            if active:
                steps += 1
                replayed += hit
                n = len(active)
                slack.append(max(len(s.pages) * pool.page_size - s.length for s in seqs))
                occupancy.append(n / next(b for b in self.buckets if b >= n))
                width = self.width(max(s.length - 1 for s in seqs))
                waste.append(sum(width - (s.length - 1) for s in seqs) / (n * (width + 1)))
                step_s.append(elapsed)
            ended = []
            for r, entry in enumerate(active):
                token = samplers[entry[0]](logits[r])
                produced[entry[0]] += 1
                decoded += 1
                entry[2] = token
                if finished(entry[0], token):
                    ended.append(entry)
            for entry in active:
                seq_stats = self.per_sequence[entry[0]]
                seq_stats["steps"].append(elapsed)
                seq_stats["replayed"] += hit
                seq_stats["waste"].append((width - (entry[1].length - 1)) / (width + 1))
            for entry in list(active):
                yield entry[0], entry[2]
            for entry in ended:
                self._end(entry, active)
            if joining:
                prefill_s += elapsed
                prefill_calls += 1
                prefill_replayed += hit
            for k, (i, seq, _) in enumerate(joining):
                yield from joined(i, seq, logits[len(seqs) + k], elapsed)
        wall = time.perf_counter() - t_start
        per_token = pool.bytes_per_page // pool.page_size
        longest = max((len(p) + c for p, c in zip(prompts, counts)), default=0)
        self.report = {
            "sequences": len(prompts), "max_batch": self.max_batch, "batch_buckets": self.buckets,
            "new_tokens": sum(produced), "wall_s": wall, "tokens_per_s": sum(produced) / wall if wall else None,
            "prefill_s": prefill_s, "prefill_calls": prefill_calls, "prefill_replayed": prefill_replayed,
            "packed_prefill": self.packed,
            "decode_steps": steps, "decoded_tokens": decoded,
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
        attention_mask. Then, when padding is kept, the prompt packed (a row per token, padded rows and width)
        against the prompt run alone: self.packed says whether they agree. The pool is left as it was."""
        logits, seq, _ = self.prefill(prompt)
        try:
            self.pool.append(seq)
            token = int(np.argmax(logits))
            a = self.step([seq], [token], width=len(prompt))[0][0]
            b = self.step([seq], [token], width=self.width(len(prompt)))[0][0]
        finally:
            self.pool.free(seq)
        ok, diff = _agree(a, b)
        if not ok:
            self._forget_prompts()
            return False, (f"failed: the padded step's logits differ from the exact-shape step's by up to {diff:.3g} "
                           "(the model does not mask padded keys by attention_mask?); exact shapes used")
        seq, _ = self._reserve(prompt)
        try:
            packed = self.call([(seq, prompt, 0)])[0][0]
        finally:
            self.pool.free(seq)
            self._forget_prompts()
        self.packed, pdiff = _agree(logits, packed)
        return True, (f"passed: logits within {diff:.3g} of the exact-shape step's; prompts packed as rows: " +
                      (f"within {pdiff:.3g} of the prompt run alone" if self.packed else
                       f"off (logits differ by up to {pdiff:.3g} from the prompt run alone: positions not from "
                       "position_ids?)"))

    def _forget_prompts(self) -> None:
        self._prompts.clear()
        self.prefix_tokens_shared = 0

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


class _StepFeeds:
    """A decode step's feeds for one (rows, width), kept between steps: filled[r] is how many past entries row r
    holds (the rest of the slot map is -1, of the mask 0; the mask's last column, the new token, is 1)."""

    def __init__(self, rows: int, p: int, gen: PagedGeneration) -> None:
        self.slot_map = np.full((rows, p), -1, np.int64)
        self.mask = np.zeros((rows, p + 1), np.int64)
        self.mask[:, p] = 1
        self.ids = np.zeros((rows, 1), np.int64)
        self.pos = np.zeros((rows, 1), np.int64)
        self.filled = [0] * rows
        self.feeds = {"input_ids": self.ids, "attention_mask": self.mask, SLOT_MAP: self.slot_map}
        if gen.layout.has_position_ids:
            self.feeds["position_ids"] = self.pos
        self.picked = None
        if gen.graph.row_logits:
            self.picked = np.zeros(rows, np.int64)
            self.feeds[LOGIT_ROWS] = self.picked
        self.feeds.update(gen.cache_feeds)


def _agree(a: np.ndarray, b: np.ndarray) -> tuple[bool, float]:
    """(same argmax and within 1e-4 of the largest magnitude, the largest difference) for two logit rows."""
    a, b = a.astype(np.float64), b.astype(np.float64)
    diff = float(np.max(np.abs(a - b)))
    return int(np.argmax(a)) == int(np.argmax(b)) and diff <= 1e-4 * max(1.0, float(np.max(np.abs(a)))), diff
