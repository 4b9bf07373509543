"""Deliberate misuse of the API: ``mypy --strict`` must flag exactly the lines marked ``# E``.

Checked by tests/test_typing.py. Never executed.
"""

from __future__ import annotations

import bloomkit

f = bloomkit.BloomFilter(1000, 0.01)
f.add_manyy(["a", "b"])  # E: a typo of add_many
f.add(["a", "b"])  # E: a list is not a key (add_many takes batches)
f.add(1j)  # E: complex numbers are not keys
f.add(key="a")  # E: add takes its key positionally only
f.contains_many(5)  # E: a batch must be an array or an iterable of keys
bloomkit.BloomFilter(1000, "0.01")  # E: error_rate is a float
bloomkit.BloomFilter(1000, 0.01, 7)  # E: seed is keyword-only
n: str = len(f)  # E: len is an int
f.remove("a")  # E: a plain Bloom filter cannot remove
bloomkit.CuckooFilter(1000).union(bloomkit.CuckooFilter(1000))  # E: cuckoo filters have no union
g: bloomkit.CountingBloomFilter = f | f  # E: the union of Bloom filters is a BloomFilter
bloomkit.calc.bloom_params(1000)  # E: error_rate is required
bloomkit.hash128("a", seed="1")  # E: seed is an int
bloomkit.ScalableBloomFilter(growth="2")  # E: growth is a number
bloomkit.BloomFilter(1000, layout="blocked")  # E: not one of the layouts
bloomkit.load("f.bk").remove("a")  # E: a loaded filter may be a plain Bloom filter, which cannot remove
h: bloomkit.BloomFilter = bloomkit.load("f.bk")  # E: the loaded type is known only after isinstance
bloomkit.load("f.bk").num_slices  # E: only a ScalableBloomFilter has slices
