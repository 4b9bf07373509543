"""File-backed Bloom filters: BloomFilter.open in modes "r", "r+" and "w+".

Round-trips against save()/load(), four processes adding into one shared
file, refusal of writes to a read-only mapping, closed-filter errors,
corrupt files, and the memory a read-only mapping costs.
"""

import io
import multiprocessing
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bloomkit
from bloomkit import BloomFilter

LAYOUTS = ["classic", "blocked512", "split_block"]


def keys(start, count):
    return [f"key-{i}" for i in range(start, start + count)]


@pytest.mark.parametrize("layout", LAYOUTS)
def test_open_read_answers_like_the_saved_filter(tmp_path, layout):
    ram = BloomFilter(20_000, 0.01, seed=7, layout=layout)
    ram.update(keys(0, 20_000))
    path = tmp_path / "f.bk"
    ram.save(path)
    with BloomFilter.open(path) as mapped:
        probe = keys(10_000, 20_000)
        assert np.array_equal(mapped.contains_many(probe), ram.contains_many(probe))
        assert all(k in mapped for k in keys(0, 20_000))
        assert (mapped.num_bits, mapped.num_hashes, mapped.seed, mapped.layout) == (
            ram.num_bits,
            ram.num_hashes,
            7,
            layout,
        )
        assert (mapped.capacity, mapped.error_rate) == (ram.capacity, ram.error_rate)
        assert mapped == ram
        assert mapped.to_bytes() == ram.to_bytes()
        assert len(mapped) == len(ram)
        copied = mapped.copy()
        assert copied == ram and len(copied) == len(ram) and copied._set_bits == ram._set_bits
        copied.add("only in the copy")
        assert "only in the copy" not in mapped
    assert path.read_bytes() == ram.to_bytes()  # "r" never writes


@pytest.mark.parametrize("layout", LAYOUTS)
def test_create_then_close_equals_ram_build_byte_for_byte(tmp_path, layout):
    path = tmp_path / "new.bk"
    with BloomFilter.open(path, "w+", capacity=50_000, error_rate=0.001, seed=3, layout=layout) as mapped:
        first = mapped.add_many(keys(0, 30_000) + keys(0, 10))
        assert mapped.add("key-1") is True
        assert mapped.add("fresh") is False
    ram = BloomFilter(50_000, 0.001, seed=3, layout=layout)
    expected = ram.add_many(keys(0, 30_000) + keys(0, 10))
    ram.add("key-1")
    ram.add("fresh")
    assert np.array_equal(first, expected)  # test-and-set results of the atomic path
    assert path.read_bytes() == ram.to_bytes()
    assert BloomFilter.load(path) == ram


def test_flush_makes_the_file_loadable_while_open(tmp_path):
    path = tmp_path / "f.bk"
    f = BloomFilter.open(path, "w+", capacity=1000)
    f.update(keys(0, 500))
    f.flush()
    assert BloomFilter.load(path) == f
    f.add("later")
    f.flush()
    assert "later" in BloomFilter.load(path)
    f.close()


def test_reopen_read_write_keeps_and_extends(tmp_path):
    path = tmp_path / "f.bk"
    BloomFilter(10_000).save(path)
    with BloomFilter.open(path, "r+") as f:
        f.update(keys(0, 1000))
    with BloomFilter.open(path, "r+", verify=True) as f:
        assert all(f.contains_many(keys(0, 1000)))
        f |= BloomFilter(10_000)
    ram = BloomFilter(10_000)
    ram.update(keys(0, 1000))
    assert path.read_bytes() == ram.to_bytes()


def _add_worker(path, start, count):
    with BloomFilter.open(path, "r+") as f:
        for chunk in range(start, start + count, 5_000):
            f.update(keys(chunk, min(5_000, start + count - chunk)))
        # single-key adds take the atomic path too
        for k in keys(start, 200):
            f.add(k)


def _check_worker(path, total, queue):
    with BloomFilter.open(path) as f:
        queue.put(int(f.contains_many(keys(0, total)).sum()))


@pytest.mark.filterwarnings("ignore::bloomkit.CapacityWarning")
@pytest.mark.parametrize("layout", LAYOUTS)
def test_four_processes_add_into_one_shared_file(tmp_path, layout):
    path = str(tmp_path / "shared.bk")
    per_process, workers = 50_000, 4
    total = per_process * workers
    # A small filter relative to the keys: many words are written by
    # several processes at once, so a non-atomic OR would lose bits.
    BloomFilter.open(path, "w+", capacity=total // 2, error_rate=0.01, layout=layout).close()
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=_add_worker, args=(path, i * per_process, per_process)) for i in range(workers)]
    for p in procs:
        p.start()
    for p in procs:
        p.join(120)
        assert p.exitcode == 0
    queue = ctx.Queue()
    checker = ctx.Process(target=_check_worker, args=(path, total, queue))
    checker.start()
    found = queue.get(timeout=120)
    checker.join(60)
    assert found == total  # no false negatives: no lost bits
    ram = BloomFilter(total // 2, 0.01, layout=layout)
    ram.update(keys(0, total))
    with BloomFilter.open(path) as mapped:
        assert mapped == ram
    # The last writer's close() wrote the checksum over the union.
    assert open(path, "rb").read() == ram.to_bytes()


WRITES = [
    ("add", lambda f: f.add("x")),
    ("add_many", lambda f: f.add_many(["x", "y"])),
    ("update", lambda f: f.update(["x", "y"])),
    ("clear", lambda f: f.clear()),
    ("ior", lambda f: f.__ior__(BloomFilter(1000))),
    ("iand", lambda f: f.__iand__(BloomFilter(1000))),
    ("assign_payload", lambda f: f._assign_payload(BloomFilter(1000)._payload())),
]


@pytest.mark.parametrize("name, write", WRITES, ids=[w[0] for w in WRITES])
def test_writes_to_read_only_raise_and_change_nothing(tmp_path, name, write):
    ram = BloomFilter(1000)
    ram.update(["a", "b"])
    path = tmp_path / "f.bk"
    ram.save(path)
    before = path.read_bytes()
    with BloomFilter.open(path, "r") as f:
        with pytest.raises(io.UnsupportedOperation, match=r"read-only \(opened with mode 'r'\)|cannot be replaced"):
            write(f)
        assert f == ram
        assert "a" in f and "x" not in f
    assert path.read_bytes() == before


CLOSED_USES = [
    ("add", lambda f: f.add("x")),
    ("contains", lambda f: "x" in f),
    ("contains_many", lambda f: f.contains_many(["x"])),
    ("update", lambda f: f.update(["x"])),
    ("len", len),
    ("to_bytes", lambda f: f.to_bytes()),
    ("flush", lambda f: f.flush()),
    ("eq", lambda f: f == BloomFilter(1000)),
    ("ior", lambda f: f.__ior__(BloomFilter(1000))),
    ("save", lambda f: f.save(os.devnull + "-never")),
]


@pytest.mark.parametrize("mode", ["r", "r+"])
@pytest.mark.parametrize("name, use", CLOSED_USES, ids=[c[0] for c in CLOSED_USES])
def test_closed_filter_raises_value_error(tmp_path, mode, name, use):
    path = tmp_path / "f.bk"
    BloomFilter(1000).save(path)
    f = BloomFilter.open(path, mode)
    f.close()
    assert f.closed
    f.close()  # twice is fine
    with pytest.raises(ValueError, match="I/O operation on closed filter"):
        use(f)
    assert "closed" in repr(f)


def test_close_waits_for_a_running_batch(tmp_path):
    import threading

    path = tmp_path / "f.bk"
    f = BloomFilter.open(path, "w+", capacity=2_000_000)
    batch = np.arange(2_000_000, dtype=np.uint64)
    errors = []

    def adder():
        try:
            for _ in range(3):
                f.update(batch)
        except ValueError as error:  # a batch that starts after close
            errors.append(str(error))

    t = threading.Thread(target=adder)
    t.start()
    f.close()
    t.join()
    assert all(e == "I/O operation on closed filter" for e in errors)
    with BloomFilter.open(path, verify=True) as g:  # close flushed a consistent file
        assert g.contains_many(batch).all() or not g.contains_many(batch).any()


def test_bad_mode_and_arguments(tmp_path):
    path = tmp_path / "f.bk"
    with pytest.raises(ValueError, match="mode must be 'r', 'r\\+' or 'w\\+', got 'w'"):
        BloomFilter.open(path, "w")
    with pytest.raises(TypeError, match="capacity is required"):
        BloomFilter.open(path, "w+")
    with pytest.raises(FileNotFoundError):
        BloomFilter.open(path)
    BloomFilter(100).save(path)
    with pytest.raises(TypeError, match="capacity and layout are for mode 'w\\+'"):
        BloomFilter.open(path, "r", capacity=10)


def _saved(tmp_path):
    # Classic: 9,586 bits leave spare bits in the last word (a blocked layout's bits fill whole words).
    f = BloomFilter(1000, seed=1, layout="classic")
    f.update(keys(0, 100))
    path = tmp_path / "f.bk"
    f.save(path)
    return path, bytearray(path.read_bytes())


@pytest.mark.parametrize("mode", ["r", "r+"])
def test_corrupt_and_truncated_files_are_rejected(tmp_path, mode):
    path, good = _saved(tmp_path)
    cases = {
        "truncated": (good[:-1], "file has"),
        "extended": (good + b"\0", "file has"),
        "magic": (b"X" + good[1:], "bad magic"),
        "short": (good[:10], "shorter than"),
        "num_hashes": (good[:32] + (0).to_bytes(4, "little") + good[36:], "num_hashes"),
        "reserved": (good[:60] + b"\1" + good[61:], "reserved field is not zero"),
        "last word": (good[:-9] + b"\xff" + good[-8:], "bits set beyond num_bits"),
    }
    for name, (data, message) in cases.items():
        path.write_bytes(bytes(data))
        with pytest.raises(ValueError, match=message):
            BloomFilter.open(path, mode)
        assert path.read_bytes() == bytes(data), name
    # A flipped payload bit passes unless the checksum is asked for.
    flipped = bytearray(good)
    flipped[100] ^= 1
    path.write_bytes(bytes(flipped))
    BloomFilter.open(path, mode).close() if mode == "r" else None
    with pytest.raises(ValueError, match="checksum mismatch"):
        BloomFilter.open(path, mode, verify=True)


def test_other_filter_type_and_version_1_are_rejected(tmp_path):
    path = tmp_path / "c.bk"
    bloomkit.CountingBloomFilter(100).save(path)
    with pytest.raises(ValueError, match="holds a CountingBloomFilter, not a BloomFilter"):
        BloomFilter.open(path)


RSS_SCRIPT = textwrap.dedent(
    """
    import sys
    from bloomkit import BloomFilter

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * 4096

    path = sys.argv[1]
    before = rss()
    f = BloomFilter.open(path)
    opened = rss()
    hits = int(f.contains_many([f"q{i}" for i in range(100_000)]).sum())
    after = rss()
    print(opened - before, after - before, hits, f.nbytes)
    """
)


@pytest.mark.statistical
@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc/self/statm")
def test_read_only_open_of_a_large_file_touches_only_what_it_reads(tmp_path):
    path = tmp_path / "big.bk"
    # ~2 GiB of bits: disk space reserved (posix_fallocate), nothing of it
    # written or allocated in memory (close() then reads it once for the checksum).
    capacity = 2 * 2**30 * 8 // 10
    BloomFilter.open(path, "w+", capacity=capacity, error_rate=0.01, layout="blocked512").close()
    size = path.stat().st_size
    assert size >= 2**30
    # close() read the whole file for the checksum; drop it from the page
    # cache (it is clean after msync) so the reader starts cold, as a big
    # filter opened by a new process usually does. Pages already cached
    # would be mapped by the kernel's fault-around, 16 per fault.
    descriptor = os.open(path, os.O_RDONLY)
    try:
        os.posix_fadvise(descriptor, 0, 0, os.POSIX_FADV_DONTNEED)
    finally:
        os.close(descriptor)
    out = subprocess.run([sys.executable, "-c", RSS_SCRIPT, str(path)], capture_output=True, text=True, check=True)
    open_growth, growth, hits, nbytes = map(int, out.stdout.split())
    assert hits == 0  # an empty filter
    assert nbytes >= 2**30
    assert open_growth < 16 * 2**20  # opening reads a header and one page, not the file
    # 10^5 lookups (one 64-byte block each) touch ~91,000 distinct 4 KiB
    # pages of 524,288 (1 - e^(-10^5/524288)): ~17 % of the file.
    assert growth < size // 4, (growth, size)
