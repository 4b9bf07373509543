"""The binary fuse filter: a frozen set, built once from all of its keys (Graf & Lemire, 2022)."""

from __future__ import annotations

import itertools
import os

from . import _batch, _core, _keyed, calc
from ._base import FilterBase
from ._frozen import FrozenMixin

__all__ = ["BinaryFuseFilter"]

# Keys per batch when freeze() reads an iterable: large enough that the
# per-batch call costs nothing, small enough that the Python objects of one
# batch (~60 bytes each for short strings) stay far below the 8 bytes per key
# that the collected hashes take for the whole set.
FREEZE_BATCH = 1 << 16


def _check_bits(fingerprint_bits) -> int:
    if isinstance(fingerprint_bits, bool) or fingerprint_bits not in (8, 16):
        raise ValueError(f"fingerprint_bits must be 8 or 16, got {fingerprint_bits!r}")
    return int(fingerprint_bits)


class BinaryFuseFilter(FrozenMixin, FilterBase, _core.BinaryFuseCore):
    """A binary fuse filter: the smallest, fastest filter for a set that never changes.

    Built once from every key with :meth:`build` (or :meth:`freeze` for an
    iterable too large to hold as one batch), then only queried: ``in``,
    :meth:`contains_many`, ``len``, bytes, files, :meth:`open` (mapped
    read-only), pickling. Every key given tests positive; an absent key
    tests positive with probability ``2**-fingerprint_bits`` (0.39 % with
    8 bits, 0.0015 % with 16), at ~9.0 and ~18.0 bits per key for large
    sets (1.125 cells per key; small sets need up to ~1.5x more).

    It is immutable: ``add``, ``add_many``, ``update`` and ``clear`` raise
    ``TypeError``. To change the set, build a new filter from all its keys.

    Examples
    --------
    >>> f = BinaryFuseFilter.build(["alice", "bob", "alice"])
    >>> "alice" in f, len(f)
    (True, 2)
    >>> f.add("carol")
    Traceback (most recent call last):
    ...
    TypeError: BinaryFuseFilter is immutable: add() is not supported; build a new filter from every key with BinaryFuseFilter.build(keys) (or BinaryFuseFilter.freeze(iterable))
    """

    _core_class = _core.BinaryFuseCore
    # The fingerprint array never moves and is never freed while the object
    # lives (a mapped one is kept alive by its views), so a protocol 5 pickle
    # views it in place; the array never changes, so that pickle keeps the
    # frame's whole checksum.
    _pickles_in_place = True
    _build_advice = "BinaryFuseFilter.build(keys) (or BinaryFuseFilter.freeze(iterable))"

    def __init__(self, *args, **kwargs):
        raise TypeError(
            "BinaryFuseFilter is built from all of its keys at once: use BinaryFuseFilter.build(keys), "
            "BinaryFuseFilter.freeze(iterable) or BinaryFuseFilter.load(path)"
        )

    @classmethod
    def build(cls, keys, *, fingerprint_bits=8, seed=0, secret_key=None):
        """The filter of ``keys``: any batch input (NumPy, Arrow incl. chunked, lists, pandas/polars Series).

        Duplicate keys are allowed (stored once). ``fingerprint_bits`` is 8
        or 16; ``seed`` the MurmurHash3 seed in [0, 2**32); ``secret_key``
        hashes keys with SipHash as for every filter type. The whole batch
        is validated before anything is built; construction holds 8 bytes
        of hashes per key plus ~30 bytes of scratch per key while it runs.
        """
        collected = cls._collector(fingerprint_bits, seed, secret_key)
        for batch in _batch.key_batches(keys):
            collected._add(batch)
        return cls._from_collected(collected, fingerprint_bits)

    @classmethod
    def freeze(cls, keys, *, fingerprint_bits=8, seed=0, secret_key=None):
        """The filter of the keys an iterable yields (a generator, a file's lines...), read batch by batch.

        Only the 64-bit hash of each key is kept (8 bytes per key), never the
        keys: a stream of long strings too large for memory as Python
        objects still builds. Same arguments and result as :meth:`build`.
        """
        collected = cls._collector(fingerprint_bits, seed, secret_key)
        iterator = iter(keys)
        while True:
            batch = list(itertools.islice(iterator, FREEZE_BATCH))
            if not batch:
                break
            collected._add(batch)
        return cls._from_collected(collected, fingerprint_bits)

    @staticmethod
    def _collector(fingerprint_bits, seed, secret_key):
        _check_bits(fingerprint_bits)
        return _core.BinaryFuseKeys(calc.check_seed(seed), key=_keyed.master_key(secret_key))

    @classmethod
    def _from_collected(cls, collected, fingerprint_bits):
        instance = cls.__new__(cls)
        _core.BinaryFuseCore.__init__(instance, collected, _check_bits(fingerprint_bits))
        return instance

    @classmethod
    def open(cls, path, *, verify=False, secret_key=None):
        """A filter whose fingerprints are the file at ``path``, mapped read-only (no copy).

        Opening is O(1) in the filter size: header, lengths and parameters
        are validated (``ValueError``), the checksum (which reads the whole
        file) only with ``verify=True``. Memory grows only by the pages
        lookups touch, shared by every process that maps the file. The
        mapping is released when the filter is garbage collected.
        """
        key = _keyed.master_key(secret_key)
        name = os.fsdecode(os.fspath(path))
        with open(path, "rb") as handle:
            try:
                file = _core.MappedFile(handle.fileno(), name, "r")
            except ValueError as error:
                raise ValueError(f"{name}: {error}") from None
        instance = cls.__new__(cls)
        try:
            _core.BinaryFuseCore.__init__(instance, file, bool(verify), key=key)
        except ValueError as error:  # SecretKeyError stays one
            raise type(error)(f"{name}: {error}") from None
        return instance

    # -- state -----------------------------------------------------------
    @property
    def error_rate(self) -> float:
        """The false-positive rate, fixed by the fingerprint width: ``2**-fingerprint_bits``."""
        return 2.0**-self.fingerprint_bits

    def estimated_fpr(self) -> float:
        """Same as :attr:`error_rate`: a frozen filter's rate never changes."""
        return self.error_rate

    @property
    def bits_per_key(self) -> float:
        """Fingerprint bits per distinct key (``array_length * fingerprint_bits / len``)."""
        return self.array_length * self.fingerprint_bits / max(1, len(self))

    def _summary(self) -> dict:
        return {
            "keys": len(self),
            "fingerprint_bits": self.fingerprint_bits,
            "error_rate": self.error_rate,
            "bits_per_key": self.bits_per_key,
            "segment_length": self.segment_length,
            "segment_count": self.segment_count,
            "nbytes": self.nbytes,
            "seed": self.seed,
            "mapped": self.mapped,
        }

    def _display_rows(self) -> dict:
        return {**self._summary(), "state": "frozen"}
