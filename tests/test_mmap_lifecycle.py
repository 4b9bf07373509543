"""File-backed Bloom filters: creating, replacing, locking and closing a mapped file.

A full disk and "File too large" are an OSError at ``"w+"`` with the old
file untouched (never a SIGBUS later); ``"w+"`` over a file another process
reads replaces it by rename, so the reader keeps its keys; every mapping
holds a shared ``flock``; a writer that dies leaves a file that loads as
"not closed cleanly", not "corrupt", and one ``open(path, "r+").close()``
recomputes its checksum. The risky parts run in subprocesses whose exit
status is asserted.
"""

import errno
import fcntl
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bloomkit
from bloomkit import BloomFilter

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="Linux file locks and tmpfs")

OPEN_FOR_WRITING = 0x40  # bit 14 of the type tag: byte 11, bit 6 (docs/FORMAT.md)


def keys(start, count):
    return [f"key-{i}" for i in range(start, start + count)]


def run_python(code, *args, timeout=60):
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code), *map(str, args)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def saved(path, count=1_000):
    ram = BloomFilter(10_000, 0.01, seed=5)
    ram.update(keys(0, count))
    ram.save(path)
    return ram, path.read_bytes()


@pytest.fixture
def small_disk(tmp_path):
    """A 1 MiB tmpfs (root only): a disk that fills up."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    mount_point = tmp_path / "disk"
    mount_point.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", str(mount_point)]).returncode != 0:
        pytest.skip("cannot mount a tmpfs here")
    try:
        yield mount_point
    finally:
        subprocess.run(["umount", str(mount_point)], check=True)


CREATE_AND_FILL = """
    import errno, sys
    from bloomkit import BloomFilter
    try:
        f = BloomFilter.open(sys.argv[1], "w+", capacity=int(sys.argv[2]), error_rate=0.01)
    except OSError as error:
        print(errno.errorcode[error.errno], error)
        sys.exit(0)
    f.update([f"k{i}" for i in range(int(sys.argv[2]))])
    f.close()
    print("created")
"""


def test_full_disk_is_an_oserror_at_open_and_the_old_file_is_untouched(small_disk):
    old = small_disk / "old.bk"
    ram, before = saved(old)
    # 4,000,000 keys at 1% need 4.8 MB: before, the sparse file was created
    # and the first update died of SIGBUS (exit status 135 in a shell).
    result = run_python(CREATE_AND_FILL, old, 4_000_000)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("ENOSPC ") and "cannot reserve" in result.stdout and str(old) in result.stdout
    assert old.read_bytes() == before
    assert sorted(os.listdir(small_disk)) == ["old.bk"]  # no temporary file left behind
    assert bloomkit.load(old) == ram
    # A filter that fits is created, filled to capacity and closed.
    result = run_python(CREATE_AND_FILL, small_disk / "fits.bk", 300_000)
    assert (result.returncode, result.stdout.strip()) == (0, "created"), result.stderr
    assert all(bloomkit.load(small_disk / "fits.bk").contains_many([f"k{i}" for i in range(300_000)]))


def test_file_too_large_leaves_the_old_filter_loadable(tmp_path):
    old = tmp_path / "old.bk"
    ram, before = saved(old)
    code = """
        import errno, resource, sys
        resource.setrlimit(resource.RLIMIT_FSIZE, (1 << 20, 1 << 20))
        from bloomkit import BloomFilter
        try:
            BloomFilter.open(sys.argv[1], "w+", capacity=10_000_000)
        except OSError as error:
            print(errno.errorcode[error.errno], error)
    """
    result = run_python(code, old)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("EFBIG ") and str(old) in result.stdout
    # Before: the old file was truncated to a 64-byte stub declaring a 13 MB filter.
    assert old.read_bytes() == before
    assert sorted(os.listdir(tmp_path)) == ["old.bk"]
    assert bloomkit.load(old) == ram


READER = """
    import sys
    from bloomkit import BloomFilter
    reader = BloomFilter.open(sys.argv[1])
    print("mapped", flush=True)
    sys.stdin.readline()
    print(int(reader.contains_many([f"key-{i}" for i in range(int(sys.argv[2]))]).sum()), flush=True)
    reader.close()
"""


@pytest.mark.parametrize("capacity", [1_000, 10_000], ids=["smaller", "same size"])
def test_w_plus_over_a_file_another_process_reads(tmp_path, capacity):
    path = tmp_path / "shared.bk"
    saved(path, count=5_000)
    reader = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(READER), str(path), "5000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert reader.stdout.readline().strip() == "mapped"
        with BloomFilter.open(path, "w+", capacity=capacity, error_rate=0.01, seed=5) as fresh:
            fresh.add("new")
        out, err = reader.communicate("go\n", timeout=60)
    finally:
        reader.kill()
        reader.wait()
    # Before: SIGBUS (exit -7) for a smaller filter, 0 keys for the same size.
    assert reader.returncode == 0, err
    assert int(out) == 5_000
    replaced = bloomkit.load(path)
    assert "new" in replaced and replaced.capacity == capacity and not any(replaced.contains_many(keys(0, 100)))


def test_every_mapping_holds_a_shared_lock(tmp_path):
    path = tmp_path / "f.bk"
    saved(path)
    for mode in ("r", "r+"):
        with open(path, "rb") as other:
            with BloomFilter.open(path, mode), BloomFilter.open(path, "r"):
                fcntl.flock(other, fcntl.LOCK_SH | fcntl.LOCK_NB)  # other readers are welcome
                fcntl.flock(other, fcntl.LOCK_UN)
                with pytest.raises(BlockingIOError):
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # a truncation would have to wait
            fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)  # free once every mapping is closed
            before = path.read_bytes()
            # A file being rewritten in place (locked exclusively) is not mapped.
            with pytest.raises(BlockingIOError, match="locked exclusively by another process") as caught:
                BloomFilter.open(path, mode)
            assert caught.value.errno == errno.EWOULDBLOCK
            assert path.read_bytes() == before


KILLED_WRITER = """
    import os, signal, sys
    from bloomkit import BloomFilter
    f = BloomFilter.open(sys.argv[1], "r+")
    f.update([f"key-{i}" for i in range(int(sys.argv[2]), int(sys.argv[3]))])
    print("acknowledged", flush=True)
    sys.stdin.readline()
    os.kill(os.getpid(), signal.SIGKILL)
"""


def test_a_sigkilled_writer_is_not_corruption(tmp_path):
    path = tmp_path / "f.bk"
    BloomFilter.open(path, "w+", capacity=200_000, error_rate=0.01, seed=9).close()
    writer = subprocess.Popen(
        [sys.executable, "-c", textwrap.dedent(KILLED_WRITER), str(path), "50000", "170600"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert writer.stdout.readline().strip() == "acknowledged"
    with BloomFilter.open(path, "r+") as other:  # another writer, closed before the kill
        other.update(keys(0, 50_000))
    assert path.read_bytes()[11] & OPEN_FOR_WRITING  # the killed one is still writing
    writer.communicate("kill\n", timeout=60)
    assert writer.returncode == -9
    acknowledged = keys(0, 170_600)
    # Before: "checksum mismatch: the data is corrupt" from both.
    for attempt in (lambda: bloomkit.load(path), lambda: BloomFilter.open(path, "r", verify=True)):
        with pytest.raises(ValueError, match=r"not closed cleanly.*the bits are valid.*open\(path, 'r\+'\)\.close\(\)"):
            attempt()
    with BloomFilter.open(path) as mapped:  # the bits are usable as they are
        assert mapped.contains_many(acknowledged).all()
    BloomFilter.open(path, "r+").close()  # the documented recovery
    recovered = bloomkit.load(path)
    assert int(recovered.contains_many(acknowledged).sum()) == 170_600
    ram = BloomFilter(200_000, 0.01, seed=9)
    ram.update(acknowledged)
    assert recovered == ram and path.read_bytes() == ram.to_bytes()


def test_the_last_writer_to_close_finishes_the_file(tmp_path):
    path = tmp_path / "f.bk"
    BloomFilter(10_000).save(path)
    first, second = BloomFilter.open(path, "r+"), BloomFilter.open(path, "r+")
    first.update(keys(0, 500))
    first.flush()  # another writer is open: the checksum is left to the last one
    with pytest.raises(ValueError, match="not closed cleanly"):
        bloomkit.load(path)
    first.close()
    assert path.read_bytes()[11] & OPEN_FOR_WRITING
    with pytest.raises(ValueError, match="not closed cleanly"):
        bloomkit.load(path)
    second.update(keys(500, 500))
    second.flush()  # the only writer: the file loads as it is, still marked open
    assert path.read_bytes()[11] & OPEN_FOR_WRITING
    assert bloomkit.load(path).contains_many(keys(0, 1_000)).all()
    second.close()
    ram = BloomFilter(10_000)
    ram.update(keys(0, 1_000))
    assert path.read_bytes() == ram.to_bytes()  # bit clear, checksum current


def test_a_corrupt_byte_is_still_corrupt(tmp_path):
    path = tmp_path / "f.bk"
    with BloomFilter.open(path, "w+", capacity=10_000) as f:
        f.update(keys(0, 1_000))
    good = bytearray(path.read_bytes())
    assert not good[11] & OPEN_FOR_WRITING
    good[200] ^= 0x10
    path.write_bytes(bytes(good))
    for attempt in (
        lambda: bloomkit.load(path),
        lambda: BloomFilter.from_bytes(bytes(good)),
        lambda: BloomFilter.open(path, "r", verify=True),
    ):
        with pytest.raises(ValueError, match="checksum mismatch: the data is corrupt"):
            attempt()


def test_a_rejected_file_is_not_marked(tmp_path):
    path = tmp_path / "f.bk"
    _, good = saved(path)
    bad = good[:60] + b"\1" + good[61:]  # the reserved params field
    path.write_bytes(bad)
    with pytest.raises(ValueError, match="reserved field is not zero"):
        BloomFilter.open(path, "r+")
    assert path.read_bytes() == bad
    path.write_bytes(good)
    with BloomFilter.open(path, "r+") as f:
        assert path.read_bytes()[11] & OPEN_FOR_WRITING
        assert f.to_bytes() == good  # a serialized frame never carries the bit
    assert path.read_bytes() == good


def test_w_plus_reserves_the_whole_file(tmp_path):
    path = tmp_path / "f.bk"
    with BloomFilter.open(path, "w+", capacity=1_000_000) as f:
        size = os.stat(path).st_size
        assert size == len(f.to_bytes())
        # Before: created sparse, a few blocks of a 1.2 MB file.
        assert os.stat(path).st_blocks * 512 >= size
        # Marked before it was renamed into place: never "corrupt" while being written.
        assert path.read_bytes()[11] & OPEN_FOR_WRITING
        with pytest.raises(ValueError, match="not closed cleanly"):
            bloomkit.load(path)
    assert np.count_nonzero(np.frombuffer(path.read_bytes()[64:-8], dtype=np.uint8)) == 0


def test_a_forked_child_closing_does_not_finish_the_parents_file(tmp_path):
    path = tmp_path / "f.bk"
    BloomFilter(10_000).save(path)
    f = BloomFilter.open(path, "r+")
    f.update(keys(0, 100))
    pid = os.fork()
    if pid == 0:  # the child shares the parent's open file, so its locks
        code = 1
        try:
            f.add("child")
            f.close()
            code = 0
        finally:
            os._exit(code)
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 0
    assert path.read_bytes()[11] & OPEN_FOR_WRITING  # the parent still writes
    with pytest.raises(ValueError, match="not closed cleanly"):
        bloomkit.load(path)
    BloomFilter.open(path, "r+").close()  # the parent's share of the lock is still held
    assert path.read_bytes()[11] & OPEN_FOR_WRITING
    f.add("parent")
    f.close()
    loaded = bloomkit.load(path)
    assert "child" in loaded and "parent" in loaded and loaded.contains_many(keys(0, 100)).all()
