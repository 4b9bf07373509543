"""Apache ORC's Bloom filter, bit for bit: read, query, build and write ORC's bytes.

``bloomkit.BloomFilter(capacity, error_rate, hashing="orc")`` and
``bloomkit.BloomFilter.from_orc_bytes(data)`` return an :class:`OrcBloomFilter`.
It answers exactly as ``org.apache.orc.util.BloomFilterUtf8`` (ints as Java
longs through ORC's ``getLongHash``, floats as Java doubles, strings as UTF-8
and binary through ORC's ``Murmur3.hash64``), and
:meth:`OrcBloomFilter.to_orc_bytes` writes the ``orc.proto.BloomFilter``
message ORC's ``BloomFilterIO.serialize`` writes. The hashing and layout are
in ``cpp/include/bloomkit/orc_bloom.hpp`` and docs/FORMAT.md. The filters
inside ORC files are read by :mod:`bloomkit.orc`.

Like the Spark filter (``bloomkit/_foreign.py``) its bytes are ORC's format,
not a bloomkit frame: ``to_bytes``/``from_bytes`` are ``to_orc_bytes``/
``from_orc_bytes``, and ``bloomkit.load`` does not read them.
"""

from __future__ import annotations

import math

from . import _core, calc
from ._algebra import UnionMixin
from ._fill import FillEstimates
from ._foreign import ForeignFormatFilter, HashPairs

__all__ = ["OrcBloomFilter", "orc_bloom_params"]

# ORC's numBits is a Java int: m = 64 * words < 2**31.
_MAX_BITS = 2**31 - 64


def orc_bloom_params(capacity, error_rate):
    """``(num_bits, num_hashes)`` exactly as ORC's ``new BloomFilter(n, fpp)`` sizes them.

    ``optimalNumOfBits``: ``nb = (int)(-n ln p / (ln 2)^2)``, then
    ``m = nb + 64 - nb % 64`` (a whole word more when ``nb`` is already a
    multiple of 64); ``optimalNumOfHashFunctions``:
    ``max(1, Math.round(m / n * ln 2))`` from that ``m``.
    """
    capacity = calc.check_capacity(capacity)
    error_rate = calc.check_error_rate(error_rate)
    nb = int(-capacity * math.log(error_rate) / (math.log(2) * math.log(2)))
    num_bits = nb + 64 - nb % 64
    if num_bits > _MAX_BITS:
        raise ValueError(
            f"capacity {capacity} at error_rate {error_rate} needs {num_bits:,} bits; ORC's filters hold at most "
            f"{_MAX_BITS:,} (a Java int)"
        )
    num_hashes = max(1, math.floor(num_bits / capacity * math.log(2) + 0.5))
    return num_bits, num_hashes


class _OrcPairs(HashPairs):
    # ORC hashes doubles as their own type (doubleToLongBits, then the long path).
    float_arrays = True


class OrcBloomFilter(FillEstimates, UnionMixin, ForeignFormatFilter, _core.OrcBloomCore):
    """A Bloom filter with ORC's hashing and layout (``org.apache.orc.util.BloomFilterUtf8``).

    Keys, as ORC's writers add a column's values: ``int`` (a Java long:
    ORC's tinyint to bigint, date as days and boolean as 0/1 columns;
    ``2**63..2**64-1`` wrap to negative longs, the same 64 bits), ``float``
    (a Java double: ORC's float and double columns), ``str`` (UTF-8: string,
    varchar, char, and decimal as its string) and bytes-like (binary), and
    every batch input of the other filters (NumPy arrays — float32 and
    float64 as doubles —, pyarrow and polars columns, pandas Series, lists,
    iterables). ``1`` and ``1.0`` are different keys, as in ORC.

    ORC's bytes hold the bits, not the request: ``capacity`` and
    ``error_rate`` are those given here (kept by copies and pickles) and
    ``None`` for a filter read from ORC's bytes.

    Parameters
    ----------
    capacity, error_rate
        Sized like ORC's ``new BloomFilter(capacity, error_rate)``
        (``orc.bloom.filter.fpp`` is 0.01 by default in current ORC, 0.05
        in older releases; bloomkit's 0.01 is the default here).

    Examples
    --------
    >>> f = OrcBloomFilter(1000, 0.01)
    >>> f.update(["alice", "bob", 42, 2.5])
    >>> "alice" in f, 42 in f, 2.5 in f, "carol" in f
    (True, True, True, False)
    >>> OrcBloomFilter.from_orc_bytes(f.to_orc_bytes()) == f
    True
    """

    _core_class = _core.OrcBloomCore
    _format_name = "ORC"
    _pairs_reader = _OrcPairs
    _summary_fields = ("capacity", "error_rate", "num_bits", "num_hashes", "nbytes")

    def __init__(self, capacity, error_rate=0.01):
        num_bits, num_hashes = orc_bloom_params(capacity, error_rate)
        _core.OrcBloomCore.__init__(self, num_hashes, num_bits // 64)
        self._request = (calc.check_capacity(capacity), calc.check_error_rate(error_rate))

    # -- ORC's bytes are this type's bytes ---------------------------------
    @classmethod
    def from_orc_bytes(cls, data) -> "OrcBloomFilter":
        """Read an ``orc.proto.BloomFilter`` message (either bitset field, as ORC's streams hold them).

        The message is walked and every length checked against the bytes
        before anything is allocated; ``ValueError`` says what is wrong.
        """
        instance = cls.__new__(cls)
        _core.OrcBloomCore.__init__(instance, data)
        return instance

    def to_orc_bytes(self, *, legacy_bitset=False) -> bytes:
        """The ``orc.proto.BloomFilter`` message ORC's ``BloomFilterIO.serialize`` writes for this filter.

        By default the words are the ``utf8bitset`` bytes field, as in the
        ``BLOOM_FILTER_UTF8`` streams every current ORC writer produces;
        ``legacy_bitset=True`` writes them as the ``repeated fixed64 bitset``
        of the legacy ``BLOOM_FILTER`` stream (a plain ``BloomFilter``).
        """
        return self._orc_bytes(not legacy_bitset)

    _from_foreign = from_orc_bytes

    def _to_foreign(self) -> bytes:
        return self._orc_bytes(True)

    # -- estimates (fill_ratio, estimated_fpr, len: _fill.py), union
    # (| |=: _algebra.py; ORC's BloomFilter.merge) --------------------------
    _occupied = _core.OrcBloomCore._set_bits


OrcBloomFilter._algebra_class = OrcBloomFilter
