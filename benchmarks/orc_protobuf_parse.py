"""ORC's protobuf messages: bloomkit's bounded wire reader vs the ``protobuf`` package (upb).

The decision of docs/decisions.md ("ORC's protobuf messages are read by
a small bounded wire reader"). One ORC file written by pyarrow (``--rows`` rows, ZLIB, Bloom
filters on an int64 and a string column, 10,000-row strides). Its tail, the
stripe footers and the Bloom filter streams are read and decompressed once;
then the messages are parsed repeatedly by

* bloomkit: ``_core._protobuf_fields`` for the PostScript, Footer, stripe
  footers and each ``BloomFilterIndex``, and ``OrcBloomFilter.from_orc_bytes``
  for each filter (the filter ready to probe);
* protobuf: ``FromString`` of the same messages with classes built from a
  descriptor of the few ``orc_proto.proto`` messages needed, and the filter's
  words copied into an ``OrcBloomFilter`` (``from_orc_bytes`` of the
  ``utf8bitset``, as a reader on protobuf would do).

    python benchmarks/orc_protobuf_parse.py --rows 2000000
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(__file__))
from _common import header, parse_count  # noqa: E402


def orc_messages():
    """Message classes for the orc_proto.proto messages a Bloom filter reader needs."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    F = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(name="orc_bloom_subset.proto", package="orc.proto", syntax="proto2")

    def message(name, *fields):
        m = proto.message_type.add(name=name)
        for number, field_name, kind, label, type_name in fields:
            f = m.field.add(name=field_name, number=number, type=kind, label=label)
            if type_name:
                f.type_name = f".orc.proto.{type_name}"

    opt, rep = F.LABEL_OPTIONAL, F.LABEL_REPEATED
    message(
        "BloomFilter",
        (1, "num_hash_functions", F.TYPE_UINT32, opt, None),
        (2, "bitset", F.TYPE_FIXED64, rep, None),
        (3, "utf8bitset", F.TYPE_BYTES, opt, None),
    )
    message("BloomFilterIndex", (1, "bloom_filter", F.TYPE_MESSAGE, rep, "BloomFilter"))
    message(
        "Stream",
        (1, "kind", F.TYPE_UINT32, opt, None),
        (2, "column", F.TYPE_UINT32, opt, None),
        (3, "length", F.TYPE_UINT64, opt, None),
    )
    message("ColumnEncoding", (1, "kind", F.TYPE_UINT32, opt, None), (3, "bloom_encoding", F.TYPE_UINT32, opt, None))
    message(
        "StripeFooter",
        (1, "streams", F.TYPE_MESSAGE, rep, "Stream"),
        (2, "columns", F.TYPE_MESSAGE, rep, "ColumnEncoding"),
    )
    message(
        "StripeInformation",
        *[
            (n, name, F.TYPE_UINT64, opt, None)
            for n, name in enumerate(["offset", "index_length", "data_length", "footer_length", "number_of_rows"], 1)
        ],
    )
    message(
        "Type",
        (1, "kind", F.TYPE_UINT32, opt, None),
        (2, "subtypes", F.TYPE_UINT32, rep, None),
        (3, "field_names", F.TYPE_STRING, rep, None),
    )
    message(
        "Footer",
        (3, "stripes", F.TYPE_MESSAGE, rep, "StripeInformation"),
        (4, "types", F.TYPE_MESSAGE, rep, "Type"),
        (8, "row_index_stride", F.TYPE_UINT32, opt, None),
    )
    message(
        "PostScript",
        (1, "footer_length", F.TYPE_UINT64, opt, None),
        (2, "compression", F.TYPE_UINT32, opt, None),
        (3, "compression_block_size", F.TYPE_UINT64, opt, None),
        (8000, "magic", F.TYPE_STRING, opt, None),
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return {
        name: message_factory.GetMessageClass(pool.FindMessageTypeByName(f"orc.proto.{name}"))
        for name in ("BloomFilterIndex", "StripeFooter", "Footer", "PostScript")
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=parse_count, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    import pyarrow as pa
    import pyarrow.orc

    import bloomkit.orc as bo
    from bloomkit import _core
    from bloomkit.orc_bloom import OrcBloomFilter

    header("ORC protobuf messages: bloomkit's wire reader vs protobuf (upb)", args)
    ids = np.random.default_rng(1).permutation(args.rows).astype(np.int64)
    table = pa.table({"id": ids, "s": pa.array([f"user-{i}" for i in ids[: args.rows]])})
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "t.orc")
        pyarrow.orc.write_table(
            table, path, compression="zlib", stripe_size=4 << 20, bloom_filter_columns=[1, 2], bloom_filter_fpp=0.01
        )
        # The messages, read and decompressed once (the same bytes for both parsers).
        with bo._OrcFile(path) as orc:
            size = orc.size
            ps_length = orc.read_at(size - 1, 1, "")[0]
            postscript = orc.read_at(size - 1 - ps_length, ps_length, "")
            footer_length = dict(orc.parse(postscript, ""))[1]
            footer = orc.decompress(orc.read_at(size - 1 - ps_length - footer_length, footer_length, ""), "")
            stripe_footers, indexes = [], []
            for stripe in orc.stripes:
                at = stripe.offset + stripe.index_length + stripe.data_length
                stripe_footers.append(orc.decompress(orc.read_at(at, stripe.footer_length, ""), ""))
                position = stripe.offset
                for number, value in orc.parse(stripe_footers[-1], ""):
                    if number == 1:
                        s = dict(orc.parse(value, ""))
                        if s.get(1) == 8:
                            indexes.append(orc.decompress(orc.read_at(position, s[3], ""), ""))
                        position += s.get(3, 0)
    filters = sum(len([1 for n, _ in _core._protobuf_fields(i, "") if n == 1]) for i in indexes)
    megabytes = sum(map(len, indexes)) / 1e6
    print(
        f"rows {args.rows:,}; stripes {len(stripe_footers)}; Bloom filters {filters:,} ({megabytes:.1f} MB of messages)"
    )

    def bloomkit_parse():
        _core._protobuf_fields(postscript, "PostScript")
        for number, value in _core._protobuf_fields(footer, "Footer"):
            if number in (3, 4):
                _core._protobuf_fields(value, "")
        for message in stripe_footers:
            for number, value in _core._protobuf_fields(message, ""):
                if number == 1:
                    _core._protobuf_fields(value, "")
        return [OrcBloomFilter.from_orc_bytes(v) for i in indexes for n, v in _core._protobuf_fields(i, "") if n == 1]

    try:
        classes = orc_messages()
    except ImportError:
        classes = None

    def protobuf_parse():
        classes["PostScript"].FromString(postscript)
        classes["Footer"].FromString(footer)
        for message in stripe_footers:
            classes["StripeFooter"].FromString(message)
        out = []
        for i in indexes:
            for bloom in classes["BloomFilterIndex"].FromString(i).bloom_filter:
                # The words into a filter: the same reader, from the protobuf fields.
                out.append(
                    OrcBloomFilter.from_orc_bytes(
                        b"\x08"
                        + bytes([bloom.num_hash_functions])
                        + b"\x1a"
                        + _varint(len(bloom.utf8bitset))
                        + bloom.utf8bitset
                    )
                )
        return out

    for name, parse in (("bloomkit wire reader", bloomkit_parse), ("protobuf (upb)", protobuf_parse)):
        if parse is protobuf_parse and classes is None:
            print(f"{name:>22}: protobuf is not installed")
            continue
        best = min(_timed(parse) for _ in range(args.repeat))
        print(
            f"{name:>22}: {best * 1e3:8.2f} ms for the tail, {len(stripe_footers)} stripe footers and {filters:,} filters"
        )


def _timed(parse) -> float:
    start = time.perf_counter()
    parse()
    return time.perf_counter() - start


def _varint(value: int) -> bytes:
    out = bytearray()
    while value >= 0x80:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


if __name__ == "__main__":
    main()
