"""The standard Bloom filter and the set estimates built on it."""

from __future__ import annotations

import numpy as np

from . import _batch, _core, _keyed, _mapped, calc
from ._algebra import SetAlgebraMixin
from ._base import FilterBase
from ._fill import FillEstimates, estimate_cardinality

__all__ = ["BloomFilter", "estimate_union_size", "estimate_intersection_size", "jaccard"]


class BloomFilter(_mapped.FileBacked, FillEstimates, SetAlgebraMixin, FilterBase, _core.BloomCore):
    """A Bloom filter: a set that may answer "present" for absent keys, never the reverse.

    Parameters
    ----------
    capacity : int
        Number of distinct keys the filter is sized for (> 0). Integral
        floats such as ``1e6`` are accepted.
    error_rate : float, default 0.01
        Target false-positive rate at ``capacity`` keys, in (0, 1).
    seed : int, keyword-only, default 0
        MurmurHash3 seed in [0, 2**32). Filters only combine when their seeds
        match. A seed is not a secret key: use ``secret_key`` against
        adversarial keys.
    secret_key : bytes, keyword-only, optional
        At least 16 secret bytes: keys are hashed with SipHash-2-4 under this
        key instead of MurmurHash3, so whoever chooses the keys cannot aim
        them at chosen bits (docs/RELIABILITY.md). Never saved: ``load``,
        ``from_bytes`` need it again; keyed filters cannot be pickled.
    layout : str, keyword-only, optional
        Where a key's bits go (docs/FORMAT.md): ``"classic"`` (k bits
        anywhere: the least memory, k cache misses per key),
        ``"blocked512"`` (all bits in one 64-byte cache line) or
        ``"split_block"`` (8 bits in one 256-bit block, the Parquet scheme,
        the fastest). Every layout is sized to meet ``error_rate``; the
        blocked ones take more memory than classic, more at lower rates
        (:func:`bloomkit.calc.layout_table`). By default
        :func:`bloomkit.calc.default_layout`: the fastest layout within
        1.10× classic's memory for this capacity and rate.

    Notes
    -----
    Keys are str (UTF-8), bytes-like, or int in [-2**63, 2**64) (8 bytes
    little-endian of ``value mod 2**64``); ``5``, ``np.int32(5)`` and
    ``np.uint64(5)`` are the same key. Sized with :func:`bloomkit.calc.bloom_params`.
    Union and intersection need equal layouts, sizes and seeds.

    Examples
    --------
    >>> f = BloomFilter(1000, 0.01)
    >>> f.add("https://example.com/")
    False
    >>> "https://example.com/" in f
    True
    """

    _core_class = _core.BloomCore
    _pickles_in_place = True

    def __new__(cls, *args, hashing="bloomkit", **kwargs):
        # hashing="spark": Spark's hashing and layout, a separate class
        # (bloomkit.spark_sketch.SparkBloomFilter) since every position differs.
        if hashing == "spark":
            from .spark_sketch import SparkBloomFilter

            if kwargs.pop("secret_key", None) is not None:
                raise ValueError(
                    "secret_key is not supported with hashing='spark': Spark's format fixes the hash "
                    "(MurmurHash3_x86_32, public seed) so that Spark can read the filter"
                )

            return SparkBloomFilter(*args, **kwargs)
        # hashing="orc": ORC's hashing and layout (bloomkit.orc_bloom.OrcBloomFilter).
        if hashing == "orc":
            from .orc_bloom import OrcBloomFilter

            if kwargs.pop("secret_key", None) is not None:
                raise ValueError(
                    "secret_key is not supported with hashing='orc': ORC's format fixes the hash "
                    "(Murmur3.hash64 and getLongHash, no key) so that ORC can read the filter"
                )

            return OrcBloomFilter(*args, **kwargs)
        if hashing != "bloomkit":
            raise ValueError(f"hashing must be 'bloomkit', 'spark' or 'orc', got {hashing!r}")
        return super().__new__(cls)

    @staticmethod
    def from_spark_bytes(data):
        """Read what Spark's ``BloomFilter.writeTo`` wrote: a :class:`~bloomkit.spark_sketch.SparkBloomFilter`."""
        from .spark_sketch import SparkBloomFilter

        return SparkBloomFilter.from_spark_bytes(data)

    @staticmethod
    def from_orc_bytes(data):
        """Read an ``orc.proto.BloomFilter`` message: a :class:`~bloomkit.orc_bloom.OrcBloomFilter`."""
        from .orc_bloom import OrcBloomFilter

        return OrcBloomFilter.from_orc_bytes(data)

    def __init__(self, capacity, error_rate=0.01, *, seed=0, layout=None, secret_key=None, hashing="bloomkit"):
        key = _keyed.master_key(secret_key)
        params = calc.bloom_params(capacity, error_rate, layout)
        _core.BloomCore.__init__(
            self,
            params.num_bits,
            params.num_hashes,
            calc.check_seed(seed),
            int(capacity),
            float(error_rate),
            params.layout,
        )
        _keyed.apply(self, key)

    @classmethod
    def from_params(cls, num_bits, num_hashes, *, seed=0, layout="classic", secret_key=None):
        """A filter with an explicit geometry (e.g. to match another system's).

        ``capacity`` becomes the key count for which ``num_hashes`` is optimal,
        ``round(num_bits ln 2 / num_hashes)``, and ``error_rate`` the rate
        predicted at that count. For a blocked layout ``num_bits`` must be a
        multiple of the block size (512 or 256), and split_block needs
        ``num_hashes == 8``.
        """
        key = _keyed.master_key(secret_key)
        layout = calc.check_layout(layout)
        num_bits = calc.check_capacity(num_bits, "num_bits")
        num_hashes = calc.check_num_hashes(num_hashes)  # NumPy integers too
        capacity = max(1, round(num_bits * calc.LN2 / num_hashes))
        error_rate = calc.layout_false_positive_rate(layout, num_bits, capacity, num_hashes)
        error_rate = min(max(error_rate, 5e-324), 1.0 - 2**-53)
        instance = cls.__new__(cls)
        _core.BloomCore.__init__(instance, num_bits, num_hashes, calc.check_seed(seed), capacity, error_rate, layout)
        _keyed.apply(instance, key)
        return instance

    # Cells in use, for FillEstimates.
    _occupied = _core.BloomCore._set_bits

    # -- file-backed filters (docs/decisions.md, "File-backed filters") ---
    @classmethod
    def open(cls, path, mode="r", *, capacity=None, error_rate=0.01, seed=0, layout=None, verify=False, exact=True):
        """A filter whose bits are the file at ``path``, mapped into memory (no copy).

        ``mode="r"`` maps a saved filter read-only: opening is O(1), memory
        grows only by the pages lookups touch, and every process sharing the
        file shares those pages; any write raises ``io.UnsupportedOperation``.
        ``"r+"`` maps it writable and shared: adds from many processes land
        in the file with atomic 64-bit ORs (no lost bits). With ``exact``
        (the default) each add, and each 256-key chunk of a batch, holds an
        exclusive lock on the file, so of all processes and threads adding
        one key exactly one is told it is new; ``exact=False`` skips the
        lock, and a key added by several writers at once may be reported
        new to more than one. ``"w+"`` creates the file for ``capacity``/
        ``error_rate``/``seed``/``layout`` (as the constructor) without
        building the filter in RAM, then maps it as ``"r+"``.

        Pickling an open filter (``multiprocessing``) sends its path and mode:
        the receiver maps the same file (``ValueError`` if the file at that
        path was replaced since), never a private copy.

        ``"w+"`` reserves the file's disk space (a full disk is an ``OSError``
        here) and replaces an existing file by rename, never in place.

        Header, lengths and parameters are always validated (``ValueError``);
        the checksum, which reads the whole file, only with ``verify=True``.
        A writable file is marked open for writing until the last writer's
        :meth:`close` (or the ``with`` block) writes its checksum; a file whose
        writer died loads as "not closed cleanly", and
        ``BloomFilter.open(path, "r+").close()`` repairs it.
        """
        return _mapped.open_bloom(cls, path, mode, capacity, error_rate, seed, layout, verify, exact)

    def _check_capacity(self, stacklevel: int = 1) -> None:
        # A file-backed filter counts its set bits by reading the whole file
        # (other processes add too), so it is not checked after every batch.
        if self._file is None:
            super()._check_capacity(stacklevel + 1)

    def _positions_many(self, keys) -> np.ndarray:
        """``(len(keys), num_hashes)`` uint64 array: the bit indices each key sets.

        Bit ``i`` is bit ``i % 64`` of little-endian word ``i // 64`` of the
        payload (docs/FORMAT.md), in every layout; for integrations that set
        the same bits elsewhere (e.g. a Redis bitmap).
        """
        return _core.BloomCore._positions_many(self, _batch.single_batch(keys))

    # -- set algebra (union/intersection, | & |= &=: _algebra.py) ----------
    _summary_fields = ("capacity", "error_rate", "layout", "num_bits", "num_hashes", "nbytes", "seed")


BloomFilter._algebra_class = BloomFilter


def _check_pair(a, b, what):
    if not isinstance(a, BloomFilter) or not isinstance(b, BloomFilter):
        raise TypeError(f"{what} needs two BloomFilters, got {type(a).__name__} and {type(b).__name__}")


def estimate_union_size(a: BloomFilter, b: BloomFilter) -> int:
    """Estimated number of distinct keys in either filter, from the OR of their bits."""
    _check_pair(a, b, "estimate_union_size")
    return round(estimate_cardinality(a.num_bits, a.num_hashes, a._union_set_bits(b)))


def estimate_intersection_size(a: BloomFilter, b: BloomFilter) -> int:
    """Estimated keys in both: ``n(A) + n(B) - n(A ∪ B)`` (Swamidass & Baldi), never below 0."""
    _check_pair(a, b, "estimate_intersection_size")
    union = estimate_cardinality(a.num_bits, a.num_hashes, a._union_set_bits(b))
    both = (
        estimate_cardinality(a.num_bits, a.num_hashes, a._set_bits)
        + estimate_cardinality(b.num_bits, b.num_hashes, b._set_bits)
        - union
    )
    return max(0, round(both))


def jaccard(a: BloomFilter, b: BloomFilter) -> float:
    """Estimated Jaccard similarity ``|A ∩ B| / |A ∪ B|`` of the two key sets (0.0 when both are empty)."""
    _check_pair(a, b, "jaccard")
    union = estimate_cardinality(a.num_bits, a.num_hashes, a._union_set_bits(b))
    if union <= 0:
        return 0.0
    both = (
        estimate_cardinality(a.num_bits, a.num_hashes, a._set_bits)
        + estimate_cardinality(b.num_bits, b.num_hashes, b._set_bits)
        - union
    )
    return min(1.0, max(0.0, both / union))
