"""Command-line additions of issue 12, run as a subprocess: compression by magic bytes
(zstd too), binary input, dedup --stats-json, calc in every direction, build's default
rate, plain ``bloomkit``, query --count, add, completion, scalable stats."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import re
import subprocess
import sys

import pytest
from test_cli import assert_clean_error, exact_dedup, run_cli

import bloomkit
from bloomkit.cli import _args

if sys.version_info >= (3, 14):  # the CLI reads zstd with the standard library's module there
    from compression.zstd import compress as zstd_compress
else:
    import zstandard

    def zstd_compress(data: bytes) -> bytes:
        return zstandard.ZstdCompressor().compress(data)


LINES = [b"https://example.com/%d" % (i % 700) for i in range(3000)]
TEXT = b"\n".join(LINES) + b"\n"
EXPECTED = b"\n".join(exact_dedup(LINES)) + b"\n"

COMPRESSORS = {
    "gzip": gzip.compress,
    "xz": lzma.compress,
    "bzip2": bz2.compress,
    "zstd": zstd_compress,
    "zstd, two frames": lambda data: zstd_compress(data[:5000]) + zstd_compress(data[5000:]),
}


@pytest.mark.parametrize("name", COMPRESSORS)
def test_compression_is_detected_by_magic_bytes_in_files_and_stdin(tmp_path, name):
    blob = COMPRESSORS[name](TEXT)
    for file_name in ("input.zst", "input.txt", "input"):  # extension irrelevant unless it claims another format
        if file_name == "input.zst" and not name.startswith("zstd"):
            continue
        path = tmp_path / file_name
        path.write_bytes(blob)
        result = run_cli("dedup", "--capacity", 1000, "--error-rate", 1e-9, path)
        assert result.returncode == 0, result.stderr
        assert result.stdout == EXPECTED and result.stderr == b""
    piped = run_cli("dedup", "--capacity", 1000, "--error-rate", 1e-9, input=blob)
    assert piped.returncode == 0 and piped.stdout == EXPECTED, piped.stderr


def test_build_and_query_read_zstd(tmp_path):
    keys = tmp_path / "keys.zst"
    keys.write_bytes(zstd_compress(TEXT))
    out = tmp_path / "f.bk"
    assert run_cli("build", keys, "-o", out, "--capacity", 1000).returncode == 0
    assert run_cli("query", out, "--count", keys).stdout == b"3000\n"


def test_binary_and_archive_inputs(tmp_path):
    archive = tmp_path / "data.zip"
    archive.write_bytes(b"PK\x03\x04" + b"\x00" * 100)
    assert_clean_error(run_cli("dedup", "--capacity", 10, archive), "data.zip: is a zip archive: extract it first")
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"abc\x00def\nabc\x00def\nxyz\n")
    result = run_cli("dedup", "--capacity", 10, binary)
    assert result.returncode == 0 and result.stdout == b"abc\x00def\nxyz\n"
    assert result.stderr.decode().count("warning") == 1
    assert "blob.bin: looks like binary data (NUL bytes)" in result.stderr.decode()
    wrong = tmp_path / "text.zst"
    wrong.write_bytes(b"hello\n")
    assert_clean_error(
        run_cli("dedup", "--capacity", 10, wrong), "text.zst: cannot read: not zstd data, though the name ends in .zst"
    )
    broken = tmp_path / "broken.zst"
    broken.write_bytes(zstd_compress(TEXT)[:-40])
    assert_clean_error(run_cli("dedup", "--capacity", 10, broken), "broken.zst: cannot read")


def test_dedup_stats_json_has_the_keys_of_info_json(tmp_path):
    saved = tmp_path / "seen.bk"
    result = run_cli("dedup", "--capacity", 1000, "--stats-json", "--save", saved, input=TEXT)
    assert result.returncode == 0 and result.stdout.count(b"\n") == 700
    stats = json.loads(result.stderr)
    assert (stats["lines_in"], stats["lines_out"], stats["duplicates_dropped"]) == (3000, 700, 2300)
    assert stats["elapsed_s"] >= 0 and stats["state"] == "within target" and stats["over_capacity"] is False
    info = json.loads(run_cli("info", saved, "--json").stdout)
    filter_keys = set(info) - {"file", "file_bytes"}
    assert filter_keys <= set(stats)
    for key in filter_keys:
        assert stats[key] == info[key], key
    to_file = tmp_path / "stats.json"
    result = run_cli("dedup", "--capacity", 1000, "--stats-json", to_file, input=TEXT)
    assert result.stderr == b"" and json.loads(to_file.read_text())["lines_out"] == 700
    nowhere = tmp_path / "missing-dir" / "stats.json"
    assert_clean_error(
        run_cli("dedup", "--capacity", 1000, "--stats-json", nowhere, input=TEXT), "cannot write --stats-json"
    )


def test_over_capacity_is_visible_in_stats_json():
    result = run_cli("dedup", "--capacity", 100, "--stats-json", input=TEXT)
    lines = result.stderr.decode().splitlines()
    stats = json.loads(next(line for line in lines if line.startswith("{")))
    assert stats["over_capacity"] is True and stats["state"].startswith("over capacity")
    assert any("bloomkit: warning:" in line for line in lines)


def test_scalable_stats_show_the_compound_rate_next_to_the_target():
    result = run_cli("dedup", "--stats", input=TEXT)
    text = result.stderr.decode()
    line = next(line for line in text.splitlines() if line.startswith("estimated FPR"))
    assert "(compound now; target 0.001)" in line
    assert "keys inserted as new (exact)" in text and "state" in text


@pytest.mark.parametrize(
    "given",
    [
        ("--capacity", "1e6", "--error-rate", "1e-3"),
        ("--memory", "1MiB", "--error-rate", "1e-3"),
        ("--memory", "1MiB", "--capacity", "1e6"),
    ],
)
def test_calc_in_every_direction(given):
    result = run_cli("calc", *given)
    assert result.returncode == 0, result.stderr
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.decode().splitlines()}
    bloom_capacity, cuckoo_capacity = (int(v.replace(",", "")) for v in rows["capacity"][:2])
    bloom_rate, cuckoo_rate = (float(v) for v in rows["error_rate"][:2])
    bloom = bloomkit.calc.bloom_params(bloom_capacity, bloom_rate)
    cuckoo = bloomkit.calc.cuckoo_params(cuckoo_capacity, cuckoo_rate)
    if "--memory" in given:
        memory = 2**20
        assert bloom.nbytes <= memory and cuckoo.nbytes <= memory
        if "--capacity" not in given:  # the largest capacity that fits
            assert bloomkit.calc.bloom_params(bloom_capacity + 1, 1e-3).nbytes > memory
            assert bloomkit.calc.cuckoo_params(cuckoo_capacity + 1, 1e-3).nbytes > memory
            assert bloom_capacity > 530_000  # 15.6 bits per key at 0.1 % (blocked512, the default there)
        else:  # the smallest rate that fits
            assert bloomkit.calc.bloom_params(10**6, bloom_rate * 0.999).nbytes > memory
            assert 0.01 < bloom_rate < 0.03
    else:
        assert (bloom_capacity, bloom_rate) == (10**6, 1e-3)
    assert f"{bloom.num_bits:,}" == rows["num_bits"][0]
    assert rows["layout"][0] == bloom.layout == bloomkit.calc.default_layout(bloom_capacity, bloom_rate)


def test_calc_needs_two_of_three():
    assert_clean_error(run_cli("calc", "--capacity", "1e6"), "exactly two of --capacity, --error-rate and --memory")
    assert_clean_error(run_cli("calc", "--memory", "lots", "--capacity", "5"), "not a size: 'lots'")
    assert_clean_error(run_cli("calc", "--memory", "16", "--capacity", "1e9"), "no filter fits in 16 bytes")


def test_build_default_error_rate_is_dedups(tmp_path):
    out = tmp_path / "f.bk"
    assert run_cli("build", "-o", out, "--capacity", 1000, input=TEXT).returncode == 0
    assert bloomkit.load(out).error_rate == _args.DEFAULT_ERROR_RATE == 0.001
    scalable_stats = json.loads(run_cli("dedup", "--stats-json", input=TEXT).stderr)
    assert scalable_stats["error_rate"] == 0.001


def test_plain_bloomkit_prints_help():
    result = run_cli()
    assert result.returncode == 0 and result.stderr == b""
    text = result.stdout.decode()
    assert text.startswith("usage: bloomkit") and "dedup" in text and "completion" in text and "add" in text


def test_query_count(tmp_path):
    out = tmp_path / "f.bk"
    run_cli("build", "-o", out, "--capacity", 1000, "--error-rate", 1e-9, input=TEXT)
    probe = b"https://example.com/1\nhttps://example.com/999999\nnope\nhttps://example.com/2\n"
    assert run_cli("query", out, "--count", input=probe).stdout == b"2\n"
    assert run_cli("query", out, "-c", "--invert", input=probe).stdout == b"2\n"
    none = run_cli("query", out, "--count", "-k", "absent")
    assert none.stdout == b"0\n" and none.returncode == 1


def test_add_extends_a_filter_without_printing(tmp_path):
    out = tmp_path / "f.bk"
    run_cli("build", "-o", out, "--capacity", 1000, "--error-rate", 1e-9, input=b"a\nb\n")
    result = run_cli("add", out, input=b"c\nd\nc\n")
    assert result.returncode == 0 and result.stdout == b"" and result.stderr == b""
    f = bloomkit.load(out)
    assert all(key in f for key in (b"a", b"b", b"c", b"d")) and b"e" not in f
    assert f.capacity == 1000 and f.error_rate == 1e-9  # same parameters
    other = tmp_path / "g.bk"
    assert run_cli("add", out, "-o", other, "-q", input=b"e\n").returncode == 0
    assert b"e" in bloomkit.load(other) and b"e" not in bloomkit.load(out)
    before = out.read_bytes()
    assert_clean_error(run_cli("add", out, tmp_path / "missing.txt"), "missing.txt: No such file")
    assert_clean_error(run_cli("add", out, "--int", input=b"12\nx\n"), "line 2: not an integer")
    assert out.read_bytes() == before
    assert_clean_error(run_cli("add", tmp_path / "none.bk", input=b"a\n"), "none.bk")


def test_add_to_a_full_cuckoo_filter_leaves_the_file(tmp_path):
    out = tmp_path / "c.bk"
    run_cli("build", "-o", out, "--capacity", 10, "--type", "cuckoo", input=b"a\n")
    before = out.read_bytes()
    result = run_cli("add", out, input=b"\n".join(b"%d" % i for i in range(1000)) + b"\n")
    assert_clean_error(result, "the file was not changed")
    assert out.read_bytes() == before


def test_completion_scripts():
    for shell in ("bash", "zsh", "tcsh"):
        result = run_cli("completion", shell)
        assert result.returncode == 0, result.stderr
        assert b"dedup" in result.stdout and b"completion" in result.stdout
        if shell != "tcsh":  # shtab's tcsh script completes subcommands only
            assert b"--stats-json" in result.stdout
    bash = run_cli("completion", "bash").stdout.decode()
    checked = subprocess.run(["bash", "-n"], input=bash, text=True, capture_output=True, check=False)
    assert checked.returncode == 0, checked.stderr
    assert_clean_error(run_cli("completion", "fish"), "invalid choice: 'fish'")


def test_invalid_filter_message_says_it_once(tmp_path):
    bad = tmp_path / "x.bk"
    bad.write_bytes(b"hello\n")
    result = run_cli("info", bad)
    assert_clean_error(result, "x.bk: not a bloomkit filter")
    assert result.stderr.decode().count("not a") == 1


def test_dedup_into_a_cuckoo_filter_stores_each_line_once_and_counts_exactly(tmp_path):
    """A cuckoo filter is a multiset: dedup must test-and-add (add_new_many), not add every repeat."""
    distinct = [f"https://example.com/{i}".encode() for i in range(1_000)]
    text = b"\n".join(distinct * 3) + b"\n"  # every line three times
    path = tmp_path / "seen.bkf"
    assert run_cli("build", "-o", path, "--capacity", 5_000, "--type", "cuckoo").returncode == 0
    result = run_cli("dedup", "--filter", path, "--save", path, "--stats", input=text)
    assert result.returncode == 0, result.stderr
    kept = result.stdout.splitlines()
    assert set(kept) <= set(distinct) and len(kept) == len(set(kept))
    assert len(kept) >= 1_000 - 20  # false-positive drops at 1 %: 10 expected
    saved = bloomkit.load(path)
    assert len(saved) == len(kept)  # one entry per line kept, not 3,000
    stats = result.stderr.decode()
    counted = re.search(r"^keys stored \(exact\)\s+([\d,]+)$", stats, re.M)
    assert counted is not None and int(counted.group(1).replace(",", "")) == len(kept), stats
    assert "estimated keys" not in stats


def test_dedup_stats_json_slice_fill_is_a_json_list_of_the_slices_fills(tmp_path):
    saved = tmp_path / "s.bk"
    lines = [b"key-%d" % i for i in range(5000)]
    result = run_cli("dedup", "--stats-json", "--save", saved, input=b"\n".join(lines) + b"\n")
    assert result.returncode == 0
    stats = json.loads(result.stderr)
    slices = bloomkit.load(saved).slices
    # One slice: the command's scalable filter starts at 1e6 keys.
    assert stats["type"] == "ScalableBloomFilter" and stats["num_slices"] == len(slices) == 1
    assert isinstance(stats["slice_fill"], list)
    assert stats["slice_fill"] == pytest.approx([info.fill_ratio for info in slices], abs=1e-12)
    assert all(0.0 < fill < 1.0 for fill in stats["slice_fill"])
