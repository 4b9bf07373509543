"""CuckooFilter refusals: a key that cannot be placed changes nothing and does not make the filter full.

The cases: a key whose two buckets are held by another key's 2*bucket_size
copies ("trapped"), and keys whose eviction walk finds no free slot in a
nearly full table. In both, the refused insert leaves the table byte for
byte as it was (the walk is undone), ``is_full`` stays False while slots
are free, and other keys still go in.
"""

import collections

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from bloomkit import CuckooFilter, FilterFullError, TooManyCopiesError
from support import fmix64

# (capacity, fingerprint_bits, bucket_size): the seven kinds of filter of
# the report, capacity 300-2000, fingerprints 8-32 bits, buckets 2-8.
CONFIGURATIONS = [
    (300, 8, 2),
    (500, 12, 4),
    (700, 16, 8),
    (1000, 10, 3),
    (1200, 20, 5),
    (1500, 32, 6),
    (2000, 24, 7),
]


def stage0_probe(f: CuckooFilter, key):
    """(frozenset of the key's two buckets, fingerprint) in stage 0, from docs/cuckoo.md's formulas."""
    digest = bloomkit.hash128(key, f.seed)
    h1, h2 = digest & (2**64 - 1), digest >> 64
    m, bits = f._stages[0][0], f.fingerprint_bits
    fp = 1 + (fmix64(h2) * (2**bits - 1) >> 64)
    i1 = h1 * m >> 64
    h = fmix64(fp) * m >> 64
    i2 = (h - i1) % m
    if i2 == i1 and m % 2 == 0:
        i2 = (i1 + m // 2) % m
    return frozenset((i1, i2)), fp


def trapping_pair(f: CuckooFilter, start: int = 10**9):
    """Two integer keys with the same two buckets and different fingerprints (a birthday search)."""
    seen = {}
    for key in range(start, start + 200 * f._stages[0][0]):
        buckets, fp = stage0_probe(f, key)
        other = seen.get(buckets)
        if other is not None and other[1] != fp:
            return other[0], key
        seen.setdefault(buckets, (key, fp))
    raise AssertionError("no two keys share a bucket pair")


def others(count: int, avoid, f: CuckooFilter) -> list:
    """``count`` keys none of which has both its buckets in the set ``avoid``."""
    keys, key = [], 0
    while len(keys) < count:
        if not stage0_probe(f, key)[0] <= avoid:
            keys.append(key)
        key += 1
    return keys


@pytest.mark.parametrize("capacity, bits, bucket_size", CONFIGURATIONS)
def test_a_trapped_key_is_refused_and_nothing_else_changes(capacity, bits, bucket_size):
    f = CuckooFilter(capacity, fingerprint_bits=bits, bucket_size=bucket_size, seed=3)
    x, y = trapping_pair(f)
    limit = 2 * bucket_size
    for _ in range(limit):
        f.add(x)
    before = f.to_bytes()
    with pytest.raises(
        FilterFullError, match=r"its two buckets are full of fingerprints .* the filter is not full"
    ) as info:
        f.add(y)
    assert info.value.index is None
    assert f.to_bytes() == before and not f.is_full and len(f) == limit
    assert f.count(x) == limit and y not in f
    # The report: from here on every key was refused. The rest of the
    # capacity (keys whose buckets are not both in the trapped pair) goes in.
    rest = others(capacity - limit, stage0_probe(f, x)[0], f)
    f.update(rest)
    assert len(f) == capacity and f.contains_many(rest).all() and f.count(x) == limit
    # Freeing one of x's copies makes room for y.
    f.remove(x)
    f.add(y)
    assert y in f and f.count(x) == limit - 1


@pytest.mark.parametrize("capacity, bits, bucket_size", CONFIGURATIONS)
def test_batches_stop_at_a_trapped_key_exactly(capacity, bits, bucket_size):
    f = CuckooFilter(capacity, fingerprint_bits=bits, bucket_size=bucket_size, seed=3)
    x, y = trapping_pair(f)
    limit = 2 * bucket_size
    rest = others(50, stage0_probe(f, x)[0], f)
    batch = np.array([x] * limit + rest[:10] + [y] + rest[10:], dtype=np.uint64)
    with pytest.raises(FilterFullError, match=rf"^key at index {limit + 10}: no room for the key") as info:
        f.add_many(batch)
    assert info.value.index == limit + 10
    one_by_one = CuckooFilter(capacity, fingerprint_bits=bits, bucket_size=bucket_size, seed=3)
    for key in batch[: limit + 10]:
        one_by_one.add(key)
    assert f.to_bytes() == one_by_one.to_bytes() and not f.is_full
    # Set-style batches: x is present, so it is not stored again; y is refused.
    with pytest.raises(FilterFullError) as info:
        f.add_new_many(np.array([x, rest[20], y, rest[21]], dtype=np.uint64))
    assert info.value.index == 2 and rest[20] in f and rest[21] not in f and y not in f
    f.update_new(rest[10:])  # the keys after y in the first batch, and the rest
    assert f.contains_many(rest).all() and not f.is_full


@pytest.mark.parametrize("capacity, bits, bucket_size", CONFIGURATIONS)
def test_auto_grow_puts_a_trapped_key_in_a_new_stage(capacity, bits, bucket_size):
    bits = min(bits, 31)  # room for one more stage
    f = CuckooFilter(capacity, fingerprint_bits=bits, bucket_size=bucket_size, seed=3, auto_grow=True)
    x, y = trapping_pair(f)
    for _ in range(2 * bucket_size):
        f.add(x)
    assert f.add(y) is False
    assert f.num_stages == 2 and y in f and len(f) == 2 * bucket_size + 1 and not f.is_full
    f.update(range(capacity))
    assert f.contains_many(range(capacity)).all() and y in f


@pytest.mark.parametrize("capacity, bits, bucket_size", CONFIGURATIONS)
def test_a_failed_walk_is_undone_and_later_keys_still_go_in(capacity, bits, bucket_size):
    f = CuckooFilter(capacity, fingerprint_bits=bits, bucket_size=bucket_size, seed=5)
    keys = np.random.default_rng(capacity).integers(0, 2**63, size=4 * capacity, dtype=np.uint64)
    stored, refused, stored_after_a_refusal = [], 0, 0
    for key in keys:
        before = f.to_bytes()
        try:
            f.add(key)
        except FilterFullError as error:
            assert "no room for the key" in str(error) or str(error).startswith("CuckooFilter is full")
            assert f.to_bytes() == before  # the walk was undone move by move
            refused += 1
            continue
        stored.append(key)
        stored_after_a_refusal += refused > 0
    slots = f.num_buckets * bucket_size
    # Keys keep going in after the first refusal, up to (nearly) every slot.
    assert refused > 0 and stored_after_a_refusal > 0
    assert len(f) == len(stored) and len(stored) / slots > 0.96
    assert f.contains_many(np.array(stored, dtype=np.uint64)).all()
    assert f.is_full == (len(f) == slots)


def test_full_means_no_free_slot():
    f = CuckooFilter(40, fingerprint_bits=32, bucket_size=2, seed=1)
    slots = f.num_buckets * 2
    for key in range(100_000):
        if len(f) == slots:
            break
        try:
            f.add(key)
        except FilterFullError:
            assert not f.is_full
    assert len(f) == slots and f.is_full
    before = f.to_bytes()
    with pytest.raises(FilterFullError, match=rf"^CuckooFilter is full \({slots} fingerprints in {slots} slots\)"):
        f.add("one more")
    assert f.to_bytes() == before


@settings(max_examples=40, deadline=None)
@given(
    config=st.sampled_from(CONFIGURATIONS),
    seed=st.integers(0, 2**32 - 1),
    ops=st.lists(
        st.tuples(st.sampled_from(["add", "add", "add", "dup", "remove"]), st.integers(0, 2**20)), max_size=400
    ),
)
def test_refusals_change_nothing_randomized(config, seed, ops):
    capacity, bits, bucket_size = config
    # A small table for the configuration's shape, so that refusals happen.
    f = CuckooFilter(capacity // 20, fingerprint_bits=bits, bucket_size=bucket_size, seed=seed)
    model = collections.Counter()
    for op, key in ops:
        if op == "dup":  # a popular key: several copies at once
            key %= 4
        if op == "remove":  # only keys that were added (see docs/cuckoo.md, "Removing")
            present = sorted(k for k, n in model.items() if n > 0)
            if not present:
                continue
            key = present[key % len(present)]
        before = f.to_bytes()
        try:
            for _ in range(3 if op == "dup" else 1):
                if op == "remove":
                    f.remove(key)
                    model[key] -= 1
                else:
                    f.add(key)
                    model[key] += 1
                before = f.to_bytes()
        except (FilterFullError, TooManyCopiesError) as error:
            assert f.to_bytes() == before
            if isinstance(error, FilterFullError):
                assert not f.is_full or len(f) == f.num_buckets * bucket_size
    assert len(f) == sum(model.values())
    present = [k for k, n in model.items() if n > 0]
    assert f.contains_many(present + [0]).tolist()[:-1] == [True] * len(present)
    assert all(f.count(k) >= n for k, n in model.items())
