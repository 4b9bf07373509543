"""Limits of sizing: every request ends quickly, none asks for absurd memory, chains stay bounded.

Each test here once failed: sizing hung near error_rate 1, split_block asked
for hundreds of MB where classic needs KB, an address-space limit surfaced
as ``std::bad_alloc``, and a valid file of 10**6 tiny slices took ~350 MB to
load (docs/RELIABILITY.md, "Sizing and limits").
"""

from __future__ import annotations

import math
import struct

import pytest

import bloomkit
from support import make_frame, run_python, split_frame

MAX_SLICES = bloomkit.calc.LIMITS["max_scalable_slices"]

# Every sizing function over the corners of its domain, in a subprocess with
# a timeout: a hang fails the test instead of stalling the run. Each call
# returns a geometry that meets the request or raises ValueError.
SIZING_SWEEP = """
import math, time
from bloomkit import calc
capacities = [1, 7, 1000, 10**6, 10**9, 2**53, 2**62, 2**63 - 1]
rates = [5e-324, 1e-300, 1e-30, 1e-17, 1e-16, 1e-9, 1e-3, 0.5, 0.999999, 1 - 2**-53]
slowest, calls, refused = 0.0, 0, 0
for layout in (*calc.LAYOUTS, None):  # None: the default layout's choice
    for n in capacities:
        for p in rates:
            start = time.perf_counter()
            try:
                params = calc.bloom_params(n, p, layout)
            except ValueError:
                refused += 1
            else:
                assert 1 <= params.num_bits < 2**63 and 1 <= params.num_hashes <= 64, (layout, n, p, params)
                if params.layout != "classic":  # classic keeps its historical formula, which rounds k
                    assert params.error_rate <= p, (layout, n, p, params)
            slowest = max(slowest, time.perf_counter() - start)
            calls += 1
for n in capacities:
    for p in rates:
        for call in (lambda: calc.bloom_capacity(n, p), lambda: calc.cuckoo_params(n, p)):
            start = time.perf_counter()
            try:
                call()
            except ValueError:
                refused += 1
            slowest = max(slowest, time.perf_counter() - start)
            calls += 1
print(calls, refused, round(slowest, 3))
"""


def test_every_sizing_request_ends_within_a_bounded_time():
    # Before: BloomFilter(10**6, 0.999999, layout="blocked512") ran for
    # minutes and (2**53, 1 - 2**-53) in split_block never returned.
    result = run_python(SIZING_SWEEP, timeout=240)
    assert result.returncode == 0, result.stderr
    calls, refused, slowest = result.stdout.split()
    assert int(calls) == 4 * 8 * 10 + 2 * 8 * 10
    assert 0 < int(refused) < int(calls)
    assert float(slowest) < 30.0  # far above the slowest measured (0.85 s, 2 loaded cores): only a hang fails


def test_near_one_rates_size_without_hanging():
    params = bloomkit.calc.bloom_params(10**6, 0.999999, "blocked512")
    # k = 1: 1 - f(j) = (511/512)**j reaches 1e-6 at j = 7,067 keys per block.
    assert params.num_hashes == 1
    assert params.num_bits // 512 == pytest.approx(10**6 / 7067, rel=0.05)
    assert params.error_rate <= 0.999999
    assert bloomkit.calc.bloom_capacity(10**6, 0.999999) == pytest.approx(-(10**6) * math.log(1e-6), rel=1e-6)


def test_a_blocked_layout_far_costlier_than_classic_is_refused_with_both_sizes():
    # Before: 294,576,992 bytes for 1,000 keys (classic: 9,592).
    message = (
        r"the split_block layout needs 2,356,615,936 bits \(294,576,992 bytes\) for 1,000 keys at error_rate "
        r"1e-16, 30,732 times the classic layout's 76,681 bits \(9,592 bytes\); at most 16 times is accepted: "
        r"use layout='classic' \(or a larger error_rate\)"
    )
    with pytest.raises(ValueError, match=message):
        bloomkit.BloomFilter(1000, 1e-16, layout="split_block")
    with pytest.raises(ValueError, match=message):
        bloomkit.calc.bloom_params(1000, 1e-16, "split_block")
    assert bloomkit.BloomFilter(1000, 1e-16, layout="classic").nbytes == 9592
    # Under 64 MiB the ratio is not checked: 10 keys take 2.9 MB, and near
    # error_rate 1 classic's formula gives a few bits where a block is the least.
    assert bloomkit.calc.bloom_params(10, 1e-16, "split_block").nbytes == 2945792
    assert bloomkit.calc.bloom_params(10**6, 0.999999, "blocked512").num_bits == 72704


def test_a_scalable_filter_at_an_absurd_rate_is_a_value_error_not_bad_alloc():
    # Before: std::bad_alloc under an address-space limit, or a 19 GB
    # allocation without one. Run under a 4 GiB limit so a regression fails
    # with MemoryError instead of taking the machine's memory.
    result = run_python(
        """
        import resource
        resource.setrlimit(resource.RLIMIT_AS, (4 << 30, resource.RLIM_INFINITY))
        import bloomkit
        try:
            bloomkit.ScalableBloomFilter(1, 1e-20, layout="split_block")
        except BaseException as error:
            print(type(error).__name__, error)
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ValueError the split_block layout needs "), result.stdout
    assert "use layout='classic'" in result.stdout


def test_an_address_space_limit_is_the_memory_check_not_bad_alloc():
    # Before: "out of memory: ... (std::bad_alloc)" with no size in it.
    result = run_python(
        """
        import resource
        import bloomkit
        with open("/proc/self/status") as status:
            used = int(status.read().split("VmSize:")[1].split()[0]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (used + (1 << 30), resource.RLIM_INFINITY))
        try:
            bloomkit.BloomFilter(2 * 10**9, 0.01, layout="classic")  # 2.4 GB of bits
        except MemoryError as error:
            print(error)
        """,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("cannot allocate a bit array of 2396264600 bytes: only "), result.stdout
    assert "bytes of memory are available" in result.stdout


# --- the scalable chain's slice count --------------------------------------


def chain_frame(num_slices: int, newest_full: bool = False, growth: float = 1.0001, tightening: float = 0.999) -> bytes:
    """A valid classic scalable frame of ``num_slices`` one-word slices (slice i holds i + 1 keys).

    The shape of the reported 104 MB file (10**6 slices of 104 bytes each):
    the geometry follows the growth/tightening schedule, every slice but the
    newest is full, and the checksum is right, so only a bound on the slice
    count refuses it.
    """
    good = bloomkit.ScalableBloomFilter(1, 0.01, growth=growth, tightening=tightening, layout="classic")
    tag, params, _ = split_frame(good.to_bytes())
    params = bytearray(params)
    struct.pack_into("<I", params, 36, num_slices)
    capacity, error = 1, 0.01 * (1.0 - tightening)
    table = bytearray()
    for i in range(num_slices):
        if i > 0:
            capacity, error = math.ceil(capacity * growth), error * tightening
        count = capacity if i + 1 < num_slices or newest_full else 0
        table += struct.pack("<QIIQdQ", 64, 1, 0, capacity, error, count)
    table += bytes(-len(table) % 64)
    bits = bytes(64) * num_slices  # one word of bits and 56 bytes of padding per slice
    return make_frame(tag, bytes(params), bytes(table) + bits)


def test_a_chain_at_the_slice_limit_loads_and_one_past_it_is_refused_before_allocating():
    loaded = bloomkit.ScalableBloomFilter.from_bytes(chain_frame(MAX_SLICES))
    assert len(loaded.slices) == MAX_SLICES == 1024
    assert loaded.to_bytes() == chain_frame(MAX_SLICES)
    with pytest.raises(
        ValueError, match=r"invalid stored parameters: num_slices 1025 exceeds the limit of 1024 slices"
    ):
        bloomkit.ScalableBloomFilter.from_bytes(chain_frame(MAX_SLICES + 1))


def test_a_chain_at_the_slice_limit_refuses_to_grow_and_stays_as_it_was():
    chain = bloomkit.ScalableBloomFilter.from_bytes(chain_frame(MAX_SLICES, newest_full=True))
    before = chain.to_bytes()
    with pytest.raises(ValueError, match=r"cannot grow to slice 1024: at most 1024 slices are supported"):
        chain.add("one more")
    with pytest.raises(ValueError, match=r"cannot grow to slice 1024: at most 1024 slices are supported"):
        chain.update(["one more", "and another"])
    assert chain.to_bytes() == before
    assert len(chain) == MAX_SLICES * (MAX_SLICES + 1) // 2
