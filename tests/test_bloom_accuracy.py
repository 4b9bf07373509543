"""Large-sample accuracy: no false negatives, false-positive rates as promised, estimates."""

import numpy as np
import pytest

import bloomkit
from bloomkit import BloomFilter
from support import disjoint_random_u64, fpr_upper_bound, random_strings, url_keys

pytestmark = pytest.mark.statistical

PROBES = 200_000


def test_no_false_negatives_one_million_strings_scalar_and_batch():
    keys = random_strings(1_000_000, seed=11)
    scalar = BloomFilter(len(keys), 0.01)
    for key in keys:
        scalar.add(key)
    assert all(key in scalar for key in keys)
    batch = BloomFilter(len(keys), 0.01)
    batch.update(keys)
    assert batch == scalar
    assert batch.contains_many(keys).all()
    assert batch.contains_many(np.array(keys)).all()


def test_no_false_negatives_one_million_integers_scalar_and_batch():
    keys, _ = disjoint_random_u64(1_000_000, 0, seed=12)
    batch = BloomFilter(len(keys), 0.01)
    batch.update(keys)
    assert batch.contains_many(keys).all()
    scalar = BloomFilter(len(keys), 0.01)
    for key in keys.tolist():
        scalar.add(key)
    assert scalar == batch
    assert all(key in scalar for key in keys.tolist())


def measured_fpr(filter_, absent):
    hits = filter_.contains_many(absent)
    return float(np.count_nonzero(hits)) / len(absent)


@pytest.mark.parametrize("error_rate", [0.01, 0.001])
def test_fpr_random_strings(error_rate):
    keys = random_strings(200_000 + PROBES, seed=21)
    members, absent = keys[:200_000], keys[200_000:]
    assert not set(members) & set(absent)
    f = BloomFilter(len(members), error_rate)
    f.update(members)
    assert measured_fpr(f, absent) <= fpr_upper_bound(error_rate, PROBES)


@pytest.mark.parametrize("error_rate", [0.01, 0.001])
def test_fpr_sequential_integers(error_rate):
    n = 500_000
    f = BloomFilter(n, error_rate)
    f.update(np.arange(n, dtype=np.int64))
    absent = np.arange(n, n + PROBES, dtype=np.int64)
    assert measured_fpr(f, absent) <= fpr_upper_bound(error_rate, PROBES)


@pytest.mark.parametrize("error_rate", [0.01, 0.001])
def test_fpr_url_keys_with_long_shared_prefixes(error_rate):
    n = 300_000
    f = BloomFilter(n, error_rate)
    f.update(url_keys(0, n))
    absent = url_keys(n, PROBES)
    assert measured_fpr(f, absent) <= fpr_upper_bound(error_rate, PROBES)


def test_fpr_is_not_too_good_to_be_true():
    # The measured rate should be near the prediction, not just under it:
    # a filter that over-allocates would pass the upper bound while wasting
    # memory. Lower bound: 0.9 p - 5 sigma.
    p = 0.01
    members, absent = disjoint_random_u64(300_000, PROBES, seed=5)
    f = BloomFilter(len(members), p)
    f.update(members)
    sigma = (p * (1 - p) / PROBES) ** 0.5
    assert measured_fpr(f, absent) >= 0.9 * p - 5 * sigma


def test_estimates_at_half_fill_are_within_a_few_percent():
    # Size both filters so that each is about half full.
    a_keys, b_only = disjoint_random_u64(60_000, 40_000, seed=31)
    b_keys = np.concatenate([a_keys[:20_000], b_only])  # |A|=60k, |B|=60k, |A∩B|=20k, |A∪B|=100k
    capacity = 100_000
    a, b = BloomFilter(capacity, 0.01), BloomFilter(capacity, 0.01)
    a.update(a_keys)
    b.update(b_keys)
    assert 0.25 < a.fill_ratio < 0.6
    assert abs(len(a) - 60_000) / 60_000 < 0.02
    assert abs(bloomkit.estimate_union_size(a, b) - 100_000) / 100_000 < 0.02
    assert abs(bloomkit.estimate_intersection_size(a, b) - 20_000) / 20_000 < 0.06
    assert abs(bloomkit.jaccard(a, b) - 0.2) < 0.012
    assert bloomkit.estimate_intersection_size(a, a) == len(a)
    assert bloomkit.jaccard(a, a) == pytest.approx(1.0)


def test_a_filter_beyond_two_to_the_32_bits():
    num_bits = 2**33
    f = BloomFilter.from_params(num_bits, 3)
    assert f.num_bits == num_bits and f.nbytes == 2**30
    keys = random_strings(5000, seed=41)
    f.update(keys)
    assert f.contains_many(keys).all()
    assert all(key in f for key in keys[:100])
    # Positions must spread over the whole range, not wrap at 2**32: count
    # set bits in the upper half of the bit array via its serialized words.
    payload = np.frombuffer(f.to_bytes(), dtype="<u8", offset=64, count=num_bits // 64)
    word_indices = np.flatnonzero(payload)  # ~15k words; never expand all 2**33 bits
    bits_per_word = [bin(int(word)).count("1") for word in payload[word_indices]]
    total = sum(bits_per_word)
    upper = sum(count for index, count in zip(word_indices, bits_per_word) if index >= len(payload) // 2)
    assert total == f._set_bits
    assert total >= 3 * 5000 - 5  # collisions among 15k of 8.6e9 positions are very rare
    assert 0.45 < upper / total < 0.55


@pytest.mark.parametrize("seed", [8, 5])
def test_fpr_when_the_seed_equals_the_key_length(seed):
    # MurmurHash3's halves are linearly related (h2 = 1.5 h1) for keys of at
    # most 8 bytes hashed with seed == length; the index derivation must not
    # let that correlate the probe positions (hash.hpp, IndexSequence).
    p = 0.01
    if seed == 8:
        members, absent = disjoint_random_u64(200_000, PROBES, seed=51)  # int keys: 8 bytes
    else:
        rng = np.random.default_rng(52)
        codes = np.unique(rng.integers(0, 36**5, size=450_000))
        rng.shuffle(codes)
        alphabet = np.array(list("0123456789abcdefghijklmnopqrstuvwxyz"))
        digits = np.stack([(codes // 36**i) % 36 for i in range(5)], axis=1)
        words = ["".join(row) for row in alphabet[digits]]  # 5-byte keys
        members, absent = words[:200_000], words[200_000 : 200_000 + PROBES]
    f = BloomFilter(200_000, p, seed=seed)
    f.update(members)
    assert measured_fpr(f, absent) <= fpr_upper_bound(p, PROBES)
