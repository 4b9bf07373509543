"""API misuse that used to crash: threads, released buffers, uninitialised objects (issue 10, defects 3-5, 9).

Crash-prone checks run in a subprocess, so a regression shows up as a
failed test with the child's exit status instead of killing pytest.
"""

from __future__ import annotations

import inspect
import pickle

import numpy as np
import pytest

import bloomkit
from bloomkit import _types
from support import ALL_TYPES, assert_exits_cleanly, growable, run_python


def a_filter(cls, capacity: int, keys=()):
    """A filter of ``cls`` holding ``keys``: a growable one updated, or a frozen one built from them (the registry's)."""
    row = _types.row_of(cls)
    if not row.mutable:
        return row.build(list(keys), capacity)
    f = growable(cls, capacity)
    f.update(list(keys))
    return f


# -- defect 3: GIL discipline ------------------------------------------------

METADATA_RACE = """
    import sys, threading, time
    import numpy as np
    import bloomkit

    from bloomkit import _types

    row = _types.BY_NAME[sys.argv[1]]
    cls = row.cls
    keys = np.arange(50_000, dtype=np.uint64)
    if not row.mutable:
        f = row.build(keys, 50_000)  # frozen: built once, its batches are lookups
        try:
            f.add("k")
        except TypeError as exc:
            assert "build" in str(exc), exc
        else:
            raise AssertionError("add() on a frozen filter did not raise")
    elif row.growable or row.unbounded_options:  # grows past 1000 keys
        f = row.make(1000, 0.01, unbounded=True)
    else:
        f = row.make(200_000, 0.01)
    stop = time.monotonic() + 1.5
    errors = []
    reads_per_thread = []  # printed once by the main thread: two threads' prints interleave

    def batches():
        i = 0
        while time.monotonic() < stop:
            if row.mutable:
                try:
                    f.update(keys + np.uint64(i * 50_000))
                except bloomkit.FilterFullError:
                    f.clear()
            elif not f.contains_many(keys).all():
                errors.append("a built key went missing")
            f.contains_many(keys)
            i += 1

    def metadata():
        reads = 0
        while time.monotonic() < stop:
            repr(f); f._repr_html_(); f.nbytes; len(f); f.estimated_fpr()
            for name in ("num_stages", "_stages", "num_slices", "slices", "capacity", "fill_ratio", "load_factor", "is_full"):
                getattr(f, name, None)
            reads += 1
        reads_per_thread.append(reads)

    threads = [threading.Thread(target=batches) for _ in range(4)] + [threading.Thread(target=metadata) for _ in range(2)]
    for t in threads: t.start()
    for t in threads: t.join()
    assert not errors, errors
    assert len(reads_per_thread) == 2, reads_per_thread  # a reader that raised appends nothing
    print("reads", min(reads_per_thread))
    print("ok")
"""


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_metadata_reads_during_concurrent_batches(cls):
    # CuckooFilter built its _stages list (Python objects) inside the guard
    # with the GIL released: a segfault with a concurrent batch, 3 runs in 3.
    # 4 threads of batches and 2 of metadata reads on one filter for 1.5 s.
    result = run_python(METADATA_RACE.replace("sys.argv[1]", repr(_types.row_of(cls).name)))
    assert result.returncode == 0, result.stderr[-2000:]
    assert result.stdout.strip().endswith("ok")
    assert int(result.stdout.split()[1]) > 0  # the slower metadata thread read at least once


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_interpreter_exit_with_a_daemon_thread_inside_a_batch(cls):
    # Was "terminate called without an active exception", status 134: the
    # daemon thread re-acquiring the GIL at exit was ended by pthread_exit
    # inside a noexcept destructor.
    source = f"""
        import threading, time
        import numpy as np
        import bloomkit
        from bloomkit import _types
        row = _types.BY_NAME[{_types.row_of(cls).name!r}]
        cls = row.cls
        keys = np.arange(1_000_000, dtype=np.uint64)
        if not row.mutable:
            f = row.build(keys[:1000], 1000)  # frozen: its batches are lookups
        elif row.growable or row.unbounded_options:  # grows past 1000 keys
            f = row.make(1000, 0.01, unbounded=True)
        else:
            f = row.make(2_000_000, 0.01)
        def work():
            while True:
                f.contains_many(keys)
                if row.mutable:
                    try:
                        f.update(keys[:1000])
                    except bloomkit.FilterFullError:
                        f.clear()
        for _ in range(2):
            threading.Thread(target=work, daemon=True).start()
        time.sleep(0.3)
        print("exiting")
    """
    assert_exits_cleanly(source)


# -- defect 4: buffers -------------------------------------------------------


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_released_memoryview_is_refused(cls):
    mutable = _types.row_of(cls).mutable
    f = a_filter(cls, 100)
    view = memoryview(bytearray(b"key-bytes"))
    view.release()
    lookups = (f.contains, f.__contains__, lambda k: f.contains_many(["a", k]))
    writes = (f.add, lambda k: f.update([k]))
    for call in lookups + writes if mutable else lookups:
        with pytest.raises(ValueError, match="is a released or unreadable memoryview"):
            call(view)
    if not mutable:  # a frozen filter refuses any write, whatever the key
        for call in writes:
            with pytest.raises(TypeError, match="build"):
                call(view)
    with pytest.raises(ValueError, match="released"):
        bloomkit.canonical_bytes(view)


def test_memoryview_key_holds_its_buffer():
    # While a key's buffer is being hashed it is exported: the bytearray
    # behind it cannot be resized under it.
    data = bytearray(b"abc")
    view = memoryview(data)
    f = bloomkit.BloomFilter(100)
    f.add(view)
    assert b"abc" in f
    view.release()
    data.extend(b"more")  # no export is left behind after the call


@pytest.mark.parametrize(
    "rewritten, keys",
    [
        # far past the data: every read is clamped to its end
        ([0, 2**40, 2**41, 2**62], [b"alphabetagamma", b"", b""]),
        # going backwards, and negative: an end below its begin is the empty key there
        ([10, 3, 14, -7], [b"", b"habetagamma", b""]),
    ],
)
def test_offset_batch_offsets_rewritten_after_validation_never_read_outside_the_data(rewritten, keys):
    """Offsets are read in place (no copy): another thread may rewrite them after the
    check, and then each key is read clamped into the data buffer, never outside it."""
    data = np.frombuffer(b"alphabetagamma", dtype=np.uint8).copy()
    for dtype in (np.int64, np.int32):
        offsets = np.array([0, 5, 9, 14], dtype=dtype)
        batch = bloomkit._core.OffsetBatch(data, offsets)
        offsets[:] = np.clip(rewritten, np.iinfo(dtype).min, np.iinfo(dtype).max)
        f = bloomkit.BloomFilter(100, layout="classic")
        f.update(batch)
        expected = bloomkit.BloomFilter(100, layout="classic")
        expected.update(keys)
        assert f == expected


def test_offset_batch_refuses_offsets_outside_the_data_when_built():
    data = np.frombuffer(b"alphabeta", dtype=np.uint8).copy()
    with pytest.raises(ValueError, match="not monotone inside the data at index 2"):
        bloomkit._core.OffsetBatch(data, np.array([0, 5, 10], dtype=np.int64))
    with pytest.raises(ValueError, match="offset 0 is outside the data"):
        bloomkit._core.OffsetBatch(data, np.array([-1, 5], dtype=np.int32))


def test_offset_batch_holds_its_data_buffer():
    data = bytearray(b"alphabeta")
    batch = bloomkit._core.OffsetBatch(data, np.array([0, 5, 9], dtype=np.int32))
    with pytest.raises(BufferError):
        data.extend(b"x" * 10_000)  # would move the memory the batch reads
    f = bloomkit.CuckooFilter(100)
    f.update(batch)
    assert "alpha" in f and "beta" in f


# -- defect 5: uninitialised instances -------------------------------------

ARGUMENTS = {
    "add": ("k",),
    "contains": ("k",),
    "__contains__": ("k",),
    "remove": ("k",),
    "discard": ("k",),
    "count": ("k",),
    "update": (["k"],),
    "add_many": (["k"],),
    "contains_many": (["k"],),
    "remove_many": (["k"],),
    "save": ("unused.bkf",),
    "__eq__": (None,),
    "__ne__": (None,),
    "union": (),
    "intersection": (),
    "__reduce_ex__": (5,),
    "__deepcopy__": ({},),
    "add_new_many": (["k"],),
    "add_new": ("k",),
    "positions": (["k"],),
    "to_redis": (None,),
    "to_spark_bytes": (),
}
NOT_ABOUT_STATE = {
    "from_bytes",
    "load",
    "open",
    "from_params",
    "from_spark_bytes",
    "from_orc_bytes",
    "from_redis",
    "from_arrow",
    "build",
    "freeze",
    "__init__",
    "__init_subclass__",
    "__new__",
    "__class__",
    "__subclasshook__",
    "__getattribute__",
    "__setattr__",
    "__delattr__",
    "__dir__",
    "__format__",
    "__sizeof__",
    "__getstate__",
    "__reduce__",
    "__hash__",
    "__str__",
    "__lt__",
    "__le__",
    "__gt__",
    "__ge__",
    "__ior__",
    "__iand__",
    "__or__",
    "__and__",
    "_repr_html_",
}


# The writes a frozen type (its row's ``mutable=False``) refuses before
# anything else, pointing at its ``build`` (docs/RELIABILITY.md, "Misuse").
WRITES = {"add", "add_many", "update", "clear", "add_new", "add_new_many", "remove", "discard", "remove_many"}


def refusal(cls, name: str) -> str:
    """The TypeError message ``name`` raises on an uninitialised ``cls``."""
    if name in WRITES and not _types.row_of(cls).mutable:
        return rf"^{cls.__name__} is immutable: {name}\(\) is not supported; .*{cls.__name__}\.build\(keys\)"
    return rf"^{cls.__name__} object is not initialised \(__init__ was not called\)$"


def arguments_for(method, tmp_path) -> tuple:
    """Plausible arguments for a method not listed in ARGUMENTS, from its parameter names."""
    try:
        parameters = inspect.signature(method).parameters.values()
    except (TypeError, ValueError):
        return ()
    args = []
    for parameter in parameters:
        if parameter.default is not inspect.Parameter.empty or parameter.kind in (
            parameter.VAR_POSITIONAL,
            parameter.VAR_KEYWORD,
            parameter.KEYWORD_ONLY,
        ):
            continue
        name = parameter.name
        args.append(
            ["k"]
            if "keys" in name or "values" in name
            else "k"
            if "key" in name
            else tmp_path / "x"
            if "path" in name
            else None
        )
    return tuple(args)


def public_surface(cls):
    names = [n for n in dir(cls) if not n.startswith("_") or n in ARGUMENTS or n in ("__len__", "__repr__", "__copy__")]
    return [n for n in names if n not in NOT_ABOUT_STATE]


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_every_method_and_property_of_an_uninitialised_instance_raises_type_error(cls, tmp_path):
    names = public_surface(cls)
    assert len(names) >= 15
    for name in names:
        instance = cls.__new__(cls)
        attribute = inspect.getattr_static(cls, name)
        with pytest.raises(TypeError, match=refusal(cls, name)):
            if isinstance(attribute, property) or type(attribute).__name__ in (
                "getset_descriptor",
                "member_descriptor",
            ):
                getattr(instance, name)
            else:
                value = getattr(instance, name)
                if not callable(value):
                    continue
                args = ARGUMENTS.get(name) or arguments_for(value, tmp_path)
                if name in ("__eq__", "__ne__"):
                    args = (a_filter(cls, 100),)
                if name == "save":
                    args = (tmp_path / "x.bkf",)
                value(*args)
    # The operations of the report, spelled out.
    instance = cls.__new__(cls)
    for operation in (len, repr, pickle.dumps, lambda f: f.nbytes):
        with pytest.raises(TypeError, match="not initialised"):
            operation(instance)
    for name, operation in (("clear", lambda f: f.clear()), ("update", lambda f: f.update(["a"]))):
        with pytest.raises(TypeError, match=refusal(cls, name)):
            operation(instance)
    # An initialised filter given an uninitialised operand refuses it too.
    if cls in (bloomkit.BloomFilter, bloomkit.CountingBloomFilter):
        with pytest.raises(TypeError, match="not initialised"):
            growable(cls, 100) | cls.__new__(cls)


# -- defect 9: a second __init__ -------------------------------------------


@pytest.mark.parametrize("cls", ALL_TYPES, ids=lambda c: c.__name__)
def test_second_init_raises_and_keeps_the_filter(cls):
    f = a_filter(cls, 100, ["kept"])
    if not _types.row_of(cls).mutable:
        with pytest.raises(TypeError, match="build"):
            f.add("more")
    assert "kept" in f
    before = f.to_bytes()
    with pytest.raises(TypeError, match=rf"^{cls.__name__} is already initialised: __init__ cannot be called twice"):
        f.__init__(5000)
    assert f.to_bytes() == before


def test_subclass_init_calling_super_still_works():
    class Named(bloomkit.BloomFilter):
        def __init__(self, name):
            super().__init__(1000, 0.01)
            self.name = name

    f = Named("seen")
    f.add("x")
    assert "x" in f and f.name == "seen"
    with pytest.raises(TypeError, match="already initialised"):
        f.__init__("again")
