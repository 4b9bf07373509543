"""CuckooFilter: sizing, membership, the victim slot, duplicates, removal, growth, format."""

import collections
import math
import pickle
import struct

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import bloomkit
from bloomkit import CuckooFilter, CuckooParams, FilterFullError, TooManyCopiesError, calc, cuckoo_params
from support import (
    disjoint_random_u64,
    fmix64,
    fpr_upper_bound,
    make_frame,
    random_strings,
    split_frame,
)

PARAMS_AT = 24  # the frame header is 24 bytes (docs/FORMAT.md)
PAYLOAD_AT = 64  # CuckooFilter params are 32 bytes; v2 pads the payload to offset 64
STAGE_HEADER = 24


def fill_until_full(f, keys):
    """Add keys one at a time until FilterFullError; return how many were added."""
    for i, key in enumerate(keys):
        try:
            f.add(key)
        except FilterFullError:
            return i
    raise AssertionError("the filter never filled")


def full_filter(capacity=500, seed=0, **kwargs):
    """A filter filled up to its first refused key (as full as one batch gets it), and the keys it holds."""
    f, keys, _ = refused_filter(capacity, seed, **kwargs)
    return f, keys


def refused_filter(capacity=500, seed=0, **kwargs):
    """(filter, the keys stored, the first key refused) after one batch ran into a refusal."""
    f = CuckooFilter(capacity, seed=seed, **kwargs)
    keys = np.arange(10 * capacity, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    try:
        f.update(keys)
    except FilterFullError as error:
        return f, keys[: error.index], keys[error.index]
    raise AssertionError("the filter never filled")


def with_victim(f, key):
    """f as a bloomkit that kept a failed walk's fingerprint in the victim slot would have saved it.

    Earlier versions stored the refused key's fingerprint there and called
    the filter full; such files still load (docs/cuckoo.md). One stage only.
    """
    digest = bloomkit.hash128(key, f.seed)
    fp = 1 + (fmix64(digest >> 64) * (2**f.fingerprint_bits - 1) >> 64)
    bucket = (digest & (2**64 - 1)) * f.num_buckets >> 64
    data = bytearray(f.to_bytes())
    count = struct.unpack_from("<Q", data, PAYLOAD_AT)[0]
    struct.pack_into("<QQIB", data, PAYLOAD_AT, count + 1, bucket, fp, 1)
    return CuckooFilter.from_bytes(reframe(bytes(data)))


# --- sizing ---------------------------------------------------------------


def test_default_parameters_are_documented_ones():
    f = CuckooFilter(1000)
    assert (f.capacity, f.error_rate, f.bucket_size, f.seed, f.auto_grow) == (1000, 0.01, 4, 0, False)
    assert f.fingerprint_bits == 10 == math.ceil(math.log2(2 * 4 / 0.01))
    assert f.num_buckets == calc.cuckoo_num_buckets(1000, 4) == cuckoo_params(1000, 0.01).num_buckets
    assert f.nbytes == math.ceil(f.num_buckets * 4 * 10 / 8) == cuckoo_params(1000, 0.01).nbytes
    assert (len(f), f.load_factor, f.num_stages, f.is_full) == (0, 0.0, 1, False)


@pytest.mark.parametrize("capacity", [1, 7, 100, 12345, 10**6, 10**12])
@pytest.mark.parametrize("error_rate", [0.2, 0.03, 0.01, 1e-4, 1e-7])
@pytest.mark.parametrize("bucket_size", [2, 4, 8])
def test_cuckoo_params_follow_the_paper(capacity, error_rate, bucket_size):
    p = cuckoo_params(capacity, error_rate, bucket_size)
    assert isinstance(p, CuckooParams)
    paper_bits = max(4, math.ceil(math.log2(2 * bucket_size / error_rate)))
    assert p.fingerprint_bits in (paper_bits, paper_bits + 1)
    if p.fingerprint_bits == paper_bits + 1:  # only when the exact bound needed it
        assert calc.cuckoo_false_positive_rate(paper_bits, bucket_size) > error_rate
    assert p.error_rate == calc.cuckoo_false_positive_rate(p.fingerprint_bits, bucket_size) <= error_rate
    assert p.error_rate <= 2 * bucket_size / 2**p.fingerprint_bits
    load, spread = calc.CUCKOO_SIZING_LOAD[bucket_size]
    m = p.num_buckets
    assert m % 2 == 0
    assert m * bucket_size * (load - spread / math.sqrt(m)) >= capacity
    assert m == 2 or (m - 2) * bucket_size * (load - spread / math.sqrt(m - 2)) < capacity
    assert p.nbytes == math.ceil(m * bucket_size * p.fingerprint_bits / 8)


def test_large_capacities_plan_a_93_percent_load():
    p = cuckoo_params(10**9, 0.01)
    assert 0.929 < 10**9 / (p.num_buckets * 4) < 0.93
    assert p == (268834836, 10, 1344174180, pytest.approx(0.0077934, rel=1e-4))


def test_auto_grow_sizing_covers_every_stage():
    plain = cuckoo_params(1000, 0.01)
    grow = cuckoo_params(1000, 0.01, auto_grow=True)
    assert grow.fingerprint_bits == plain.fingerprint_bits + 1 == 11
    chain = sum(calc.stage_false_positive_rate(11, stage, 4) for stage in range(22))
    assert grow.error_rate == pytest.approx(chain) and chain <= 0.01 < chain * 1.3


def test_fingerprint_bits_are_packed():
    sizes = {bits: CuckooFilter(100_000, fingerprint_bits=bits).nbytes for bits in (8, 12, 16)}
    m = calc.cuckoo_num_buckets(100_000)
    assert sizes == {bits: math.ceil(m * 4 * bits / 8) for bits in (8, 12, 16)}
    assert sizes[12] * 2 == sizes[8] * 3 and sizes[16] * 3 == sizes[12] * 4


def test_explicit_fingerprint_bits_and_error_rate():
    f = CuckooFilter(1000, fingerprint_bits=16)
    assert f.error_rate == calc.cuckoo_false_positive_rate(16, 4) == pytest.approx(8 / 65535, rel=1e-3)
    g = CuckooFilter(1000, 0.01, fingerprint_bits=12)
    assert (g.error_rate, g.fingerprint_bits) == (0.01, 12)
    with pytest.raises(
        ValueError, match=r"fingerprint_bits=8 bounds the false-positive rate by 0\.0309.*use at least 10 bits"
    ):
        CuckooFilter(1000, 0.01, fingerprint_bits=8)
    with pytest.raises(TypeError, match="needs error_rate or fingerprint_bits"):
        cuckoo_params(1000, None)


@pytest.mark.parametrize(
    "kwargs, error, message",
    [
        ({"capacity": 0}, ValueError, "capacity must be a positive integer, got 0"),
        ({"capacity": 1.5}, ValueError, "capacity must be a positive integer, got 1.5"),
        ({"capacity": "10"}, TypeError, "capacity must be a positive integer, got str"),
        ({"error_rate": 0.0}, ValueError, r"error_rate must be in \(0, 1\) exclusive, got 0.0"),
        ({"error_rate": 1.0}, ValueError, r"error_rate must be in \(0, 1\) exclusive"),
        ({"error_rate": float("nan")}, ValueError, r"error_rate must be in \(0, 1\) exclusive"),
        ({"error_rate": 1e-12}, ValueError, r"needs fingerprints wider than 32 bits with bucket_size=4"),
        ({"bucket_size": 1}, ValueError, r"bucket_size must be in \[2, 8\], got 1"),
        ({"bucket_size": 9}, ValueError, r"bucket_size must be in \[2, 8\], got 9"),
        ({"bucket_size": 4.0}, TypeError, r"bucket_size must be an int in \[2, 8\], got float"),
        ({"fingerprint_bits": 3}, ValueError, r"fingerprint_bits must be in \[4, 32\], got 3"),
        ({"fingerprint_bits": 33}, ValueError, r"fingerprint_bits must be in \[4, 32\], got 33"),
        ({"seed": -1}, ValueError, r"seed must be in \[0, 2\*\*32\), got -1"),
        ({"seed": 2**32}, ValueError, r"seed must be in \[0, 2\*\*32\)"),
        ({"auto_grow": 1}, TypeError, "auto_grow must be True or False, got int"),
    ],
)
def test_bad_parameters_are_rejected(kwargs, error, message):
    arguments = {"capacity": 1000, **kwargs}
    with pytest.raises(error, match=message):
        CuckooFilter(**arguments)


def test_capacity_keys_always_fit():
    # Sizing must hold `capacity` keys on every seed, small tables included.
    for bucket_size in (2, 4, 8):
        for capacity in (1, 2, 3, 5, 8, 13, 21, 34, 55, 89, 144, 377, 1000):
            for seed in range(15):
                f = CuckooFilter(capacity, bucket_size=bucket_size, seed=seed)
                f.update(np.arange(capacity, dtype=np.uint64) + np.uint64(seed << 32))
                assert len(f) == capacity


# --- membership -----------------------------------------------------------


def test_add_reports_a_matching_fingerprint_and_stores_a_copy():
    f = CuckooFilter(100)
    assert f.add("a") is False
    assert f.add("a") is True
    assert (f.count("a"), len(f), f.count("b")) == (2, 2, 0)
    assert f.add_many(["b", "b", "a"]).tolist() == [False, True, True]
    assert (f.count("a"), f.count("b"), len(f)) == (3, 2, 5)


@pytest.mark.parametrize("bucket_size", [2, 4, 8])
@pytest.mark.parametrize("bits", [4, 7, 8, 12, 13, 16, 20, 32])
def test_every_width_stores_counts_and_removes_exactly(bits, bucket_size):
    # Covers both lookup paths of the packed table: whole-bucket word
    # compares (b*f fits 64 bits) and slot-by-slot reads.
    f = CuckooFilter(2000, fingerprint_bits=bits, bucket_size=bucket_size, seed=bits)
    keys = np.arange(2000, dtype=np.uint64) * np.uint64(7919)
    f.update(keys)
    assert f.contains_many(keys).all()
    f.add(keys[0])
    f.add(keys[0])
    assert f.count(keys[0]) >= 3 and len(f) == 2002
    f.remove_many(keys)
    f.remove(keys[0])
    f.remove(keys[0])
    # Every fingerprint is gone: the filter equals a fresh one, byte for byte.
    assert len(f) == 0 and not f.contains_many(keys).any()
    assert f == CuckooFilter(2000, fingerprint_bits=bits, bucket_size=bucket_size, seed=bits)


# --- full filters and the victim slot -------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_fill_until_full_keeps_every_key(seed):
    f = CuckooFilter(3000, fingerprint_bits=12, seed=seed)
    keys = random_strings(20_000, seed=seed)
    added = fill_until_full(f, keys)
    # The refused key's walk was undone: nothing in a victim slot, not full.
    assert added > 3000 and not f.is_full and len(f) == added
    assert f.load_factor == added / (f.num_buckets * 4)
    assert f.contains_many(keys[:added]).all()
    assert [f._stages[0][3]] == [False]
    before = f.to_bytes()
    slots = f.num_buckets * 4
    with pytest.raises(
        FilterFullError,
        match=rf"^no room for the key in the CuckooFilter: its eviction walk found no free slot in 500 moves "
        rf"\({added} fingerprints in {slots} slots\); the filter is unchanged; remove keys",
    ) as info:
        f.add(keys[added])
    assert isinstance(info.value, RuntimeError) and info.value.index is None
    assert f.to_bytes() == before


def test_add_many_partial_effect_is_exact():
    keys = np.arange(50_000, dtype=np.uint64)
    f = CuckooFilter(4000, seed=5)
    with pytest.raises(
        FilterFullError,
        match=r"^key at index (\d+): no room for the key .*; keys before index \1 were inserted, this key and later ones were not$",
    ) as info:
        f.add_many(keys)
    index = info.value.index
    assert index > 4000 and len(f) == index and not f.is_full
    assert f.contains_many(keys[:index]).all()
    # Exactly the state of adding keys[:index] one at a time.
    g = CuckooFilter(4000, seed=5)
    for key in keys[:index]:
        g.add(key)
    assert g == f and g.to_bytes() == f.to_bytes()
    h = CuckooFilter(4000, seed=5)
    with pytest.raises(FilterFullError) as info:
        h.update(keys)
    assert info.value.index == index and h == f


def test_add_many_error_index_counts_across_arrow_chunks():
    pa = pytest.importorskip("pyarrow")
    f = CuckooFilter(300, seed=3)
    words = [f"k{i}" for i in range(5000)]
    with pytest.raises(FilterFullError) as info:
        f.add_many(pa.chunked_array([words[:100], words[100:]]))
    assert info.value.index > 300 and len(f) == info.value.index


@pytest.mark.statistical
@pytest.mark.parametrize("bucket_size, minimum", [(2, 0.84), (4, 0.95), (8, 0.98)])
def test_load_factor_reached_before_the_first_failure(bucket_size, minimum):
    seeds = range(4) if bucket_size == 4 else range(1)
    for seed in seeds:
        f = CuckooFilter(240_000, fingerprint_bits=16, bucket_size=bucket_size, seed=seed)
        keys = np.random.default_rng(seed).integers(0, 2**64 - 1, size=400_000, dtype=np.uint64)
        with pytest.raises(FilterFullError) as info:
            f.update(keys)
        # The key whose walk failed was not stored (its walk was undone).
        placed = info.value.index
        assert len(f) == placed
        assert placed / (f.num_buckets * bucket_size) >= minimum
        assert f.contains_many(keys[: info.value.index]).all()


@pytest.mark.parametrize("seed", range(5))
def test_a_removal_makes_room_and_moves_the_victim_back(seed):
    # A file saved by a version that kept failed walks in the victim slot.
    f, keys, refused = refused_filter(capacity=3000, seed=seed)
    f = with_victim(f, refused)
    assert f.is_full and refused in f and len(f) == len(keys) + 1
    with pytest.raises(FilterFullError, match=r"^CuckooFilter is full"):
        f.add("new key")
    f.remove(keys[10])
    # A slot is free: the victim's walk finds one unless the victim's whole
    # reachable region of the table is saturated (then it stays full).
    assert not f.is_full and len(f) == len(keys)
    assert f._stages[0][3] is False
    assert f.contains_many(np.delete(keys, 10)).all() and refused in f


def test_a_victim_stays_until_its_region_frees():
    # Removals far from the victim's buckets leave it where it is (its walks
    # fail and are undone); the filter stays full and loses nothing.
    f, keys, refused = refused_filter(capacity=100, seed=21)
    f = with_victim(f, refused)
    removed = 0
    for key in keys:
        f.remove(key)
        removed += 1
        assert refused in f and len(f) == len(keys) + 1 - removed
        if not f.is_full:
            break
    assert not f.is_full and f._stages[0][3] is False
    assert f.contains_many(keys[removed:]).all()


def test_removing_everything_from_a_full_filter():
    f, keys = full_filter(seed=7)
    order = np.random.default_rng(0).permutation(len(keys))
    for step, i in enumerate(order):
        f.remove(keys[i])
        if step % 97 == 0:
            assert f.contains_many(keys[order[step + 1 :]]).all()
    assert len(f) == 0 and f == CuckooFilter(500, seed=7)


def test_remove_many_on_a_full_filter_frees_it():
    f, keys, refused = refused_filter(seed=11)
    f = with_victim(f, refused)
    assert f.is_full
    f.remove_many(keys[:50])
    assert not f.is_full and len(f) == len(keys) + 1 - 50
    assert f.contains_many(keys[50:]).all() and refused in f


# --- duplicates -----------------------------------------------------------


@pytest.mark.parametrize("bucket_size", [2, 4, 8])
def test_a_key_can_be_stored_2b_times(bucket_size):
    f = CuckooFilter(1000, bucket_size=bucket_size)
    f.update(range(100))
    limit = 2 * bucket_size
    for _ in range(limit):
        f.add("dup")
    assert f.count("dup") == limit
    before = f.to_bytes()
    with pytest.raises(
        TooManyCopiesError, match=rf"a key can be stored at most 2\*bucket_size = {limit} times.*the filter is not full"
    ) as info:
        f.add("dup")
    assert not isinstance(info.value, FilterFullError) and info.value.index is None
    assert f.to_bytes() == before and not f.is_full
    f.add("other")  # the filter still takes other keys
    for _ in range(limit):
        f.remove("dup")
    with pytest.raises(KeyError):
        f.remove("dup")


def test_many_copies_of_one_key_do_not_make_the_filter_full():
    # The report: 16 copies of one key in a 500-key filter with 8-slot
    # buckets made it "full" at 3 % load.
    f = CuckooFilter(500, fingerprint_bits=32, bucket_size=8)
    for _ in range(16):
        f.add("same")
    with pytest.raises(TooManyCopiesError, match="the filter is not full"):
        f.add("same")
    assert not f.is_full and f.load_factor < 0.05
    f.update(range(480))  # the rest of the capacity still fits
    assert len(f) == 496 and all(k in f for k in range(480))


def test_add_many_stops_at_the_duplicate_limit():
    f = CuckooFilter(100)
    with pytest.raises(TooManyCopiesError, match=r"^key at index 8: the key's two buckets") as info:
        f.add_many(["x"] * 10)
    assert info.value.index == 8 and f.count("x") == 8 and len(f) == 8


# --- removal --------------------------------------------------------------


def test_remove_many_failure_restores_a_full_filter_exactly():
    f, keys, refused = refused_filter(seed=4)
    f = with_victim(f, refused)
    before = f.to_bytes()
    absent = next(k for k in range(2**40, 2**41) if f.count(k) == 0)
    with pytest.raises(KeyError, match=f"key at index {len(keys)} is not"):
        f.remove_many(np.concatenate([keys, np.array([absent], dtype=np.uint64)]))
    assert f.to_bytes() == before and f.is_full


operations = st.lists(
    st.tuples(st.sampled_from(["add", "remove", "discard", "add_many", "remove_many"]), st.integers(0, 11)),
    max_size=120,
)


@settings(max_examples=150, deadline=None)
@given(ops=operations, auto_grow=st.booleans())
def test_behaves_like_a_multiset(ops, auto_grow):
    # 28-bit and wider fingerprints: among 24 keys a false match is
    # practically impossible, so the filter must agree with a Counter
    # exactly; the tiny table also fills and grows often.
    f = CuckooFilter(8, fingerprint_bits=28, auto_grow=auto_grow, seed=1)
    model = collections.Counter()
    for op, key in ops:
        before = f.to_bytes()
        try:
            if op == "add":
                assert f.add(key) == (model[key] > 0)
                model[key] += 1
            elif op == "add_many":
                pair = [key, key + 100]
                expected = [model[k] > 0 for k in pair]
                try:
                    assert f.add_many(pair).tolist() == expected
                except (FilterFullError, TooManyCopiesError) as error:
                    for k in pair[: error.index]:  # the exact partial effect
                        model[k] += 1
                    raise
                for k in pair:
                    model[k] += 1
            elif op == "remove":
                f.remove(key)
                model[key] -= 1
            elif op == "discard":
                assert f.discard(key) == (model[key] > 0)
                model[key] -= model[key] > 0
            else:
                f.remove_many([key, key])
                model[key] -= 2
        except KeyError:
            assert model[key] < (2 if op == "remove_many" else 1) and f.to_bytes() == before
        except (FilterFullError, TooManyCopiesError) as error:
            assert not auto_grow or "cannot grow" in str(error) or isinstance(error, TooManyCopiesError)
            assert f.to_bytes() == before or (op == "add_many" and error.index == 1)
        assert model[key] >= 0
        assert all(f.count(k) == model[k] for k in list(model) + [key, key + 100])
        assert len(f) == sum(model.values())


# --- auto_grow ------------------------------------------------------------


def test_auto_grow_grows_instead_of_failing():
    f = CuckooFilter(1000, 0.01, auto_grow=True, seed=2)
    keys = np.arange(40_000, dtype=np.uint64)
    f.update(keys)
    assert f.contains_many(keys).all() and len(f) == 40_000
    stages = f._stages
    assert len(stages) == f.num_stages == 6
    assert [bits for _, bits, _, _ in stages] == list(range(11, 17))
    assert [buckets for buckets, _, _, _ in stages] == [f._stages[0][0] << s for s in range(6)]
    # Each older stage took keys until one was refused, nearly full; no
    # fingerprint sits in a victim slot.
    assert all(stored / (buckets * 4) > 0.9 for buckets, _, stored, _ in stages[:-1])
    assert not any(victim for _, _, _, victim in stages)
    assert f.num_buckets == sum(buckets for buckets, _, _, _ in stages)
    assert f.nbytes == sum(math.ceil(b * 4 * bits / 8) for b, bits, _, _ in stages)
    assert f.error_rate == 0.01 and f.fingerprint_bits == 11
    f.remove_many(keys[:20_000])
    assert len(f) == 20_000 and f.contains_many(keys[20_000:]).all()
    g = f.copy()
    f.clear()
    assert f.num_stages == 1 and f == CuckooFilter(1000, 0.01, auto_grow=True, seed=2)
    assert len(g) == 20_000


def test_auto_grow_stops_at_32_bit_fingerprints():
    f = CuckooFilter(50, fingerprint_bits=31, auto_grow=True)
    keys = np.arange(10_000, dtype=np.uint64)
    with pytest.raises(
        FilterFullError, match=r"CuckooFilter cannot grow past 2 stages \(fingerprints are at most 32 bits"
    ) as info:
        f.update(keys)
    assert f.num_stages == 2 and f.contains_many(keys[: info.value.index]).all()


@pytest.mark.parametrize("seed", range(3))
def test_removal_from_a_grown_filter_has_no_false_negatives(seed):
    # 4-bit fingerprints make cross-stage fingerprint matches common; stages
    # nest and removal takes the newest match, so no other key is lost.
    f = CuckooFilter(100, fingerprint_bits=4, auto_grow=True, seed=seed)
    keys = np.random.default_rng(seed).integers(0, 2**63, size=20_000, dtype=np.uint64)
    f.update(keys)
    assert f.num_stages == 8
    order = np.random.default_rng(seed + 100).permutation(len(keys))
    gone, kept = keys[order[:10_000]], keys[order[10_000:]]
    for key in gone[:5000]:
        f.remove(key)
    f.remove_many(gone[5000:])
    assert f.contains_many(kept).all() and len(f) == 10_000
    f.remove_many(kept)
    assert len(f) == 0 and not f.contains_many(keys).any()


@pytest.mark.statistical
def test_auto_grow_keeps_the_compound_false_positive_rate():
    inserted, absent = disjoint_random_u64(200_000, 200_000, seed=21)
    f = CuckooFilter(2000, 0.01, auto_grow=True)
    f.update(inserted)
    assert f.num_stages == 7
    measured = f.contains_many(absent).mean()
    assert measured <= fpr_upper_bound(0.01, len(absent))
    assert measured == pytest.approx(f.estimated_fpr(), abs=5 * math.sqrt(f.estimated_fpr() / len(absent)))


# --- false positives ------------------------------------------------------


@pytest.mark.statistical
@pytest.mark.parametrize("bits", [8, 12, 16])
def test_measured_false_positive_rate_is_within_the_paper_bound(bits):
    inserted, absent = disjoint_random_u64(100_000, 200_000, seed=bits)
    f = CuckooFilter(100_000, fingerprint_bits=bits, seed=bits)
    f.update(inserted)
    measured = f.contains_many(absent).mean()
    paper_bound = 2 * 4 / 2**bits
    assert measured <= fpr_upper_bound(paper_bound, len(absent))
    # And the rate is what the fill predicts, not just below a bound.
    expected = f.estimated_fpr()
    assert expected == pytest.approx(calc.cuckoo_false_positive_rate(bits, 4, f.load_factor))
    assert abs(measured - expected) <= 5 * math.sqrt(expected / len(absent)) + 1e-6


@pytest.mark.statistical
def test_seed_equal_to_key_length_is_not_degenerate():
    # MurmurHash3 of an 8-byte key with seed 8 has h2 = 1.5 * h1 (mod 2**64);
    # fingerprints must still be independent of buckets.
    inserted, absent = disjoint_random_u64(50_000, 200_000, seed=8)
    f = CuckooFilter(50_000, fingerprint_bits=8, seed=8)
    f.update(np.arange(50_000, dtype=np.uint64))  # no pile-up of equal fingerprints
    g = CuckooFilter(50_000, fingerprint_bits=8, seed=8)
    g.update(inserted)
    expected = g.estimated_fpr()
    assert abs(g.contains_many(absent).mean() - expected) <= 5 * math.sqrt(expected / len(absent))


@pytest.mark.statistical
def test_default_filter_at_capacity_meets_its_error_rate():
    inserted, absent = disjoint_random_u64(100_000, 200_000, seed=3)
    f = CuckooFilter(100_000)
    f.update(inserted)
    assert f.contains_many(absent).mean() <= fpr_upper_bound(0.01, len(absent))


# --- display --------------------------------------------------------------


def test_repr_and_html_show_the_cuckoo_fields():
    # The shape (one line, an HTML table of the same fields) is the contract's.
    f = CuckooFilter(1000, 0.001)
    f.update(range(500))
    text = repr(f)
    assert text.startswith("<CuckooFilter capacity=1,000 error_rate=0.001 fingerprint_bits=13 bucket_size=4")
    assert "count=500" in text and "full=False" in text and "estimated_fpr=" in text
    assert "load_factor" in f._repr_html_()
    assert "num_stages" in repr(CuckooFilter(10, auto_grow=True))


# --- binary format --------------------------------------------------------


def reframe(data: bytes) -> bytes:
    """The frame rebuilt with a valid checksum, so that edits reach the field validation."""
    return make_frame(*split_frame(data))


def shorten_payload(data: bytes) -> bytes:
    """The frame with its last payload byte dropped, lengths and checksum kept consistent."""
    type_tag, params, payload = split_frame(data)
    return make_frame(type_tag, params, payload[:-1])


def patch(data: bytes, offset: int, fmt: str, value) -> bytes:
    edited = bytearray(data)
    struct.pack_into(fmt, edited, offset, value)
    return reframe(bytes(edited))


def test_layout_matches_the_documentation():
    f = CuckooFilter(777, 0.002, bucket_size=4, seed=99)
    f.update(range(300))
    data = f.to_bytes()
    magic, version, tag, params_length, payload_length = struct.unpack_from("<8sHHIQ", data, 0)
    assert (magic, version, tag, params_length) == (b"\x89BKF\r\n\x1a\n", 2, 4, 32)
    fields = struct.unpack_from("<QdQIBBBB", data, PARAMS_AT)
    assert fields == (777, 0.002, f.num_buckets, 99, 4, f.fingerprint_bits, 0, 1)
    count, victim_bucket, victim_fp, victim_used, reserved = struct.unpack_from("<QQIB3s", data, PAYLOAD_AT)
    assert (count, victim_bucket, victim_fp, victim_used, reserved) == (300, 0, 0, 0, b"\0\0\0")
    assert payload_length == STAGE_HEADER + f.nbytes and len(data) == PAYLOAD_AT + payload_length + 8
    # Slot s is bits [s*f, s*f+f) of the little-endian table.
    table = int.from_bytes(data[PAYLOAD_AT + STAGE_HEADER : -8], "little")
    bits = f.fingerprint_bits
    slots = [(table >> (s * bits)) & ((1 << bits) - 1) for s in range(f.num_buckets * 4)]
    assert sum(1 for s in slots if s) == 300


def _documented_lookup(data: bytes, key) -> bool:
    """Membership computed only from docs/FORMAT.md's description of type 4."""
    _, _, num_buckets, seed, b, f, _, stages = struct.unpack_from("<QdQIBBBB", data, PARAMS_AT)
    digest = bloomkit.hash128(key, seed)
    h1, h2 = digest & (2**64 - 1), digest >> 64
    g = fmix64(h2)
    offset = PAYLOAD_AT
    for s in range(stages):
        m_s, f_s = num_buckets << s, f + s
        table_bytes = (m_s * b * f_s + 7) // 8
        _, victim_bucket, victim_fp, victim_used = struct.unpack_from("<QQIB", data, offset)
        table = int.from_bytes(data[offset + STAGE_HEADER : offset + STAGE_HEADER + table_bytes], "little")
        offset += STAGE_HEADER + table_bytes
        fp = ((1 + (g * (2**f - 1) >> 64)) << s) + (((g % 2**32) << s) >> 32)

        def alternate(i):
            u, v = i >> s, i % 2**s
            h = fmix64(fp >> s) * num_buckets >> 64
            other = (h - u) % num_buckets
            if other == u and num_buckets % 2 == 0:
                other = (u + num_buckets // 2) % num_buckets
            return (other << s) + (v ^ (fp % 2**s))

        i1 = h1 * m_s >> 64
        i2 = alternate(i1)
        assert alternate(i2) == i1
        for bucket in (i1, i2):
            for k in range(b):
                if (table >> ((bucket * b + k) * f_s)) & (2**f_s - 1) == fp:
                    return True
        if victim_used and victim_fp == fp and victim_bucket in (i1, i2):
            return True
    return False


@pytest.mark.parametrize("bucket_size, bits", [(4, 12), (3, 13), (8, 16)])
def test_documented_key_to_slot_derivation_matches_the_filter(bucket_size, bits):
    f = CuckooFilter(60, fingerprint_bits=bits, bucket_size=bucket_size, auto_grow=True, seed=77)
    f.update(range(600))
    assert f.num_stages >= 3
    data = f.to_bytes()
    probes = list(range(600)) + list(range(10**6, 10**6 + 3000))
    assert [_documented_lookup(data, k) for k in probes] == f.contains_many(probes).tolist()


@pytest.mark.parametrize("kind", ["full", "grown"])
def test_full_and_grown_filters_round_trip_byte_exact(kind, tmp_path):
    # The contract suite round-trips empty and partly filled filters; these
    # are the shapes only a cuckoo filter has (a victim slot, stages).
    if kind == "full":
        f, _, refused = refused_filter(seed=1)
        f = with_victim(f, refused)
        assert f._stages[0][3]
    else:
        f = CuckooFilter(1000, 0.001, seed=5, auto_grow=True)
        f.update(range(5000))
        assert f.num_stages > 1
    data = f.to_bytes()
    for g in (
        CuckooFilter.from_bytes(data),
        CuckooFilter.from_bytes(bytearray(data)),
        bloomkit.load(data),
        pickle.loads(pickle.dumps(f)),
    ):
        assert type(g) is CuckooFilter and g == f and g.to_bytes() == data
    path = tmp_path / "f.bkf"
    f.save(path)
    assert CuckooFilter.load(path) == f and bloomkit.load(str(path)) == f


def sample_frame():
    f = CuckooFilter(200, fingerprint_bits=12, seed=3)
    f.update(range(100))
    return f.to_bytes()


def full_frame():
    f, _, refused = refused_filter(capacity=100, fingerprint_bits=12)
    return with_victim(f, refused).to_bytes()


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: patch(d, PARAMS_AT, "<Q", 0), r"capacity must be in \[1, 2\*\*63\), got 0"),
        (lambda d: patch(d, PARAMS_AT + 8, "<d", 1.0), r"error_rate must be in \(0, 1\)"),
        (lambda d: patch(d, PARAMS_AT + 8, "<d", float("nan")), r"error_rate must be in \(0, 1\)"),
        (lambda d: patch(d, PARAMS_AT + 16, "<Q", 0), r"num_buckets must be in \[1, 2\*\*48\], got 0"),
        (lambda d: patch(d, PARAMS_AT + 16, "<Q", 2**48 + 1), r"num_buckets must be in \[1, 2\*\*48\]"),
        (lambda d: patch(d, PARAMS_AT + 16, "<Q", 2**40), r"payload is \d+ bytes but the parameters need \d+"),
        (lambda d: patch(d, PARAMS_AT + 28, "<B", 1), r"bucket_size must be in \[2, 8\], got 1"),
        (lambda d: patch(d, PARAMS_AT + 28, "<B", 9), r"bucket_size must be in \[2, 8\], got 9"),
        (lambda d: patch(d, PARAMS_AT + 28, "<B", 2), r"payload is \d+ bytes but the parameters need"),
        (lambda d: patch(d, PARAMS_AT + 29, "<B", 3), r"fingerprint_bits must be in \[4, 32\], got 3"),
        (lambda d: patch(d, PARAMS_AT + 29, "<B", 33), r"fingerprint_bits must be in \[4, 32\], got 33"),
        (lambda d: patch(d, PARAMS_AT + 30, "<B", 2), "auto_grow must be 0 or 1, got 2"),
        (lambda d: patch(d, PARAMS_AT + 31, "<B", 0), r"num_stages 0 is outside \[1, 1\]"),
        (lambda d: patch(d, PARAMS_AT + 31, "<B", 2), r"num_stages 2 is outside \[1, 1\]"),
        (lambda d: patch(d, PAYLOAD_AT, "<Q", 101), "stage count 101 does not match the 100 fingerprints stored"),
        (lambda d: patch(d, PAYLOAD_AT + 8, "<Q", 5), "an unused victim slot must hold fingerprint 0 and bucket 0"),
        (lambda d: patch(d, PAYLOAD_AT + 16, "<I", 5), "an unused victim slot must hold fingerprint 0 and bucket 0"),
        (lambda d: patch(d, PAYLOAD_AT + 20, "<B", 2), "victim flag must be 0 or 1, got 2"),
        (lambda d: patch(d, PAYLOAD_AT + 21, "<B", 1), "stage reserved bytes must be zero"),
        (lambda d: shorten_payload(d), r"payload is \d+ bytes but the parameters need"),
        (lambda d: d[:-1] + bytes([d[-1] ^ 1]), "checksum mismatch"),
    ],
)
def test_validated_fields_are_rejected_even_with_a_valid_checksum(edit, message):
    data = sample_frame()
    with pytest.raises(ValueError, match=message):
        CuckooFilter.from_bytes(edit(data))


@pytest.mark.parametrize(
    "edit, message",
    [
        (lambda d: patch(d, PAYLOAD_AT + 20, "<B", 0), "an unused victim slot must hold"),
        (lambda d: patch(d, PAYLOAD_AT + 16, "<I", 0), r"victim fingerprint 0 is outside \[1, 2\*\*12\)"),
        (lambda d: patch(d, PAYLOAD_AT + 16, "<I", 4096), r"victim fingerprint 4096 is outside \[1, 2\*\*12\)"),
        (
            lambda d: patch(d, PAYLOAD_AT + 8, "<Q", 2**40),
            r"victim bucket 1099511627776 is outside the \d+-bucket table",
        ),
        (lambda d: patch(d, PAYLOAD_AT, "<Q", 0), r"stage count 0 does not match the \d+ fingerprints stored"),
    ],
)
def test_victim_fields_are_validated(edit, message):
    data = full_frame()
    assert CuckooFilter.from_bytes(data).is_full
    with pytest.raises(ValueError, match=message):
        CuckooFilter.from_bytes(edit(data))


def test_bits_past_the_last_slot_are_rejected():
    # b=3, f=13 on an even bucket count of 2 mod 4 leaves padding bits.
    f = CuckooFilter(10, fingerprint_bits=13, bucket_size=3)
    used_bits = f.num_buckets * 3 * 13
    assert used_bits % 8 != 0
    f.update(range(5))
    data = f.to_bytes()
    last = len(data) - 9
    edited = data[:last] + bytes([data[last] | 0x80]) + data[last + 1 :]
    with pytest.raises(ValueError, match="bits set past the last slot of the fingerprint table"):
        CuckooFilter.from_bytes(reframe(edited))


def test_payload_length_mismatch_is_rejected_before_allocating():
    # Params claiming 2**47 buckets with the payload of a tiny filter: the
    # length check fails first; nothing near that size is allocated.
    data = patch(sample_frame(), PARAMS_AT + 16, "<Q", 2**47)
    with pytest.raises(ValueError, match=r"payload is \d+ bytes but the parameters need \d{15,}"):
        CuckooFilter.from_bytes(data)


def test_grown_stage_count_is_validated():
    f = CuckooFilter(10, fingerprint_bits=30, auto_grow=True)
    assert f.to_bytes()[PARAMS_AT + 31] == 1
    with pytest.raises(ValueError, match=r"num_stages 4 is outside \[1, 3\]"):
        CuckooFilter.from_bytes(patch(f.to_bytes(), PARAMS_AT + 31, "<B", 4))
