"""Uses the public API the way the README does; must pass ``mypy --strict``.

Checked by tests/test_typing.py (and .ci/lint.sh). Never executed as a test.
"""

from __future__ import annotations

import copy
import pickle
from pathlib import Path

import numpy as np
import numpy.typing as npt

import bloomkit
from bloomkit import calc


def bloom(path: Path) -> float:
    seen = bloomkit.BloomFilter(capacity=10_000_000, error_rate=0.001, seed=7)
    is_new: bool = not seen.add("https://a.example/")
    ids = np.arange(1000, dtype=np.uint64)
    first_time: npt.NDArray[np.bool_] = ~seen.add_many(ids)
    seen.update(["x", b"y", 3, np.int32(4)])
    present: npt.NDArray[np.bool_] = seen.contains_many(ids[:5])
    assert is_new and first_time.any() and present.all() and "x" in seen and seen.contains(b"y")
    other = bloomkit.BloomFilter.from_params(seen.num_bits, seen.num_hashes, seed=seen.seed)
    union: bloomkit.BloomFilter = seen | other
    union |= other
    both = seen.intersection(other, union)
    estimate: int = bloomkit.estimate_union_size(seen, other) + bloomkit.estimate_intersection_size(seen, both)
    similarity: float = bloomkit.jaccard(seen, other)
    seen.save(path)
    again: bloomkit.BloomFilter = bloomkit.BloomFilter.load(path)
    clone: bloomkit.BloomFilter = copy.deepcopy(seen)
    frame: bytes = seen.to_bytes()
    restored = bloomkit.BloomFilter.from_bytes(frame)
    assert restored == again == clone == pickle.loads(pickle.dumps(seen))
    loaded = bloomkit.load(frame)
    assert isinstance(loaded, bloomkit.BloomFilter)
    bits: int = loaded.num_bits  # narrowed by isinstance: BloomFilter's own attributes
    return len(seen) + seen.fill_ratio + seen.estimated_fpr() + seen.nbytes + estimate + similarity + bits


def loaded_filters(path: str, frame: bytes) -> int:
    # bloomkit.load reads the type from the data: any filter's common API
    # type-checks on its result, a type's own API after isinstance.
    any_filter = bloomkit.load(path)
    any_filter.add("a")
    any_filter.update(["b", "c"])
    new: npt.NDArray[np.bool_] = any_filter.add_many(["d"])
    hits: npt.NDArray[np.bool_] = any_filter.contains_many(["a", "z"])
    present: bool = "a" in any_filter and any_filter.contains("b")
    size: int = len(any_filter) + any_filter.nbytes + any_filter.seed
    any_filter.save(path)
    again = bloomkit.load(frame, secret_key=None)
    if isinstance(again, (bloomkit.CountingBloomFilter, bloomkit.CuckooFilter)):
        again.remove("a")
        size += again.count("b")
    elif isinstance(again, bloomkit.ScalableBloomFilter):
        size += again.num_slices
    elif isinstance(again, bloomkit.RotatingBloomFilter):
        size += again.generations
    elif isinstance(again, bloomkit.BinaryFuseFilter):
        frozen = bloomkit.BinaryFuseFilter.build(["a", "b"], fingerprint_bits=16)
        size += again.array_length + len(frozen) + int(frozen.contains_many(["a"]).all())
    elif isinstance(again, bloomkit.BloomFilter):  # a type added later needs no branch here
        size += again.num_bits
    mapped: bloomkit.BloomFilter = bloomkit.BloomFilter.open(path)
    with bloomkit.BloomFilter.open(path, "r") as shared:
        size += shared.num_hashes + mapped.num_hashes
    return size + int(present) + int(new.any()) + int(hits.all())


def removal() -> int:
    counting = bloomkit.CountingBloomFilter(1000, 0.01, counter_bits=8)
    counting.add("a")
    counting.remove("a")
    gone: bool = counting.discard("a")
    counting.remove_many(["b", "c"]) if gone else None
    plain: bloomkit.BloomFilter = counting.to_bloom()

    cuckoo = bloomkit.CuckooFilter(1000, fingerprint_bits=12, auto_grow=True)
    try:
        cuckoo.add_many(np.arange(10, dtype=np.int64))
    except bloomkit.FilterFullError as error:
        print(error.index)
    full: bool = cuckoo.is_full
    load_factor: float = cuckoo.load_factor
    return cuckoo.count("a") + counting.count("a") + plain.num_bits + int(full) + int(load_factor)


def growth() -> list[bloomkit.scalable_bloom.SliceInfo]:
    scalable = bloomkit.ScalableBloomFilter(initial_capacity=1000, error_rate=0.01, growth=2, tightening=0.85)
    scalable.update(str(i) for i in range(5000))
    assert scalable.num_slices == len(scalable.slices)
    return scalable.slices


def sizing() -> tuple[int, int, float]:
    params: calc.BloomParams = bloomkit.bloom_params(1e6, 0.01)
    blocked = bloomkit.BloomFilter(1000, 0.01, layout="blocked512")
    assert blocked.layout == "blocked512" and calc.layout_table(1000, 0.01)[0].overhead == 0.0
    cuckoo: calc.CuckooParams = calc.cuckoo_params(1_000_000, 0.001, bucket_size=4)
    rate: float = bloomkit.false_positive_rate(params.num_bits, 1_000_000, params.num_hashes)
    return params.num_bits, cuckoo.num_buckets + bloomkit.bloom_capacity(8_000, 0.01), rate


def keys() -> int:
    digest: int = bloomkit.hash128("é", seed=1)
    raw: bytes = bloomkit.canonical_bytes(-1)
    mask: npt.NDArray[np.bool_] = bloomkit.dedup_mask(np.array(["a", "b", "a"]))
    return digest + len(raw) + int(mask.sum())


def windows() -> list[bloomkit.rotating_bloom.GenerationInfo]:
    week = bloomkit.WindowSpec("7d", generations=8)
    live: range = week.live(week.generation_at(1.7e9))
    seen = bloomkit.RotatingBloomFilter(1000, 0.01, window=week, clock=lambda: 1.7e9)
    recent = bloomkit.RotatingBloomFilter(1000, window=1e6)
    fresh: npt.NDArray[np.bool_] = ~seen.add_many(["a", "b", "a"])
    assert seen.add("c") is False and "c" in seen and recent.window.unit == "keys" and len(live) == 8
    current: int | None = seen.current_generation
    return seen.generations_info if current is not None and fresh.any() else []
