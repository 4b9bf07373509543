"""Every bad input of issue 10, defect 9, gets a precise exception and message."""

from __future__ import annotations

import re
import subprocess
import sys

import numpy as np
import pytest

import bloomkit


def test_bloom_capacity_beyond_2_63_bits_is_a_value_error():
    with pytest.raises(
        ValueError,
        match=r"capacity 2,000,000,000,000,000,000 at error_rate 0\.01 needs about [\d,]+ bits; at most 2\*\*63 - 1",
    ):
        bloomkit.BloomFilter(2 * 10**18, layout="classic")
    with pytest.raises(
        ValueError,
        match=r"capacity 2,000,000,000,000,000,000 at error_rate 0\.01 needs more than 2\*\*62 bits in the "
        r"split_block layout; at most 2\*\*62 are supported \(a ScalableBloomFilter",
    ):
        bloomkit.BloomFilter(2 * 10**18, layout="split_block")
    # The default layout is chosen against the classic size, so it reports the classic limit.
    with pytest.raises(ValueError, match=r"error_rate 0\.01 needs about [\d,]+ bits; at most 2\*\*63 - 1"):
        bloomkit.BloomFilter(2 * 10**18)
    with pytest.raises(ValueError, match="at most 2\\*\\*63 - 1"):
        bloomkit.CountingBloomFilter(2 * 10**18)


def test_cuckoo_subnormal_error_rate_is_a_value_error():
    with pytest.raises(ValueError, match=r"error_rate=[\d.e-]+ needs fingerprints wider than 32 bits"):
        bloomkit.CuckooFilter(100, error_rate=1e-320)


def test_allocation_failure_says_what_was_allocated():
    with pytest.raises(
        MemoryError, match=r"^cannot allocate a bit array of \d+ bytes: only \d+ bytes of memory are available"
    ):
        bloomkit.BloomFilter.from_params(2**62, 3)


@pytest.mark.parametrize("rate", [np.float32(0.01), np.float64(0.01), np.float16(0.01)])
def test_numpy_float_rates_are_accepted(rate):
    assert bloomkit.BloomFilter(1000, rate).error_rate == pytest.approx(0.01, rel=1e-3)
    assert bloomkit.CuckooFilter(1000, rate).capacity == 1000
    assert bloomkit.ScalableBloomFilter(1000, rate, growth=np.float32(2), tightening=np.float32(0.5)).growth == 2.0
    assert bloomkit.CountingBloomFilter(np.float32(1000.0), rate).capacity == 1000


def test_numpy_integers_are_accepted_in_from_params():
    f = bloomkit.BloomFilter.from_params(np.int64(1024), np.int64(3), seed=np.uint32(7))
    assert (f.num_bits, f.num_hashes, f.seed) == (1024, 3, 7)
    with pytest.raises(TypeError, match="num_hashes must be an int in \\[1, 64\\], got float"):
        bloomkit.BloomFilter.from_params(1024, 3.0)


def run_cli(*args):
    return subprocess.run([sys.executable, "-m", "bloomkit", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("command", ["build", "query", "dedup"])
def test_cli_block_size_too_large_is_a_usage_error(command, tmp_path):
    extra = {
        "build": ["-o", str(tmp_path / "f.bkf"), "--capacity", "10", "--error-rate", "0.01"],
        "query": [str(tmp_path / "f.bkf")],
        "dedup": [],
    }[command]
    result = run_cli(command, *extra, "--block-size", "1e18")
    assert result.returncode == 2
    assert "argument --block-size: must be at most 1 GiB (1,073,741,824 bytes), got '1e18'" in result.stderr
    assert "--capacity" not in result.stderr.split("error:")[1]


def test_cli_calc_with_a_huge_capacity_shows_what_is_possible():
    result = run_cli("calc", "--capacity", "1e17", "--error-rate", "0.01")
    assert result.returncode == 0, result.stderr
    assert "CuckooFilter" in result.stdout and "BloomFilter" in result.stdout
    assert (
        "capacity above the cuckoo filter's limit of 1,047,086,846,254,776 keys (2**48 buckets of 4)" in result.stdout
    )
    assert re.search(r"num_bits +1,052,923,349,204,\d{3},\d{3}", result.stdout)  # the Bloom column is still there
    result = run_cli("calc", "--capacity", "1e18", "--error-rate", "0.01")
    assert result.returncode == 2
    assert "BloomFilter: capacity 1,000,000,000,000,000,000 at error_rate 0.01 needs" in result.stderr
    assert "CuckooFilter: capacity above the cuckoo filter's limit of 1,047,086,846,254,776 keys" in result.stderr


def test_cli_memory_error_message_is_the_cores(tmp_path):
    keys = tmp_path / "k.txt"
    keys.write_text("a\n")
    available = bloomkit._core.available_memory()
    capacity = min(int(available * 2), 2**62)
    result = run_cli(
        "build",
        "-o",
        str(tmp_path / "f.bkf"),
        "--type",
        "counting",
        "--capacity",
        str(capacity // 4),
        "--error-rate",
        "0.01",
        "-q",
        str(keys),
    )
    assert result.returncode == 2
    # The core refuses the allocation against the memory available (memory.hpp); the CLI names the request.
    assert (
        f"a CountingBloomFilter for {capacity // 4:,} keys at error rate 0.01: cannot allocate a counter array of"
        in (result.stderr)
    )
    assert "bytes of memory are available (choose a smaller capacity or a larger error rate)" in result.stderr
    assert "Traceback" not in result.stderr and not (tmp_path / "f.bkf").exists()
