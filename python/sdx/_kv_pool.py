"""A paged KV cache (issue 21): one pool of fixed-size pages shared by every sequence of a generation, with a
page table per sequence, pages handed out and taken back as sequences grow and end, and prefix pages shared
between sequences (copy on write).

    pool = KVPool(arrays=2 * layers, heads=H, head_dim=D, pages=256, page_size=16)
    seq = pool.new_sequence(len(prompt))        # pages for the prompt; KVPoolExhausted when none are free
    pool.write(seq, 0, prompt_kv)               # [H, n, D] per array, the prompt's K/V
    slot = pool.append(seq)                     # room for one more token: its slot (a fresh page every
                                                # page_size tokens; a shared last page is copied first)
    twin = pool.fork(seq)                       # a second sequence sharing seq's pages
    pool.slot_map([seq, twin], width=128)       # int64 [2, 128]: each token's slot, -1 after its length
    pool.free(seq)

The arrays (pool.arrays, one per past_key_values input: [H, pages * page_size, D]) never move: a session
reads them in place on every replay (the engine borrows an input passed at the same address), and a page is
a run of page_size consecutive slots, so a sequence whose pages were handed out in order is read in long
contiguous runs. Memory held is what the pages in use hold: within one page per sequence of the tokens stored.
"""
from __future__ import annotations

import heapq
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ._sdx import ResourceExhausted


class KVPoolExhausted(ResourceExhausted):
    """No free page is left in the KV pool for a sequence that needs one."""


def _aligned_zeros(shape: tuple, dtype: np.dtype, align: int = 64) -> np.ndarray:
    n = int(np.prod(shape)) * np.dtype(dtype).itemsize
    raw = np.zeros(n + align, np.uint8)
    off = (-raw.ctypes.data) % align
    return raw[off:off + n].view(dtype).reshape(shape)


@dataclass
class Sequence:
    pages: list = field(default_factory=list)  # page ids, in token order
    length: int = 0                            # tokens stored
    # KVPool.slots' cache: the slots of tokens [0, known) (a decode step asks for all of them every step).
    cached: Any = field(default=None, repr=False)
    known: int = field(default=0, repr=False)


class KVPool:
    def __init__(self, arrays: int, heads: int, head_dim: int, pages: int, page_size: int = 16,
                 dtype: np.dtype = np.float32) -> None:
        if pages < 1 or page_size < 1:
            raise ValueError(f"a KV pool needs pages >= 1 and page_size >= 1, not {pages} and {page_size}")
        self.page_size, self.pages = int(page_size), int(pages)
        self.heads, self.head_dim = heads, head_dim
        self.arrays = [_aligned_zeros((heads, pages * page_size, head_dim), dtype) for _ in range(arrays)]
        # A heap: the lowest free page first, so a sequence's pages tend to be consecutive (long runs of
        # slots for the attention kernel), whatever order pages came back in.
        self._free = list(range(pages))
        self._refs = [0] * pages
        self.peak_pages = 0

    def reset(self) -> None:
        """Every page free again (the arrays are kept: their address and shape do not change)."""
        self._free = list(range(self.pages))
        self._refs = [0] * self.pages
        self.peak_pages = 0

    def fits(self, arrays: int, heads: int, head_dim: int, page_size: int, dtype: Any) -> bool:
        a = self.arrays[0]
        return len(self.arrays) == arrays and a.shape[0] == heads and a.shape[2] == head_dim and \
            self.page_size == page_size and a.dtype == np.dtype(dtype)

    # --- pages -----------------------------------------------------------------------------------------
    @property
    def pages_in_use(self) -> int:
        return self.pages - len(self._free)

    @property
    def bytes_per_page(self) -> int:
        return sum(a.itemsize * self.heads * self.page_size * self.head_dim for a in self.arrays)

    def _take(self, n: int, what: str) -> list:
        if n > len(self._free):
            raise KVPoolExhausted(f"KV pool exhausted: {what} needs {n} more page(s) of {self.page_size} tokens but "
                                  f"{len(self._free)} of {self.pages} are free (raise kv_pages, or lower max_batch)")
        got = [heapq.heappop(self._free) for _ in range(n)]
        for p in got:
            self._refs[p] = 1
        self.peak_pages = max(self.peak_pages, self.pages_in_use)
        return got

    def _release(self, page: int) -> None:
        self._refs[page] -= 1
        if self._refs[page] == 0:
            heapq.heappush(self._free, page)

    def pages_for(self, tokens: int) -> int:
        return -(-tokens // self.page_size)

    # --- sequences -------------------------------------------------------------------------------------
    def new_sequence(self, tokens: int) -> Sequence:
        """A sequence with room for `tokens` tokens (its length is set to them: write their K/V next)."""
        return Sequence(self._take(self.pages_for(tokens), f"a sequence of {tokens} tokens"), tokens)

    def fork(self, seq: Sequence) -> Sequence:
        """A sequence sharing all of seq's pages (a common prefix); a write into a shared page copies it first."""
        for p in seq.pages:
            self._refs[p] += 1
        return Sequence(list(seq.pages), seq.length)

    def append(self, seq: Sequence) -> int:
        """Room for one more token of seq; returns its slot (seq.length grows by one)."""
        off = seq.length % self.page_size
        if off == 0:
            seq.pages.extend(self._take(1, f"a sequence growing past {seq.length} tokens"))
        else:
            self._own_last(seq)
        slot = seq.pages[-1] * self.page_size + off
        seq.length += 1
        return slot

    def _own_last(self, seq: Sequence) -> None:
        last = seq.pages[-1]
        if self._refs[last] == 1:
            return
        (copy,) = self._take(1, "copying a shared page before a write")
        src, dst = slice(last * self.page_size, (last + 1) * self.page_size), slice(copy * self.page_size,
                                                                                  (copy + 1) * self.page_size)
        for a in self.arrays:
            a[:, dst] = a[:, src]
        self._release(last)
        seq.pages[-1] = copy
        seq.known = min(seq.known, (len(seq.pages) - 1) * self.page_size)  # the last page's slots moved

    def free(self, seq: Sequence) -> None:
        for p in seq.pages:
            self._release(p)
        seq.pages, seq.length, seq.known = [], 0, 0

    # --- data ------------------------------------------------------------------------------------------
    def slots(self, seq: Sequence, start: int = 0, stop: int | None = None) -> np.ndarray:
        """The slots of tokens [start, stop) of seq (a view: valid until seq's pages change)."""
        stop = seq.length if stop is None else stop
        if stop <= start:
            return np.zeros(0, np.int64)
        if stop > seq.known:  # extend the cache: a decode step adds one token's slot, not the whole row
            if seq.cached is None or len(seq.cached) < stop:
                grown = np.empty(max(stop, 2 * (0 if seq.cached is None else len(seq.cached)), 64), np.int64)
                if seq.known:
                    grown[:seq.known] = seq.cached[:seq.known]
                seq.cached = grown
            t = np.arange(seq.known, stop)
            seq.cached[seq.known:stop] = \
                np.asarray(seq.pages, np.int64)[t // self.page_size] * self.page_size + t % self.page_size
            seq.known = stop
        return seq.cached[start:stop]

    def write(self, seq: Sequence, start: int, kv: list) -> None:
        """Stores K/V rows (one [H, n, D] per array) for tokens start..start+n of seq."""
        n = kv[0].shape[1]
        s = self.slots(seq, start, start + n)
        for a, x in zip(self.arrays, kv):
            a[:, s] = x

    def slot_map(self, seqs: list, width: int, rows: int | None = None) -> np.ndarray:
        """int64 [rows, width]: row r holds the slots of seqs[r]'s tokens, then -1 (empty); rows past
        len(seqs) are all -1."""
        out = np.full((rows or len(seqs), width), -1, np.int64)
        for r, seq in enumerate(seqs):
            out[r, :seq.length] = self.slots(seq)
        return out
