"""The Python surface shared by every filter type.

Each public filter class subclasses this mixin and its C++ core class from
``bloomkit._core``. The core provides ``add``, ``contains``/``in``, ``clear``,
``to_bytes``, ``seed``, ``nbytes`` and the batch primitives ``_add_many``,
``_update``, ``_contains_many``; this mixin adds the batch entry points for
every input kind, copying, pickling, saving, equality and display.
"""

from __future__ import annotations

import functools
import os
import pickle
import threading

import numpy as np

from . import _batch, _capacity, _core, _display, _io, _keyed, _types


def load(path_or_bytes, *, secret_key=None):
    """Load any bloomkit filter from a file path or from bytes.

    The type is read from the header, then the whole frame is validated
    (lengths, checksum, parameters) before anything is allocated. Raises
    ``ValueError`` for anything that is not an intact bloomkit filter, and
    ``SecretKeyError`` (a ValueError) when ``secret_key`` is missing, wrong,
    or given for a filter built without one.
    """
    if isinstance(path_or_bytes, (str, os.PathLike)):
        return _io.load_file(path_or_bytes, secret_key)
    data = _io.read_frame(path_or_bytes)
    return _io.class_of_frame(data).from_bytes(data, secret_key=secret_key)


# Instances whose __init__ is running: id -> the thread running it. pybind11
# checks "not yet constructed" and constructs in two steps, which two threads
# calling __init__ on one instance (truly at once on free-threaded CPython)
# could both pass, each building a core and one leaking; claiming the
# instance first, under one short lock, lets exactly one build it. The
# claimant's own nested calls (a subclass's super().__init__) pass.
_initialising: dict[int, int] = {}
_initialising_lock = threading.Lock()


def _once(init):
    """Wrap a filter's ``__init__`` so that calling it on a live filter raises.

    pybind11 ignores a second ``__init__`` of an object whose C++ core
    exists, so ``f.__init__(10)`` would silently keep the old filter.
    """

    @functools.wraps(init)
    def __init__(self, *args, **kwargs):
        me = threading.get_ident()
        with _initialising_lock:
            claimant = _initialising.get(id(self))
            if _core._initialised(self) or claimant not in (None, me):
                raise TypeError(
                    f"{type(self).__name__} is already initialised: __init__ cannot be called twice "
                    "(create a new filter instead)"
                )
            _initialising[id(self)] = me
        try:
            init(self, *args, **kwargs)
        finally:
            if claimant is None:
                with _initialising_lock:
                    del _initialising[id(self)]

    return __init__


class FilterBase:
    """Mixin with the common API of docs/DESIGN.md; see the concrete classes."""

    __slots__ = ()
    _core_class = None  # the bloomkit._core class this filter wraps
    # Whether a protocol 5 pickle may view the filter's memory in place:
    # only for cores whose storage never moves while the object lives and
    # is freed only by a clear() the core refuses while views exist
    # (Bloom, counting: one fixed array; scalable: slices that stay put as
    # the chain grows), whose arrays a concurrent writer leaves loadable
    # (not cuckoo: cuckoo.py), and never a mapped file.
    _pickles_in_place = False
    # A type that never changes after it is built (bloomkit/_frozen.py
    # FrozenMixin sets it): its views cannot change after the dump, so its
    # pickle keeps the whole checksum.
    _frozen = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if "__init__" in cls.__dict__:
            cls.__init__ = _once(cls.__dict__["__init__"])

    # -- batches ---------------------------------------------------------
    def _key_batches(self, keys) -> list:
        """``keys`` as the batches this filter's core reads: bloomkit's key batches (bloomkit/_batch.py)."""
        return _batch.key_batches(keys)

    def add_many(self, keys) -> np.ndarray:
        """Insert every key in order; return, per key, whether it was (probably) present before.

        Keys are processed sequentially, so a key repeated in the batch
        reports ``True`` the second time: ``add_many(["x", "x"])`` gives
        ``[False, True]``. The whole batch is validated first: a bad key
        raises ``TypeError``/``ValueError`` and nothing is inserted.
        """
        batches = self._key_batches(keys)
        results = [self._add_many(batch) for batch in batches]
        self._check_capacity(2)
        return results[0] if len(results) == 1 else np.concatenate(results)

    def _first_seen_many(self, batch) -> np.ndarray:
        """Deduplicating test-and-set of one validated batch: per key, whether it was (probably) seen before.

        The batch method the type's row names (bloomkit/_types.py):
        ``_add_many`` for filters with set semantics, ``_add_new_many`` for
        a multiset (cuckoo), so that a repeated key is stored once.
        """
        return getattr(self, _types.row_of(type(self)).first_seen)(batch)

    def update(self, keys) -> None:
        """Insert every key (like :meth:`add_many` without the result array)."""
        for batch in self._key_batches(keys):
            self._update(batch)
        self._check_capacity(2)

    def _check_capacity(self, stacklevel: int = 1) -> None:
        """Warn (``CapacityWarning``, once per filter) if the filter is over capacity.

        Called after batches and, from C++, every ``SINGLE_ADD_CHECK_INTERVAL`` single-key adds;
        ``stacklevel`` counts frames from the caller of this method to the
        user's code.
        """
        _capacity.check(self, stacklevel + 1)

    @property
    def over_capacity(self) -> bool:
        """True when the estimated false-positive rate is over twice ``error_rate`` (see CapacityWarning)."""
        return _capacity.is_over_capacity(self)

    def contains_many(self, keys) -> np.ndarray:
        """Per key, whether it is (probably) in the filter, as a boolean array."""
        batches = self._key_batches(keys)
        results = [self._contains_many(batch) for batch in batches]
        return results[0] if len(results) == 1 else np.concatenate(results)

    # -- copies, pickling, persistence -----------------------------------
    def copy(self):
        """An independent copy of the filter."""
        duplicate = type(self).__new__(type(self))
        self._core_class.__init__(duplicate, self)
        return duplicate

    def __copy__(self):
        return self.copy()

    def __deepcopy__(self, memo):
        return self.copy()

    @classmethod
    def from_bytes(cls, data, *, secret_key=None):
        """Rebuild a filter from :meth:`to_bytes` output; ``ValueError`` if the data is not intact.

        A filter built with ``secret_key=`` needs the same ``secret_key``
        here (``SecretKeyError`` otherwise).
        """
        key = _keyed.master_key(secret_key)
        instance = cls.__new__(cls)
        cls._core_class.__init__(instance, data, key=key)
        return instance

    @classmethod
    def _from_frame_parts(cls, *parts):
        """Rebuild a filter from the pieces of a frame (a protocol 5 pickle), reading each byte once."""
        instance = cls.__new__(cls)
        cls._core_class.__init__(instance, parts=parts)
        return instance

    @classmethod
    def _from_live_frame_parts(cls, check, live, *parts):
        """Rebuild a filter from a protocol 5 pickle whose parts ``live`` were read after its checksum.

        ``check`` covers every other part; the frame's checksum is not
        required to match the live parts (docs/RELIABILITY.md).
        """
        instance = cls.__new__(cls)
        cls._core_class.__init__(instance, parts=parts, live=live, check=check)
        return instance

    def __reduce_ex__(self, protocol):
        # Pickles as (class.from_bytes, (frame,)): unpickling runs only the
        # validating deserializer, never code from the pickle. With protocol
        # 5 the frame is a PickleBuffer, so a pickler with a buffer_callback
        # passes it out of band without copying it into the stream; where
        # the storage cannot move (_pickles_in_place), the frame goes as
        # pieces whose large ones are PickleBuffers over the filter's own
        # memory, so not even to_bytes()'s copy is made (PEP 574). A keyed
        # filter refuses: its key must not travel with it.
        _keyed.refuse_pickle(self)
        if protocol >= 5 and self._pickles_in_place and getattr(self, "_file", None) is None:
            parts = self._frame_parts()
            views = tuple(pickle.PickleBuffer(p) if not isinstance(p, bytes) else p for p in parts)
            live = tuple(i for i, p in enumerate(parts) if not isinstance(p, bytes))
            if self._frozen or not live or self._views_are_snapshots:
                # Nothing can change what the views show (copy-on-write
                # arrays: the core's _views_are_snapshots): the frame's
                # checksum covers them and the load verifies it.
                return (type(self)._from_frame_parts, views)
            # The views are read after this checksum was computed (by the
            # pickler, or by the consumer of out-of-band buffers): a writer
            # in between changes them. So the pickle says which parts are
            # live and carries a check of all the others, which were copied
            # here; the load verifies that, and every field, but not the
            # frame's checksum over the live arrays (docs/RELIABILITY.md).
            check = _core._fixed_parts_check(parts, live)
            return (type(self)._from_live_frame_parts, (check, live, *views))
        frame = self.to_bytes()
        if protocol >= 5:
            frame = pickle.PickleBuffer(frame)
        return (type(self).from_bytes, (frame,))

    def __reduce__(self):
        return self.__reduce_ex__(2)

    def save(self, path) -> None:
        """Write the filter to ``path`` atomically (temporary file, fsync, rename).

        An existing file keeps its mode (and owner, where allowed); a symlink
        is followed and its target replaced; directories, devices, FIFOs and
        sockets are refused (``IsADirectoryError`` / ``ValueError``).
        """
        _io.atomic_write(path, self._stream_to)

    def _stream_to(self, handle) -> None:
        """Write the frame to an open binary file, streamed from the filter's memory (no copy)."""
        handle.flush()
        self._write_frame(handle.fileno())

    @classmethod
    def load(cls, path, *, secret_key=None):
        """Read a filter of this type saved with :meth:`save` (with its ``secret_key``, if it has one)."""
        if isinstance(path, (str, os.PathLike)):
            return _io.load_file(path, secret_key, expected=cls)
        return cls.from_bytes(_io.read_frame(path), secret_key=secret_key)

    # -- comparison ------------------------------------------------------
    def __eq__(self, other):
        if type(other) is not type(self):
            return NotImplemented
        return self._equals(other)

    def __ne__(self, other):
        result = self.__eq__(other)
        return result if result is NotImplemented else not result

    __hash__ = None  # mutable, like set

    # -- display ---------------------------------------------------------
    def _summary(self) -> dict:
        """Label -> value rows shown by repr and _repr_html_."""
        raise NotImplementedError

    def _display_rows(self) -> dict:
        """``_summary()`` plus the capacity state, for repr, Jupyter and the CLI."""
        return {**self._summary(), "state": _capacity.state(self)}

    def __repr__(self) -> str:
        return _display.one_line(type(self).__name__, self._display_rows())

    def _repr_html_(self) -> str:
        return _display.html_table(type(self).__name__, self._display_rows())
