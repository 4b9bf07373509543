"""The ``bloomkit`` command line, run as a subprocess like a user would."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import math
import os
import pty
import random
import re
import select
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import bloomkit
from bloomkit import _display, _types
from support import BLOOM_SUMMARY_LABELS

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"


def run_cli(*args, input=None, cwd=None, timeout=120):
    """``python -m bloomkit ARGS`` with bytes stdin; returns the CompletedProcess (bytes)."""
    return subprocess.run(
        [sys.executable, "-m", "bloomkit", *map(str, args)],
        input=input,
        capture_output=True,
        cwd=cwd,
        timeout=timeout,
        stdin=None if input is not None else subprocess.DEVNULL,
    )


def exact_dedup(lines):
    seen, out = set(), []
    for line in lines:
        if line not in seen:
            seen.add(line)
            out.append(line)
    return out


def assert_clean_error(result, *fragments, code=2):
    """Exit code 2, exactly one ``bloomkit: error:`` line on stderr, no traceback."""
    stderr = result.stderr.decode()
    assert result.returncode == code, stderr
    assert "Traceback" not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("bloomkit: error: "), stderr
    for fragment in fragments:
        assert fragment in lines[0], stderr


def dup_stream(distinct, repeats, seed):
    """``distinct`` distinct byte lines, each repeated 1..repeats times, shuffled."""
    rng = random.Random(seed)
    keys = [f"https://example.org/{seed}/page/{i}?q={rng.random():.6f}".encode() for i in range(distinct)]
    lines = [key for key in keys for _ in range(rng.randint(1, repeats))]
    rng.shuffle(lines)
    return lines


def expected_false_drops(num_bits, num_hashes, distinct):
    """Mean and standard deviation of the number of new lines a Bloom filter wrongly drops.

    The i-th distinct line meets a filter holding the i before it and is
    dropped with probability p_i = (1 - e^(-k i / m))^k; the drops are
    (nearly) independent Bernoulli trials.
    """
    rates = [bloomkit.false_positive_rate(num_bits, i, num_hashes) for i in range(distinct)]
    return sum(rates), math.sqrt(sum(p * (1 - p) for p in rates))


def is_subsequence(small, big):
    iterator = iter(big)
    return all(any(item == other for other in iterator) for item in small)


# --------------------------------------------------------------- entry points


def test_console_script_is_installed_and_runs():
    script = Path(sys.executable).with_name("bloomkit")
    assert script.exists(), "pip install . must install the bloomkit console script"
    result = subprocess.run(
        [str(script), "calc", "--capacity", "1e6", "--error-rate", "0.01"], capture_output=True, text=True
    )
    assert result.returncode == 0, result.stderr
    params = bloomkit.bloom_params(1_000_000, 0.01)
    assert f"{params.num_bits:,}" in result.stdout
    version = subprocess.run([str(script), "--version"], capture_output=True, text=True)
    assert version.stdout.strip() == f"bloomkit {bloomkit.__version__}"


def test_no_subcommand_prints_help():
    result = run_cli()
    assert result.returncode == 0 and result.stdout.startswith(b"usage: bloomkit") and result.stderr == b""
    assert_clean_error(run_cli("--stats"), "a COMMAND is needed before --stats")


# ----------------------------------------------------------------------- dedup


@pytest.mark.statistical
def test_dedup_equals_exact_dedup_up_to_expected_false_positives(tmp_path):
    distinct, error_rate = 40_000, 0.01
    lines = dup_stream(distinct, 3, seed=1)
    source = tmp_path / "in.txt"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    result = run_cli("dedup", source, "--capacity", distinct, "--error-rate", error_rate)
    assert result.returncode == 0, result.stderr
    out = result.stdout.split(b"\n")
    assert out.pop() == b""
    exact = exact_dedup(lines)
    # No false negatives: every printed line is a first occurrence, in order, once.
    assert len(set(out)) == len(out)
    assert is_subsequence(out, exact)
    params = bloomkit.bloom_params(distinct, error_rate)
    mean, sigma = expected_false_drops(params.num_bits, params.num_hashes, distinct)
    dropped = len(exact) - len(out)
    assert mean - 5 * sigma <= dropped <= mean + 5 * sigma, (dropped, mean, sigma)


def test_dedup_is_byte_exact_for_any_bytes(tmp_path):
    lines = [b"caf\xe9", b"caf\xc3\xa9", b"", b"a\r", b"a", b"\xff\xfe\x00nul", b"caf\xe9", b"", b"a\r", b"tab\there"]
    data = b"\n".join(lines)  # the last line has no newline
    result = run_cli("dedup", "--capacity", 100, "--error-rate", 1e-9, input=data)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"".join(line + b"\n" for line in exact_dedup(lines))
    # A NUL byte makes the input look binary: one warning, the lines still come out exact.
    assert result.stderr.decode().startswith("bloomkit: warning: <stdin>: looks like binary data")
    assert result.stderr.count(b"\n") == 1


def test_dedup_batches_do_not_split_lines(tmp_path):
    lines = dup_stream(2_000, 4, seed=2) + [b"x" * 5000]  # a line longer than a block
    source = tmp_path / "in.txt"
    source.write_bytes(b"".join(line + b"\n" for line in lines))
    expected = b"".join(line + b"\n" for line in exact_dedup(lines))
    for block_size in (7, 4096, 1 << 22):
        result = run_cli("dedup", source, "--capacity", 10_000, "--error-rate", 1e-9, "--block-size", block_size)
        assert result.returncode == 0, result.stderr
        assert result.stdout == expected, block_size


@pytest.mark.parametrize("opener, suffix", [(gzip.open, ".gz"), (lzma.open, ".xz"), (bz2.open, ".bz2")])
def test_dedup_reads_compressed_files_by_extension(tmp_path, opener, suffix):
    lines = dup_stream(3_000, 3, seed=3)
    source = tmp_path / f"in.txt{suffix}"
    with opener(source, "wb") as handle:
        handle.write(b"".join(line + b"\n" for line in lines))
    result = run_cli("dedup", source, "--capacity", 10_000, "--error-rate", 1e-9)
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"".join(line + b"\n" for line in exact_dedup(lines))


def test_dedup_several_files_and_stdin_share_one_filter(tmp_path):
    first, second = tmp_path / "a.txt", tmp_path / "b.txt"
    first.write_bytes(b"x\ny\n")
    second.write_bytes(b"y\nz")
    result = run_cli("dedup", first, "-", second, "--capacity", 100, "--error-rate", 1e-9, input=b"z\nw\nx\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"x\ny\nz\nw\n"


def test_dedup_filter_resumes_across_runs(tmp_path):
    lines = dup_stream(5_000, 3, seed=4)
    half = len(lines) // 2
    state = tmp_path / "seen.bk"
    first = run_cli(
        "dedup",
        "--filter",
        state,
        "--capacity",
        20_000,
        "--error-rate",
        1e-9,
        input=b"".join(line + b"\n" for line in lines[:half]),
    )
    assert first.returncode == 0, first.stderr
    assert state.exists()
    # The second run loads the filter; --capacity is not needed any more.
    second = run_cli("dedup", "--filter", state, input=b"".join(line + b"\n" for line in lines[half:]))
    assert second.returncode == 0, second.stderr
    assert first.stdout + second.stdout == b"".join(line + b"\n" for line in exact_dedup(lines))
    saved = bloomkit.load(state)
    assert saved.contains_many(lines).all()


def test_dedup_save_writes_the_filter_elsewhere(tmp_path):
    state, copy = tmp_path / "seen.bk", tmp_path / "copy.bk"
    run_cli("dedup", "--filter", state, "--capacity", 100, input=b"a\n")
    before = state.read_bytes()
    result = run_cli("dedup", "--filter", state, "--save", copy, input=b"a\nb\n")
    assert result.stdout == b"b\n"
    assert state.read_bytes() == before  # --save redirects the write
    assert bloomkit.load(copy).contains_many(["a", "b"]).all()


def test_dedup_stats_go_to_stderr(tmp_path):
    result = run_cli("dedup", "--capacity", 1000, "--stats", input=b"a\nb\na\nc\na\n")
    assert result.returncode == 0
    assert result.stdout == b"a\nb\nc\n"
    stats = dict(re.split(r"\s{2,}", line, maxsplit=1) for line in result.stderr.decode().splitlines())
    assert stats["lines in"] == "5"
    assert stats["lines out"] == "3"
    assert stats["duplicates dropped"] == "2"
    assert float(stats["filter fill"]) > 0
    assert float(stats["estimated FPR"].split()[0]) < 1e-6
    assert stats["estimated FPR"].endswith("(now; target 0.001)")
    assert "lines/s" in stats["elapsed"]


def test_dedup_warns_when_the_filter_is_overfull():
    keys = b"".join(b"%d\n" % i for i in range(5_000))
    result = run_cli("dedup", "--capacity", 100, "--error-rate", 0.01, input=keys)
    assert result.returncode == 0
    assert b"bloomkit: warning: the filter holds about" in result.stderr


def test_dedup_without_capacity(tmp_path):
    result = run_cli("dedup", input=b"a\nb\na\n")
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"a\nb\n"


def test_dedup_example_file():
    urls = EXAMPLES / "urls.txt.gz"
    assert urls.stat().st_size < 3 * 2**20
    result = run_cli("dedup", urls, "--capacity", 200_000, "--stats", "--quiet")
    assert result.returncode == 0, result.stderr
    with gzip.open(urls, "rb") as handle:
        lines = handle.read().split(b"\n")[:-1]
    assert len(lines) == 300_000
    exact = exact_dedup(lines)
    assert 150_000 < len(exact) < 250_000
    out = result.stdout.split(b"\n")[:-1]
    params = bloomkit.bloom_params(200_000, 0.001)
    mean, sigma = expected_false_drops(params.num_bits, params.num_hashes, len(exact))
    assert len(exact) - len(out) <= mean + 5 * sigma
    assert b"lines in            300,000" in result.stderr
    assert run_cli("dedup", urls, "--stats").returncode == 0  # the README's command, with no --capacity


def test_example_generator_is_deterministic(tmp_path):
    target = tmp_path / "urls.txt.gz"
    subprocess.run([sys.executable, EXAMPLES / "make_urls.py", target], check=True, capture_output=True, timeout=120)
    with gzip.open(target) as fresh, gzip.open(EXAMPLES / "urls.txt.gz") as shipped:
        assert fresh.read() == shipped.read()


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_dedup_interrupt_saves_a_filter_matching_the_output(tmp_path, signum):
    state = tmp_path / "seen.bk"
    process = subprocess.Popen(
        [sys.executable, "-m", "bloomkit", "dedup", "--filter", str(state), "--capacity", "1000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdin.write(b"a\nb\na\n")
    process.stdin.flush()
    printed = b""
    deadline = time.monotonic() + 30
    while printed.count(b"\n") < 2 and time.monotonic() < deadline:
        printed += os.read(process.stdout.fileno(), 100)  # lines are flushed per batch
    assert printed == b"a\nb\n"
    process.send_signal(signum)  # while dedup waits for more input
    rest, stderr = process.communicate(timeout=30)
    assert process.returncode == 128 + signum
    assert rest == b""
    assert "Traceback" not in stderr.decode()
    assert f"interrupted after 3 lines; filter saved to {state}" in stderr.decode()
    again = run_cli("dedup", "--filter", state, input=b"b\nc\na\n")
    assert again.stdout == b"c\n"


def test_dedup_stops_quietly_when_the_reader_goes_away():
    process = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "bloomkit",
            "dedup",
            str(EXAMPLES / "urls.txt.gz"),
            "--capacity",
            "300000",
            "--block-size",
            "4096",
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    process.stdout.readline()
    process.stdout.close()  # like `| head -1`
    stderr = process.stderr.read()
    process.wait(timeout=60)
    assert process.returncode == 141
    assert stderr == b""


# ------------------------------------------------------------------ progress


def test_no_progress_bar_when_stderr_is_not_a_terminal(tmp_path):
    result = run_cli("dedup", EXAMPLES / "urls.txt.gz", "--capacity", 300_000)
    assert result.returncode == 0
    assert result.stderr == b""


def run_under_pty(args, timeout=60):
    """Run the CLI with stderr on a pseudo-terminal; return (exit code, what the terminal showed)."""
    master, slave = pty.openpty()
    process = subprocess.Popen(
        [sys.executable, "-m", "bloomkit", *map(str, args)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=slave,
    )
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([master], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(master, 65536)
            except OSError:  # EIO: the child closed the terminal
                break
            if not chunk:
                break
            shown += chunk
        elif process.poll() is not None:
            break
    os.close(master)
    return process.wait(timeout=timeout), shown.decode("utf-8", "replace")


def test_progress_bar_on_a_terminal():
    code, shown = run_under_pty(["dedup", EXAMPLES / "urls.txt.gz", "--capacity", 300_000])
    assert code == 0
    assert "dedup" in shown and "100%" in shown and "lines/s" in shown
    quiet_code, quiet = run_under_pty(["dedup", EXAMPLES / "urls.txt.gz", "--capacity", 300_000, "--quiet"])
    assert quiet_code == 0
    assert quiet == ""


# ------------------------------------------------------------- build / query


@pytest.fixture(scope="module")
def key_files(tmp_path_factory):
    directory = tmp_path_factory.mktemp("keys")
    present = [f"user-{i}@example.com".encode() for i in range(3_000)]
    absent = [f"visitor-{i}@example.net".encode() for i in range(3_000)]
    (directory / "present.txt").write_bytes(b"\n".join(present) + b"\n")
    (directory / "absent.txt").write_bytes(b"\n".join(absent) + b"\n")
    return directory, present, absent


def test_build_then_query(key_files, tmp_path):
    directory, present, absent = key_files
    out = tmp_path / "users.bk"
    built = run_cli("build", directory / "present.txt", "-o", out, "--capacity", 3000, "--error-rate", 0.01)
    assert built.returncode == 0, built.stderr
    assert built.stdout == b"" and built.stderr == b""
    # The CLI's keys are the lines' bytes, which are the UTF-8 of the same str keys.
    loaded = bloomkit.load(out)
    assert loaded.contains_many([key.decode() for key in present]).all()

    hits = run_cli("query", out, directory / "present.txt")
    assert hits.returncode == 0
    assert hits.stdout == b"\n".join(present) + b"\n"

    false_hits = run_cli("query", out, directory / "absent.txt")
    false_count = len(false_hits.stdout.splitlines())
    probes = len(absent)
    assert false_count <= probes * (1.1 * 0.01) + 5 * math.sqrt(0.01 * 0.99 * probes)

    misses = run_cli("query", out, "--invert", "-", input=b"\n".join(absent + present[:5]) + b"\n")
    assert len(misses.stdout.splitlines()) == probes - false_count
    assert not set(misses.stdout.splitlines()) & set(present)


def test_query_exit_status_is_like_grep(key_files, tmp_path):
    directory, present, _ = key_files
    out = tmp_path / "users.bk"
    run_cli("build", directory / "present.txt", "-o", out, "--capacity", 3000, "--error-rate", 1e-6)
    found = run_cli("query", out, "--key", present[0].decode(), "--key", "nobody@nowhere")
    assert (found.returncode, found.stdout) == (0, present[0] + b"\n")
    missing = run_cli("query", out, "--key", "nobody@nowhere")
    assert (missing.returncode, missing.stdout, missing.stderr) == (1, b"", b"")
    inverted = run_cli("query", out, "-v", "-k", "nobody@nowhere")
    assert (inverted.returncode, inverted.stdout) == (0, b"nobody@nowhere\n")


def test_build_int_keys_match_python_ints(tmp_path):
    numbers = tmp_path / "ids.txt"
    numbers.write_bytes(b"1\n-5\n 42 \n\n18446744073709551615\n")
    out = tmp_path / "ids.bk"
    result = run_cli("build", numbers, "-o", out, "--capacity", 100, "--error-rate", 1e-6, "--int")
    assert result.returncode == 0, result.stderr
    loaded = bloomkit.load(out)
    assert loaded.contains_many([1, -5, 42, 2**64 - 1]).all()
    assert 2 not in loaded
    query = run_cli("query", out, "--int", "-k", "42", "-k", "43")
    assert query.stdout == b"42\n"


@pytest.mark.parametrize(
    "text, message",
    [
        (b"1\n2\nthree\n", "line 3: not an integer: 'three'"),
        (b"1\n18446744073709551616\n", "line 2: integer 18446744073709551616 is outside"),
    ],
)
def test_build_int_rejects_bad_lines_without_writing(tmp_path, text, message):
    out = tmp_path / "ids.bk"
    out.write_bytes(b"old")
    result = run_cli("build", "-", "-o", out, "--capacity", 100, "--error-rate", 0.01, "--int", input=text)
    assert_clean_error(result, message)
    assert out.read_bytes() == b"old"
    # no temporary file left; the run lock (cli/_lock.py, docs/cli.md) stays by design
    assert sorted(os.listdir(tmp_path)) == ["ids.bk", "ids.bk.lock"]


@pytest.mark.parametrize("command", ["add", "dedup"])
def test_a_frozen_filter_is_refused_by_the_commands_that_add_and_left_as_it_was(tmp_path, command):
    frozen = [row for row in _types.FRAMED if not row.mutable]
    assert frozen, "the registry has a frozen type (binary_fuse)"
    for row in frozen:
        path = tmp_path / f"{row.name}.bkf"
        built = run_cli("build", "-", "-o", path, "--type", row.name, "--capacity", 10, input=b"a\nb\n")
        assert built.returncode == 0, built.stderr
        before = path.read_bytes()
        args = ["add", path, "-"] if command == "add" else ["dedup", "--filter", path, "-"]
        assert_clean_error(
            run_cli(*args, input=b"c\nd\n"),
            f"a {row.class_name} is frozen and takes no keys, so `bloomkit {command}` cannot add to it",
            f"bloomkit build --type {row.name}",
        )
        assert path.read_bytes() == before


def test_build_every_type(tmp_path):
    names = {row.name: row.class_name for row in _types.FRAMED}
    assert {"bloom", "counting", "cuckoo", "scalable"} <= set(names)
    for cli_name, class_name in names.items():
        out = tmp_path / f"{cli_name}.bk"
        window = ["--window", "1e6"] if _types.BY_NAME[cli_name].windowed else []  # one without forgets nothing
        result = run_cli(
            "build",
            "-",
            "-o",
            out,
            "--capacity",
            1000,
            "--error-rate",
            0.01,
            "--type",
            cli_name,
            *window,
            input=b"a\nb\n",
        )
        assert result.returncode == 0, result.stderr
        assert type(bloomkit.load(out)).__name__ == class_name
        assert bloomkit.load(out).contains_many(["a", "b"]).all()
    assert_clean_error(
        run_cli(
            "build",
            "-",
            "-o",
            tmp_path / "x.bk",
            "--capacity",
            10,
            "--error-rate",
            0.01,
            "--type",
            "quotient",
            input=b"a\n",
        ),
        "invalid choice",
        "'quotient'",
    )


def test_build_with_a_window_makes_a_window_filter_that_forgets(tmp_path):
    # `--window 1e6` as a user types it: the last million keys; `--window 4
    # --generations 3` small enough to watch forget (2 keys a generation,
    # live generations are the last 3, so "a" of line 1 is gone by line 7).
    million = tmp_path / "million.bkf"
    result = run_cli("build", "-", "-o", million, "--window", "1e6", "--capacity", 1000, input=b"a\nb\n")
    assert result.returncode == 0, result.stderr
    loaded = bloomkit.load(million)
    assert type(loaded) is bloomkit.RotatingBloomFilter
    assert loaded.window == bloomkit.WindowSpec(1_000_000) and loaded.capacity == 1000
    assert loaded.contains_many(["a", "b"]).all() and len(loaded) == 2
    small = tmp_path / "small.bkf"
    lines = b"".join(f"k{i}\n".encode() for i in range(7))
    result = run_cli(
        "build",
        "-",
        "-o",
        small,
        "--type",
        "rotating",
        "--window",
        4,
        "--generations",
        3,
        "--error-rate",
        1e-6,
        "--capacity",
        4,
        input=lines,
    )
    assert result.returncode == 0, result.stderr
    window = bloomkit.load(small)
    assert window.window == bloomkit.WindowSpec(4, 3)
    assert window.contains_many([f"k{i}" for i in range(7)]).tolist() == [False, False, True, True, True, True, True]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--type", "rotating"], "--type rotating needs --window W"),
        (["--type", "bloom", "--window", "7d"], "--window makes a RotatingBloomFilter; --type bloom has no window"),
        (["--type", "binary_fuse", "--window", "1e6"], "--type binary_fuse has no window"),
        (["--generations", 3], "--generations needs --window"),
        (["--window", "7 days"], "--window: window '7 days'"),
    ],
)
def test_build_refuses_a_window_it_cannot_keep_and_writes_nothing(tmp_path, args, message):
    out = tmp_path / "f.bkf"
    assert_clean_error(run_cli("build", "-", "-o", out, "--capacity", 10, *args, input=b"a\n"), message)
    assert not out.exists()


def test_dedup_with_a_line_window_of_a_million_as_typed(tmp_path):
    # The literal "1e6" of the docs: each of 1,000 lines printed once, and the
    # saved filter's window is the last 10**6 lines.
    lines = [f"line-{i}".encode() for i in range(1000)]
    state = tmp_path / "seen.bkf"
    result = run_cli("dedup", "--window", "1e6", "--save", state, input=b"".join(line + b"\n" for line in lines * 3))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"".join(line + b"\n" for line in lines)
    saved = bloomkit.load(state)
    assert saved.window == bloomkit.WindowSpec(1_000_000) and saved.keys_seen == 3000 and len(saved) == 1000


@pytest.mark.parametrize("row", [row for row in _types.FRAMED if row.mutable], ids=lambda row: row.name)
def test_dedup_with_a_filter_of_every_type_stores_each_line_once_and_labels_its_count(tmp_path, row):
    # 1,000 distinct lines, each three times: every type prints each line
    # once and stores it once (a cuckoo filter, a multiset, through
    # add_new_many), and --stats names len() as the type's row says.
    state = tmp_path / "seen.bkf"
    row.make(5000, 0.001, 1).save(state)
    lines = [f"line-{i}".encode() for i in range(1000)]
    result = run_cli("dedup", "--filter", state, "--stats", input=b"".join(line + b"\n" for line in lines * 3))
    assert result.returncode == 0, result.stderr
    assert result.stdout == b"".join(line + b"\n" for line in lines)
    stats = result.stderr.decode()
    assert re.search(rf"^\s*{re.escape(row.count_label)}\s*:?\s+[\d,]+", stats, re.M), stats
    other_labels = {r.count_label for r in _types.ROWS} - {row.count_label}
    assert not any(label in stats for label in other_labels), stats
    saved = bloomkit.load(state)
    assert saved.contains_many(lines).all()
    if row.exact_count:
        assert len(saved) == 1000
    else:
        assert abs(len(saved) - 1000) <= 30


# ----------------------------------------------------------------- info / calc


def test_info_shows_the_summary(tmp_path):
    f = bloomkit.BloomFilter(5000, 0.001, seed=7)
    f.update([f"k{i}" for i in range(1234)])
    path = tmp_path / "f.bk"
    f.save(path)
    result = run_cli("info", path)
    assert result.returncode == 0, result.stderr
    rows = {}
    for line in result.stdout.decode().splitlines():
        label, value = line.split(None, 1)
        rows[label] = value.strip()
    assert rows["type"] == "BloomFilter"
    assert rows["file_bytes"] == _display.human_size(path.stat().st_size)
    for label, value in f._summary().items():
        assert rows[label] == _display.format_field(label, value), label
    assert rows["nbytes"] == _display.human_size(f.nbytes) and rows["state"] == "within target"
    for label in BLOOM_SUMMARY_LABELS:
        assert label in rows
    as_json = json.loads(run_cli("info", path, "--json").stdout)
    assert as_json["estimated_count"] == len(f)
    assert as_json["estimated_fpr"] == pytest.approx(f.estimated_fpr())
    assert as_json["type"] == "BloomFilter" and as_json["seed"] == 7


def test_calc_table_matches_the_calculator():
    result = run_cli("calc", "--capacity", "1e9", "--error-rate", "1e-4")
    assert result.returncode == 0, result.stderr
    params = bloomkit.bloom_params(10**9, 1e-4)
    text = result.stdout.decode()
    # The default at 1e-4 is classic (blocked512 would take 1.15x): 19.17 bits per key.
    assert params.layout == "classic" and f"{params.num_bits:,}" in text and "2.23 GiB" in text
    assert any(line.split()[:2] == ["num_hashes", str(params.num_hashes)] for line in text.splitlines())
    cuckoo = bloomkit.calc.cuckoo_params(10**9, 1e-4)
    assert "CuckooFilter" in text and f"{cuckoo.num_buckets:,}" in text


def test_calc_marks_the_cuckoo_column_unsupported_past_its_capacity():
    # Before: the cuckoo column's bucket error ("needs 268817204858576128
    # buckets") with --error-rate, no cuckoo column at all with --memory.
    limit = bloomkit.calc.cuckoo_max_capacity(4)
    reason = f"capacity above the cuckoo filter's limit of {limit:,} keys (2**48 buckets of 4)"
    for given in (["--error-rate", "0.5"], ["--memory", "1e18"]):
        result = run_cli("calc", "--capacity", "1e18", *given)
        assert result.returncode == 0, result.stderr
        rows = {line.split()[0]: line.split(None, 1)[1] for line in result.stdout.decode().splitlines()}
        assert rows["filter"].split() == ["BloomFilter", "CuckooFilter"]
        assert rows["capacity"].split()[0] == "1,000,000,000,000,000,000"
        assert rows["unsupported"].split(None, 1) == ["-", reason]
    assert 1.04e15 < limit < 1.05e15
    # Nothing to show: one line with each column's reason, exit 2.
    result = run_cli("calc", "--capacity", "1e18", "--error-rate", "1e-9")
    assert result.returncode == 2
    assert f"CuckooFilter: {reason}" in result.stderr.decode()


@pytest.mark.parametrize(
    "args, message",
    [
        (["calc", "--capacity", "abc", "--error-rate", "0.1"], "argument --capacity: not a number: 'abc'"),
        (["calc", "--capacity", "0", "--error-rate", "0.1"], "must be a positive whole number"),
        (["calc", "--capacity", "1.5", "--error-rate", "0.1"], "must be a positive whole number"),
        (["calc", "--capacity", "10", "--error-rate", "1.5"], "argument --error-rate: must be in (0, 1)"),
        (["dedup", "--capacity", "1e30"], "must be below 2**63"),
        (["build", "-", "-o", "x.bk", "--capacity", "10", "--error-rate", "nan%"], "not a number"),
        (["dedup", "--seed", "-1", "--capacity", "10"], "argument --seed"),
        (["dedup", "--capacity", "1e13", "--error-rate", "0.01"], "of memory"),
    ],
)
def test_bad_numbers_are_one_line_errors(args, message, tmp_path):
    result = run_cli(*args, cwd=tmp_path, input=b"")
    assert_clean_error(result, message)
    assert not (tmp_path / "x.bk").exists()


# ------------------------------------------------------------ broken inputs


@pytest.fixture()
def saved_filter(tmp_path):
    f = bloomkit.BloomFilter(1000, 0.01)
    f.update(["a", "b"])
    path = tmp_path / "good.bk"
    f.save(path)
    return path


def corrupt_variants(blob):
    flipped = bytearray(blob)
    flipped[len(blob) // 2] ^= 0x10
    return {"flipped": bytes(flipped), "truncated": blob[:-9], "garbage": b"not a filter at all\n" * 5, "empty": b""}


@pytest.mark.parametrize(
    "command, variant",
    [
        ("info", "flipped"),
        ("info", "truncated"),
        ("info", "garbage"),
        ("info", "empty"),
        ("query", "flipped"),
        ("dedup", "truncated"),
        ("dedup", "flipped"),
        ("merge", "garbage"),
    ],
)
def test_corrupt_filters_fail_cleanly(tmp_path, saved_filter, variant, command):
    bad = tmp_path / "bad.bk"
    bad.write_bytes(corrupt_variants(saved_filter.read_bytes())[variant])
    before = bad.read_bytes()
    args = {
        "info": ["info", bad],
        "query": ["query", bad, "-k", "a"],
        "dedup": ["dedup", "--filter", bad],
        "merge": ["merge", saved_filter, bad, "-o", tmp_path / "out.bk"],
    }[command]
    result = run_cli(*args, input=b"a\nb\n")
    assert_clean_error(result, f"{bad}: not a ")
    assert result.stderr.count(b"not a") == 1  # "not a valid bloomkit filter: not a bloomkit filter" said once
    assert result.stdout == b""
    assert bad.read_bytes() == before
    assert not (tmp_path / "out.bk").exists()


@pytest.mark.parametrize(
    "args, message",
    [
        (["dedup", "--capacity", "10", "missing.txt"], "missing.txt: No such file or directory"),
        (
            ["build", "missing.txt", "-o", "x.bk", "--capacity", "10", "--error-rate", "0.1"],
            "missing.txt: No such file or directory",
        ),
        (["query", "missing.bk", "-k", "a"], "cannot read filter missing.bk: No such file or directory"),
        (["info", "."], "is a directory"),
        (["dedup", "--capacity", "10", "."], ".: is a directory"),
        (
            ["build", "-", "-o", "no/such/dir/x.bk", "--capacity", "10", "--error-rate", "0.1"],
            "cannot write filter no/such/dir/x.bk",
        ),
        (
            ["dedup", "--capacity", "10", "--save", "no/dir/x.bk"],
            "cannot write filter no/dir/x.bk: No such file or directory",
        ),
    ],
)
def test_missing_and_unwritable_files_fail_cleanly(tmp_path, args, message):
    result = run_cli(*args, cwd=tmp_path, input=b"a\n")
    assert_clean_error(result, message)
    assert result.stdout == b""


def test_corrupt_compressed_input_fails_cleanly(tmp_path):
    broken = tmp_path / "in.txt.gz"
    broken.write_bytes(gzip.compress(b"".join(b"%d\n" % i for i in range(100_000)))[:-200])
    result = run_cli("dedup", "--capacity", 100, broken)
    assert_clean_error(result, "in.txt.gz: cannot read")
    not_gzip = tmp_path / "plain.gz"
    not_gzip.write_bytes(b"hello\n")
    assert_clean_error(run_cli("dedup", "--capacity", 100, not_gzip), "plain.gz: cannot read")


# --------------------------------------------------------------------- merge


def test_merge_is_the_union(tmp_path):
    left, right, out = tmp_path / "l.bk", tmp_path / "r.bk", tmp_path / "u.bk"
    run_cli("build", "-", "-o", left, "--capacity", 1000, "--error-rate", 1e-4, input=b"a\nb\n")
    run_cli("build", "-", "-o", right, "--capacity", 1000, "--error-rate", 1e-4, input=b"c\n")
    result = run_cli("merge", left, right, "-o", out)
    assert result.returncode == 0, result.stderr
    merged = bloomkit.load(out)
    assert merged == bloomkit.load(left) | bloomkit.load(right)
    assert merged.contains_many(["a", "b", "c"]).all()


def test_merge_rejects_incompatible_filters(tmp_path):
    small, large, out = tmp_path / "s.bk", tmp_path / "l.bk", tmp_path / "u.bk"
    run_cli("build", "-", "-o", small, "--capacity", 100, "--error-rate", 0.01, input=b"a\n")
    run_cli("build", "-", "-o", large, "--capacity", 10_000, "--error-rate", 0.01, input=b"b\n")
    result = run_cli("merge", small, large, "-o", out)
    assert_clean_error(result, f"cannot merge {large} into {small}", "num_bits")
    assert not out.exists()
    seeded = tmp_path / "seeded.bk"
    run_cli("build", "-", "-o", seeded, "--capacity", 100, "--error-rate", 0.01, "--seed", 9, input=b"a\n")
    assert_clean_error(run_cli("merge", small, seeded, "-o", out), "cannot merge")
    counting = tmp_path / "c.bk"
    run_cli("build", "-", "-o", counting, "--capacity", 100, "--error-rate", 0.01, "--type", "counting", input=b"a\n")
    assert_clean_error(run_cli("merge", small, counting, "-o", out), "all inputs must be of one filter type")
    assert_clean_error(run_cli("merge", small, "-o", out), "at least two")
