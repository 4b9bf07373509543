"""Two CLI runs writing one filter file at once: the second waits for the first.

Without the lock each run saved its own copy and the later rename dropped
every key of the other run (issue 9). The first run is held open by its
stdin pipe until the second has reported that it waits, so the runs overlap
for certain.
"""

import fcntl
import os
import subprocess
import sys
import time

import bloomkit


def _wait_until_locked(path, timeout=60.0):
    """Until some process holds the run lock of filter ``path`` (cli/_lock.py)."""
    lock = f"{os.path.realpath(path)}.lock"
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if os.path.exists(lock):
            with open(lock, "rb") as handle:
                try:
                    fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    return
                fcntl.flock(handle, fcntl.LOCK_UN)
        time.sleep(0.02)
    raise AssertionError(f"nobody locked {lock}")


def _overlapping_runs(tmp_path, path, first_args, second_args, first_keys, second_keys):
    command = [sys.executable, "-m", "bloomkit"]
    (tmp_path / "second.txt").write_bytes(b"\n".join(second_keys) + b"\n")
    with (
        open(tmp_path / "out1", "wb") as out1,
        open(tmp_path / "out2", "wb") as out2,
        open(tmp_path / "second.txt", "rb") as second_input,
    ):
        first = subprocess.Popen(
            [*command, *map(str, first_args)], stdin=subprocess.PIPE, stdout=out1, stderr=subprocess.PIPE
        )
        first.stdin.write(b"\n".join(first_keys[: len(first_keys) // 2]) + b"\n")
        first.stdin.flush()
        _wait_until_locked(path)  # the first run holds the lock and waits for more input
        second = subprocess.Popen(
            [*command, *map(str, second_args)], stdin=second_input, stdout=out2, stderr=subprocess.PIPE
        )
        waiting = second.stderr.readline().decode()  # blocks until the second run reports
        first.stdin.write(b"\n".join(first_keys[len(first_keys) // 2 :]) + b"\n")
        first.stdin.close()
        err1 = first.stderr.read()
        first.wait(120)
        err2 = second.stderr.read()
        second.wait(120)
    assert first.returncode == 0, err1
    assert second.returncode == 0, err2
    return waiting, (tmp_path / "out1").read_bytes(), (tmp_path / "out2").read_bytes()


def test_two_concurrent_dedup_runs_keep_every_key(tmp_path):
    path = tmp_path / "seen.bk"
    a = [f"a{i}".encode() for i in range(20_000)]
    b = [f"b{i}".encode() for i in range(20_000)] + a[:100]
    args = ["dedup", "--filter", path, "--capacity", "100000", "-q"]
    waiting, out1, out2 = _overlapping_runs(tmp_path, path, args, args, a, b)
    assert waiting.startswith(f"bloomkit: waiting for {path}: another bloomkit run is writing it")
    assert out1.split() == a
    # The second run started on the first run's saved filter: a[:100] are duplicates.
    assert out2.split() == b[:20_000]
    f = bloomkit.load(path)
    assert f.contains_many(a + b).all()


def _build(path, keys: bytes, capacity: int) -> None:
    command = [sys.executable, "-m", "bloomkit", "build", "-o", path, "--capacity", str(capacity)]
    subprocess.run(command, input=keys, check=True, timeout=120)


def test_two_concurrent_add_runs_keep_every_key(tmp_path):
    path = tmp_path / "f.bk"
    _build(path, b"", 100_000)
    a = [f"a{i}".encode() for i in range(20_000)]
    b = [f"b{i}".encode() for i in range(20_000)]
    waiting, _, _ = _overlapping_runs(tmp_path, path, ["add", path], ["add", path], a, b)
    assert "another bloomkit run is writing it" in waiting
    assert bloomkit.load(path).contains_many(a + b).all()


def test_lock_file_is_a_sidecar_and_stays(tmp_path):
    path = tmp_path / "f.bk"
    _build(path, b"x\n", 1000)
    assert (tmp_path / "f.bk.lock").exists()
    assert "x" in bloomkit.load(path)


def test_merge_into_a_file_waits_for_an_add_run_and_keeps_every_key(tmp_path):
    path, other = tmp_path / "a.bk", tmp_path / "b.bk"
    _build(path, b"", 100_000)
    b = [f"b{i}".encode() for i in range(20_000)]
    _build(other, b"\n".join(b) + b"\n", 100_000)
    a = [f"a{i}".encode() for i in range(20_000)]
    merge = ["merge", path, other, "-o", path]
    waiting, _, _ = _overlapping_runs(tmp_path, path, ["add", path], merge, a, [])
    assert waiting.startswith(f"bloomkit: waiting for {path}: another bloomkit run is writing it")
    # merge read A after add saved it: both runs' keys are in A.
    merged = bloomkit.load(path)
    assert merged.contains_many(a).all()
    assert merged.contains_many(b).all()
