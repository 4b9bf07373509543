"""The filter types: one row per type, and every list of types derived from it.

Each row says where the public class lives, its type tag in the binary
format (docs/FORMAT.md; ``None`` for a type whose bytes are another
system's format), what it can do (the capability flags), its variants and
how to build one. ``bloomkit.load``, the ``bloomkit`` command, the package
exports and the test tables (contract suite, doctests, golden files, fuzz
corpus) all read these rows, so a new type is one row here plus its module
(docs/ARCHITECTURE.md, "Adding a filter type").

The C++ core has the same list for its framed types
(cpp/include/bloomkit/filter_types.hpp, exported as
``_core.filter_types()``); importing this module checks that both say the
same (Python name, tag) pairs, so the two lists cannot drift apart.
"""

from __future__ import annotations

import collections.abc
import importlib
from dataclasses import dataclass, field
from typing import Any, Callable

from . import _core


def _bloom(cls, capacity, error_rate, seed, variant, secret_key=None):
    return cls(capacity, error_rate, seed=seed, layout=variant, secret_key=secret_key)


def _counting(cls, capacity, error_rate, seed, variant, secret_key=None):
    return cls(capacity, error_rate, seed=seed, secret_key=secret_key)


def _scalable(cls, capacity, error_rate, seed, variant, secret_key=None):
    return cls(initial_capacity=capacity, error_rate=error_rate, seed=seed, layout=variant, secret_key=secret_key)


def _cuckoo(cls, capacity, error_rate, seed, variant, secret_key=None, auto_grow=False):
    return cls(capacity, error_rate, seed=seed, secret_key=secret_key, auto_grow=auto_grow)


def _rotating(cls, capacity, error_rate, seed, variant, secret_key=None):
    # A window of 10**18 keys in 2 generations: one generation sized for
    # `capacity` that never rotates and reads no clock, so a built filter is
    # the same bytes whenever it is built (golden files) and keeps every key
    # (the contract); forgetting is tests/test_rotating.py's.
    return cls(capacity, error_rate, window=10**18, generations=2, seed=seed, layout=variant, secret_key=secret_key)


def _binary_fuse(cls, capacity, error_rate, seed, variant, keys=(), secret_key=None):
    # Frozen: built from its keys. The variant is the fingerprint width;
    # without one, the narrowest whose rate 2**-f meets error_rate.
    bits = variant if variant is not None else next((f for f in (8, 16) if 2.0**-f <= error_rate), None)
    if bits is None:
        raise ValueError(
            f"BinaryFuseFilter's lowest false-positive rate is 2**-16 (16-bit fingerprints), got {error_rate}"
        )
    if isinstance(keys, collections.abc.Iterator):  # a stream (the CLI's lines): read batch by batch
        return cls.freeze(keys, fingerprint_bits=bits, seed=seed, secret_key=secret_key)
    return cls.build(keys, fingerprint_bits=bits, seed=seed, secret_key=secret_key)


def _spark(cls, capacity, error_rate, seed, variant):
    # Spark's seed is a Java int: the same 32 bits as bloomkit's u32 seed.
    return cls(capacity, error_rate, seed=seed - 2**32 if seed >= 2**31 else seed)


def _orc(cls, capacity, error_rate, seed, variant):
    # ORC's hashing has no seed to choose (row.seeded is False): `seed` is not used.
    return cls(capacity, error_rate)


# The false-positive models bloomkit.plot.fpr_curve draws (FilterRow.fpr_model).
FPR_MODELS = ("bloom", "chain", "window", "cuckoo", "fixed")

# The layouts of the Bloom family (cpp/include/bloomkit/layouts.hpp).
BLOOM_LAYOUTS = ("classic", "blocked512", "split_block")


@dataclass(frozen=True)
class FilterRow:
    """One filter type: its class, tag, capabilities, variants and factory."""

    name: str  # the command line's --type value and the test ids
    module: str  # where the class lives, imported on first use
    class_name: str  # the public class (and the core list's Python name)
    tag: "int | None"  # type tag of its frames; None when its bytes are not a bloomkit frame
    # factory(cls, capacity, error_rate, seed, variant): an empty filter for
    # `capacity` distinct keys at `error_rate` (variant None: the class's
    # default); a frozen type's factory also takes keys= and builds from them,
    # a keyed one secret_key=.
    factory: Callable[..., Any] = field(repr=False)
    variants: tuple = ()  # values of the factory's `variant` the contract suite runs over
    mutable: bool = True  # add / update allowed (a frozen type is built once)
    removable: bool = False  # remove / discard / count / remove_many (all or nothing)
    # len() is exactly the keys added (a scalable filter's exact count of keys
    # inserted as new misses the new keys that were false positives).
    exact_count: bool = False
    growable: bool = False  # keeps its error rate past `capacity` by growing
    # The factory options that make a type which refuses keys when full
    # (FilterFullError) grow instead: make(..., unbounded=True) passes them.
    # Every other mutable type takes keys past `capacity` as it is.
    unbounded_options: tuple = ()
    keyed: bool = False  # secret_key= (keyed SipHash hashing, docs/RELIABILITY.md): make(..., secret_key=)
    mappable: bool = False  # open() maps a file (Bloom, rotating: read, write, create; binary fuse: read-only)
    windowed: bool = False  # forgets keys older than a window
    framed: bool = True  # to_bytes() is a docs/FORMAT.md frame, loadable by bloomkit.load
    order_free: bool = False  # the same keys in any order give byte-equal filters
    mergeable: bool = False  # union / | with a compatible filter of the same type
    # The batch method that is the deduplicating test-and-set (first sight of
    # a key -> False, stored once): _add_many for sets, _add_new_many for a
    # multiset that would otherwise store every repeat.
    first_seen: str = "_add_many"
    count_label: str = "estimated keys"  # what len() is, in `bloomkit ... --stats`
    # The attribute `bloomkit ... --stats` reports as how full it is ("filter
    # fill"): a table's fill_ratio, a cuckoo filter's load_factor; None for a
    # type with no one figure (a chain, a ring of generations, a frozen table).
    fill: "str | None" = "fill_ratio"
    compound_fpr: bool = False  # estimated_fpr() is a chain's compound rate, not one table's
    # The false-positive model bloomkit.plot.fpr_curve draws: "bloom" (one
    # table of num_bits and num_hashes), "chain" (a growing chain's compound
    # rate), "window" (the OR of the live generations), "cuckoo" (rate against
    # load factor) or "fixed" (a frozen filter's error_rate, set when it was
    # built whatever its size: a binary fuse filter's 2**-f).
    fpr_model: str = "bloom"
    # How keys are hashed: "bloomkit" (a key is its canonical bytes, so the
    # int 5 and its 8 bytes are one key) or "spark" (Spark's: ints as Java
    # longs, strings and binary by their bytes, so those two differ) or "orc"
    # (ORC's: as Spark's, and floats as Java doubles, so 1 and 1.0 differ).
    hashing: str = "bloomkit"
    seeded: bool = True  # the seed of make()/build() is the filter's (False: the format fixes the hashing)

    def __post_init__(self):
        # A value plot.fpr_curve or the CLI has no code for is a mistake in this file.
        if self.fpr_model not in FPR_MODELS:
            raise ValueError(f"{self.name}: fpr_model {self.fpr_model!r} is not one of {FPR_MODELS}")

    @property
    def cls(self) -> type:
        return getattr(importlib.import_module(self.module), self.class_name)

    def make(self, capacity, error_rate=0.01, seed=0, variant=None, secret_key=None, unbounded=False):
        """An empty filter of this type (``variant``: one of ``variants``, or None for the default).

        ``secret_key`` only for a ``keyed`` row (TypeError otherwise);
        ``unbounded``: one that never refuses a key for being full (``unbounded_options``).
        """
        if variant is not None and variant not in self.variants:
            raise ValueError(f"{self.class_name} has no variant {variant!r} (variants: {self.variants})")
        options = dict(self.unbounded_options) if unbounded else {}
        if secret_key is None:
            return self.factory(self.cls, capacity, error_rate, seed, variant, **options)
        if not self.keyed:
            raise TypeError(f"{self.class_name} takes no secret_key")
        return self.factory(self.cls, capacity, error_rate, seed, variant, secret_key=secret_key, **options)

    def build(self, keys, capacity, error_rate=0.01, seed=0, variant=None, secret_key=None):
        """A filter of this type holding ``keys``: made and updated, or, for a frozen type, built from them.

        ``secret_key`` as for :meth:`make`.
        """
        if self.mutable:
            filter_ = self.make(capacity, error_rate, seed, variant, secret_key=secret_key)
            filter_.update(keys)
            return filter_
        if variant is not None and variant not in self.variants:
            raise ValueError(f"{self.class_name} has no variant {variant!r} (variants: {self.variants})")
        if secret_key is None:
            return self.factory(self.cls, capacity, error_rate, seed, variant, keys=keys)
        if not self.keyed:
            raise TypeError(f"{self.class_name} takes no secret_key")
        return self.factory(self.cls, capacity, error_rate, seed, variant, keys=keys, secret_key=secret_key)


ROWS = (
    FilterRow(
        "bloom",
        "bloomkit.bloom",
        "BloomFilter",
        1,
        _bloom,
        keyed=True,
        variants=BLOOM_LAYOUTS,
        mappable=True,
        order_free=True,
        mergeable=True,
    ),
    FilterRow(
        "counting",
        "bloomkit.counting_bloom",
        "CountingBloomFilter",
        2,
        _counting,
        keyed=True,
        removable=True,
        order_free=True,
        mergeable=True,
    ),
    FilterRow(
        "scalable",
        "bloomkit.scalable_bloom",
        "ScalableBloomFilter",
        3,
        _scalable,
        keyed=True,
        variants=BLOOM_LAYOUTS,
        growable=True,
        count_label="keys inserted as new (exact)",
        compound_fpr=True,
        fpr_model="chain",
        fill=None,
    ),
    FilterRow(
        "cuckoo",
        "bloomkit.cuckoo",
        "CuckooFilter",
        4,
        _cuckoo,
        keyed=True,
        removable=True,
        exact_count=True,
        first_seen="_add_new_many",
        count_label="keys stored (exact)",
        unbounded_options=(("auto_grow", True),),
        fpr_model="cuckoo",
        fill="load_factor",
    ),
    FilterRow(
        "rotating",
        "bloomkit.rotating_bloom",
        "RotatingBloomFilter",
        5,
        _rotating,
        keyed=True,
        variants=BLOOM_LAYOUTS,
        mappable=True,
        windowed=True,
        count_label="keys in the window (exact)",
        compound_fpr=True,
        fpr_model="window",
        fill=None,
    ),
    FilterRow(
        "binary_fuse",
        "bloomkit.binary_fuse",
        "BinaryFuseFilter",
        6,
        _binary_fuse,
        keyed=True,
        variants=(8, 16),
        mutable=False,
        exact_count=True,
        mappable=True,
        order_free=True,
        count_label="distinct keys (exact)",
        fpr_model="fixed",
        fill=None,
    ),
    FilterRow(
        # Apache Spark's Bloom filter: its bytes are Spark's format, read by
        # SparkBloomFilter.from_bytes / from_spark_bytes, not bloomkit.load.
        "spark",
        "bloomkit.spark_sketch",
        "SparkBloomFilter",
        None,
        _spark,
        framed=False,
        order_free=True,
        mergeable=True,
        hashing="spark",
    ),
    FilterRow(
        # Apache ORC's Bloom filter: its bytes are ORC's protobuf message,
        # read by OrcBloomFilter.from_bytes / from_orc_bytes, not bloomkit.load.
        "orc",
        "bloomkit.orc_bloom",
        "OrcBloomFilter",
        None,
        _orc,
        framed=False,
        order_free=True,
        mergeable=True,
        hashing="orc",
        seeded=False,
    ),
)

BY_NAME = {row.name: row for row in ROWS}
FRAMED = tuple(row for row in ROWS if row.framed)
BY_TAG = {row.tag: row for row in FRAMED}


def _core_types() -> tuple:
    """(Python name, tag) of every framed type the C++ core knows, in tag order."""
    return tuple(_core.filter_types())


def check_core_agrees() -> None:
    """Raise ImportError unless the core's type list and the framed rows name the same (class, tag) pairs."""
    core = set(_core_types())
    here = {(row.class_name, int(row.tag or 0)) for row in FRAMED}
    if core != here:
        raise ImportError(
            "bloomkit's filter type lists disagree: the C++ core (_core.filter_types()) has "
            f"{sorted(core - here, key=_by_tag)} that python/bloomkit/_types.py lacks, and "
            f"_types.py has {sorted(here - core, key=_by_tag)} that the core lacks"
        )


def _by_tag(pair: tuple) -> int:
    return int(pair[1])


def row_for_tag(tag: int) -> FilterRow:
    """The framed row of ``tag``; ValueError when this build has no such type."""
    row = BY_TAG.get(tag)
    if row is None:
        raise ValueError(f"filter type tag {tag} is not available in this build of bloomkit")
    return row


_BY_CLASS = {(row.module, row.class_name): row for row in ROWS}


def row_of(cls: type) -> FilterRow:
    """The row of a filter class (or of a subclass of one); TypeError if it is not a bloomkit filter."""
    for klass in cls.__mro__:
        row = _BY_CLASS.get((klass.__module__, klass.__name__))
        if row is not None:
            return row
    raise TypeError(f"{cls.__name__} is not a bloomkit filter type")


def classes() -> dict:
    """Public class name -> class, for every row (what ``bloomkit`` exports)."""
    return {row.class_name: row.cls for row in ROWS}


check_core_agrees()
