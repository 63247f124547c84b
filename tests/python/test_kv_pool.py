"""The paged KV cache's pool (python/sdx/_kv_pool.py): pages handed out lowest first (so a sequence's slots run
on), one page per page_size tokens, prefix pages shared with reference counts and copied before a write,
pages back on free, the slot map, and exhaustion as sdx.ResourceExhausted naming what was asked."""
import numpy as np
import pytest

import sdx
from sdx._kv_pool import KVPool, KVPoolExhausted


def _pool(pages=8, page_size=4):
    return KVPool(arrays=2, heads=2, head_dim=3, pages=pages, page_size=page_size)


def test_arrays_are_aligned_and_shaped_for_the_engine():
    pool = _pool()
    for a in pool.arrays:
        assert a.shape == (2, 32, 3) and a.dtype == np.float32 and a.ctypes.data % 64 == 0 and a.flags.c_contiguous
    assert pool.bytes_per_page == 2 * 2 * 4 * 3 * 4


def test_a_growing_sequence_takes_one_page_per_page_size_tokens_in_order():
    pool = _pool()
    seq = pool.new_sequence(5)
    assert seq.pages == [0, 1] and seq.length == 5 and pool.pages_in_use == 2
    slots = [pool.append(seq) for _ in range(4)]
    assert slots == [5, 6, 7, 8] and seq.pages == [0, 1, 2]
    assert list(pool.slots(seq)) == list(range(9))
    other = pool.new_sequence(1)
    pool.free(seq)
    assert pool.pages_in_use == 1
    again = pool.new_sequence(12)  # freed pages come back lowest first: consecutive slots again
    assert again.pages == [0, 1, 2] and other.pages == [3]


def test_write_and_slot_map():
    pool = _pool()
    a, b = pool.new_sequence(3), pool.new_sequence(6)
    kv = [np.arange(2 * 3 * 3, dtype=np.float32).reshape(2, 3, 3) + 100 * k for k in range(2)]
    pool.write(a, 0, kv)
    for arr, x in zip(pool.arrays, kv):
        np.testing.assert_array_equal(arr[:, pool.slots(a)], x)
    m = pool.slot_map([a, b], width=8, rows=4)
    assert m.dtype == np.int64 and m.shape == (4, 8)
    assert list(m[0]) == [0, 1, 2, -1, -1, -1, -1, -1]
    assert list(m[1]) == [4, 5, 6, 7, 8, 9, -1, -1]
    assert (m[2:] == -1).all()


def test_a_shared_page_is_copied_before_a_write():
    pool = _pool()
    seq = pool.new_sequence(6)
    pool.write(seq, 0, [np.full((2, 6, 3), 7.0, np.float32)] * 2)
    twin = pool.fork(seq)
    assert twin.pages == seq.pages and pool.pages_in_use == 2
    slot = pool.append(twin)  # page 1 is shared and partly filled: twin gets a copy of it
    assert twin.pages[0] == seq.pages[0] and twin.pages[1] != seq.pages[1] and pool.pages_in_use == 3
    assert slot == twin.pages[1] * 4 + 2
    for arr in pool.arrays:
        np.testing.assert_array_equal(arr[:, pool.slots(twin, 0, 6)], arr[:, pool.slots(seq)])
    pool.free(seq)
    assert pool.pages_in_use == 2  # page 0 is still twin's
    pool.free(twin)
    assert pool.pages_in_use == 0


def test_exhaustion_names_what_was_asked_and_changes_nothing():
    pool = _pool(pages=3)
    seq = pool.new_sequence(8)
    with pytest.raises(KVPoolExhausted, match=r"a sequence of 9 tokens needs 3 more page\(s\) of 4 tokens but 1 of 3"):
        pool.new_sequence(9)
    assert isinstance(KVPoolExhausted("x"), sdx.ResourceExhausted)
    assert pool.pages_in_use == 2
    pool.append(seq)
    for _ in range(3):
        pool.append(seq)
    with pytest.raises(KVPoolExhausted, match="growing past 12 tokens"):
        pool.append(seq)
    assert seq.length == 12 and pool.peak_pages == 3
