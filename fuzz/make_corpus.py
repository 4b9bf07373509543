"""Write the fuzzer's seed corpus: valid frames of every filter type and shape.

Usage: python fuzz/make_corpus.py DIRECTORY. Small filters, so libFuzzer's
mutations reach the params and the payload alike; every shape the loaders
distinguish is present (grown scalable chains, auto-grown cuckoo stages, a
cuckoo victim slot, every counter width, seeds, bucket sizes), plus the
frames no filter writes but a loader must judge (``judged_frames``).
"""

from __future__ import annotations

import struct
import sys
from pathlib import Path

import bloomkit
from bloomkit import _types

# The secret key of the keyed seeds (a test vector, not a secret).
SECRET = bytes(range(16))


def generic_name(row, variant) -> str:
    """The seed of a registered type in one variant."""
    return f"generic-{row.name}" + (f"-{variant}" if variant is not None else "")


def generic_seeds() -> dict:
    """One small filter per registered type (bloomkit/_types.py) and variant, so no type's loader goes unfuzzed."""
    filters = {}
    for row in _types.ROWS:
        for variant in row.variants or (None,):
            filters[generic_name(row, variant)] = row.build(range(40), 40, 0.01, 7, variant)
    return filters


def seed_filters() -> dict:
    filters = generic_seeds()
    for capacity, rate, seed in ((1, 0.5, 0), (40, 0.01, 7), (200, 0.001, 2**32 - 1)):
        bloom = bloomkit.BloomFilter(capacity, rate, seed=seed)
        bloom.update(range(capacity))
        filters[f"bloom-{capacity}"] = bloom
    filters["bloom-empty"] = bloomkit.BloomFilter(64)
    for bits in (4, 8, 16):
        counting = bloomkit.CountingBloomFilter(30, 0.05, counter_bits=bits, seed=bits)
        counting.update(["a", "a", "b"] + list(range(20)))
        filters[f"counting-{bits}"] = counting
    scalable = bloomkit.ScalableBloomFilter(8, 0.01, growth=2, tightening=0.5)
    scalable.update(range(60))  # several slices
    filters["scalable-grown"] = scalable
    filters["scalable-empty"] = bloomkit.ScalableBloomFilter(4, 0.1)
    for bucket_size in (2, 4, 8):
        cuckoo = bloomkit.CuckooFilter(20, 0.01, bucket_size=bucket_size, seed=bucket_size)
        cuckoo.update(range(15))
        filters[f"cuckoo-b{bucket_size}"] = cuckoo
    grown = bloomkit.CuckooFilter(8, fingerprint_bits=6, auto_grow=True)
    grown.update(range(60))
    filters["cuckoo-grown"] = grown
    full = bloomkit.CuckooFilter(8, fingerprint_bits=12)
    refused = next(i for i in range(1000) if not try_add(full, i))
    filters["cuckoo-victim"] = with_victim(full, refused)
    # Keyed frames (type tag bit 15, a 16-byte key check before the params).
    secret = SECRET
    keyed_filters = {
        "keyed-bloom": bloomkit.BloomFilter(40, 0.01, layout="split_block", secret_key=secret),
        "keyed-counting": bloomkit.CountingBloomFilter(60, 0.05, secret_key=secret),
        "keyed-scalable": bloomkit.ScalableBloomFilter(8, 0.01, secret_key=secret),
        "keyed-cuckoo": bloomkit.CuckooFilter(8, fingerprint_bits=6, auto_grow=True, secret_key=secret),
    }
    for name, keyed in keyed_filters.items():
        keyed.update(range(40))
        filters[name] = keyed
    from bloomkit.spark_sketch import SparkBloomFilter

    for version in (1, 2):
        spark = SparkBloomFilter(50, 0.05, version=version)
        for i in range(30):
            spark.add(i)
        filters[f"spark-v{version}"] = spark
    from bloomkit.orc_bloom import OrcBloomFilter

    orc = OrcBloomFilter(50, 0.05)
    orc.update([*range(20), *(i / 3 for i in range(5)), "orc", b"\x00bin"])
    filters["orc"] = orc  # to_bytes(): the utf8bitset message
    return filters


def judged_frames() -> dict:
    """Frames no filter writes but a loader must judge (name -> bytes).

    A mapped file still marked open for writing (type tag bit 14) with its
    checksum current (it loads) and stale ("not closed cleanly"), and a chain
    declaring one slice more than kMaxScalableSlices (refused from its
    params, before the slice table is read).
    """
    filters = seed_filters()
    marked = bytearray(filters["bloom-40"].to_bytes())
    marked[11] |= 0x40
    chain = bytearray(filters["scalable-grown"].to_bytes())
    struct.pack_into("<I", chain, 24 + 36, 1025)  # num_slices, params offset 36
    return {
        "bloom-open-for-writing": with_checksum(marked),
        "bloom-open-for-writing-stale": bytes(marked),
        "scalable-too-many-slices": with_checksum(chain),
    }


def try_add(cuckoo, key) -> bool:
    try:
        cuckoo.add(key)
    except bloomkit.FilterFullError:
        return False
    return True


def fmix64(x: int) -> int:
    """MurmurHash3's 64-bit finaliser."""
    x ^= x >> 33
    x = (x * 0xFF51AFD7ED558CCD) & (2**64 - 1)
    x ^= x >> 33
    x = (x * 0xC4CEB9FE1A85EC53) & (2**64 - 1)
    return x ^ (x >> 33)


def with_checksum(frame) -> bytes:
    """``frame`` with its last 8 bytes set to the checksum of the rest (docs/FORMAT.md)."""
    data = bytearray(frame)
    struct.pack_into("<Q", data, len(data) - 8, bloomkit.hash128(bytes(data[:-8]), 0x424B4631) & (2**64 - 1))
    return bytes(data)


def with_victim(cuckoo, key):
    """A one-stage cuckoo filter with ``key`` in its victim slot, as versions that parked failed walks there saved it.

    bloomkit now undoes failed walks, so only such older files hold a
    victim; the loaders still read them (docs/FORMAT.md, type 4).
    """
    digest = bloomkit.hash128(key, cuckoo.seed)
    fp = 1 + (fmix64(digest >> 64) * (2**cuckoo.fingerprint_bits - 1) >> 64)
    bucket = (digest & (2**64 - 1)) * cuckoo.num_buckets >> 64
    data = bytearray(cuckoo.to_bytes())
    stage = 64  # the payload offset of a type 4 frame (params 32 bytes, padded to 64)
    count = struct.unpack_from("<Q", data, stage)[0]
    struct.pack_into("<QQIB", data, stage, count + 1, bucket, fp, 1)
    return bloomkit.CuckooFilter.from_bytes(with_checksum(data))


def main(directory: str) -> None:
    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    for name, filter_ in seed_filters().items():
        (out / f"{name}.bkf").write_bytes(frame_of(filter_))
    for name, frame in judged_frames().items():
        (out / f"{name}.bkf").write_bytes(frame)
    for name, data in parquet_filters().items():
        (out / f"{name}.bkf").write_bytes(data)


def parquet_filters() -> dict:
    """Parquet column chunks' Bloom filters, footers and a file, and ORC files, as pyarrow writes them."""
    import io

    import pyarrow as pa
    import pyarrow.parquet as pq

    buffer = io.BytesIO()
    table = pa.table({"id": pa.array(range(200), pa.int64()), "name": [f"n{i}" for i in range(200)]})
    pq.write_table(table, buffer, bloom_filter_options={"id": {"ndv": 50, "fpp": 0.1}, "name": {"ndv": 20}})
    meta = pq.ParquetFile(io.BytesIO(buffer.getvalue())).metadata.row_group(0)
    data = buffer.getvalue()
    filters = {}
    for index, name in enumerate(("id", "name")):
        chunk = meta.column(index)
        filters[f"parquet-{name}"] = data[
            chunk.bloom_filter_offset : chunk.bloom_filter_offset + chunk.bloom_filter_length
        ]
    # Footers (FileMetaData) with the column "id" at the top and inside a struct, several row groups.
    nested = pa.table({"s": pa.StructArray.from_arrays([table["id"].combine_chunks()], ["id"]), "id": table["id"]})
    for name, written in (("flat", table), ("struct", nested)):
        buffer = io.BytesIO()
        pq.write_table(written, buffer, row_group_size=64, bloom_filter_options={"id": True})
        data = buffer.getvalue()
        length = int.from_bytes(data[-8:-4], "little")
        filters[f"parquet-footer-{name}"] = data[-8 - length : -8]
        if name == "flat":
            filters["parquet-file-flat"] = data  # a whole file, as candidates walks it
    # Whole ORC files with filters on "id", uncompressed and ZLIB (inflated by zlib, as the extension does).
    import pyarrow.orc

    for compression in ("uncompressed", "zlib"):
        buffer = io.BytesIO()
        pyarrow.orc.write_table(
            table, buffer, compression=compression, row_index_stride=64, bloom_filter_columns=[1], bloom_filter_fpp=0.1
        )
        filters[f"orc-file-{compression}"] = buffer.getvalue()
    return filters


def frame_of(filter_) -> bytes:
    """The bytes a loader reads back: a bloomkit frame, or Spark's own format for the Spark row (``to_bytes``)."""
    return filter_.to_bytes()


if __name__ == "__main__":
    main(sys.argv[1])
