"""Over capacity is never silent: CapacityWarning, and repr / _repr_html_ say so."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import bloomkit
from bloomkit import _capacity, _display


def capacity_warnings(record):
    return [w for w in record if issubclass(w.category, bloomkit.CapacityWarning)]


def test_capacity_warning_is_a_user_warning():
    assert issubclass(bloomkit.CapacityWarning, UserWarning)


def test_batch_over_capacity_warns_once_per_filter():
    f = bloomkit.BloomFilter(10_000, 0.01)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        f.update(np.arange(10_000, dtype=np.int64))  # at capacity: fine
        assert capacity_warnings(record) == []
        f.add_many(np.arange(10_000, 30_000, dtype=np.int64))
        f.update(np.arange(30_000, 40_000, dtype=np.int64))
    found = capacity_warnings(record)
    assert len(found) == 1
    message = str(found[0].message)
    assert "over capacity" in message and "10,000 keys" in message and "error rate 0.01" in message
    assert found[0].filename == __file__  # points at the user's call
    # A second filter warns again: once per filter, not once per process.
    g = bloomkit.BloomFilter(100, 0.01)
    with pytest.warns(bloomkit.CapacityWarning):
        g.update(range(1000))


def test_warning_threshold_is_twice_the_target():
    f = bloomkit.BloomFilter(10_000, 0.01)
    f.update(np.arange(10_000, dtype=np.uint64))
    step = 100
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        n = 10_000
        while not capacity_warnings(record):
            f.update(np.arange(n, n + step, dtype=np.uint64))
            n += step
    fpr = f.estimated_fpr()
    assert fpr > 2 * 0.01
    f2 = bloomkit.BloomFilter(10_000, 0.01)
    f2.update(np.arange(n - step, dtype=np.uint64))
    assert f2.estimated_fpr() <= 2 * 0.01 and not f2.over_capacity
    assert 11_000 < n < 12_500  # ~1.16x capacity at 1 %


def test_single_key_adds_are_checked_periodically():
    f = bloomkit.BloomFilter(1000, 0.01)
    with warnings.catch_warnings(record=True) as record:
        warnings.simplefilter("always")
        for i in range(_capacity.SINGLE_ADD_CHECK_INTERVAL - 1):
            f.add(i)
        assert capacity_warnings(record) == []  # not yet checked
        f.add(-1)  # the 65536th add triggers the check
    found = capacity_warnings(record)
    assert len(found) == 1 and found[0].filename == __file__


def test_warnings_can_be_made_errors():
    f = bloomkit.BloomFilter(100, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bloomkit.CapacityWarning)
        with pytest.raises(bloomkit.CapacityWarning):
            f.update([f"k{i}" for i in range(1000)])


def test_dedup_mask_over_capacity_warns():
    values = np.arange(1_000_000, dtype=np.int64)
    with pytest.warns(bloomkit.CapacityWarning, match="over capacity"):
        mask = bloomkit.dedup_mask(values, capacity=100_000)
    assert mask.sum() < 1_000_000


def test_scalable_and_cuckoo_never_warn_within_their_rules():
    s = bloomkit.ScalableBloomFilter(100, 0.01)
    c = bloomkit.CuckooFilter(10_000, 0.01)
    with warnings.catch_warnings():
        warnings.simplefilter("error", bloomkit.CapacityWarning)
        s.update(range(100_000))
        c.update(range(9_000))
    assert not s.over_capacity and not c.over_capacity


def test_repr_shows_state_and_human_size():
    f = bloomkit.BloomFilter(900_000, 0.01, layout="classic")  # about 1.03 MiB
    assert _display.human_size(f.nbytes) == "1.03 MiB"
    assert "nbytes=1.03 MiB" in repr(f)
    assert "state=within target" in repr(f)
    assert f"1.03 MiB ({f.nbytes:,} B)" in f._repr_html_()
    small = bloomkit.BloomFilter(100, 0.01)
    with pytest.warns(bloomkit.CapacityWarning):
        small.update(range(1000))
    text = repr(small)
    assert "state=over capacity (estimated FPR" in text and "> 2 x target 0.01)" in text
    assert "over capacity" in small._repr_html_()


def test_human_sizes():
    assert [_display.human_size(n) for n in (0, 1023, 1024, 1536, 10 * 2**20, 5 * 2**30, 1023 * 2**20, 2**20 - 9)] == [
        "0 B",
        "1023 B",
        "1 KiB",
        "1.5 KiB",
        "10 MiB",
        "5 GiB",
        "1,023 MiB",
        "1 MiB",
    ]


def test_scalable_repr_says_what_len_counts():
    s = bloomkit.ScalableBloomFilter(100, 0.001)
    s.update(range(1000))
    text = repr(s)
    assert f"count={len(s):,} (= len: keys inserted as new, exact)" in text
    assert "(compound, target < 0.001)" in text
