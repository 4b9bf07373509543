"""Chunked Arrow columns read in place (``ChunkedBatch``): a pyarrow ChunkedArray, a polars
Series of several chunks and an Arrow PyCapsule stream give exactly the results of the same
keys in one chunk, for every batch operation and filter type, validated as one batch
(all-or-nothing, errors naming the index in the whole column), without a combined copy."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np
import pytest

import bloomkit
from bloomkit import _batch, _core
from support import PEAK_RSS_HELPERS

pa = pytest.importorskip("pyarrow")

KEYS = [f"https://example.com/{i % 700}" for i in range(3000)]
CUTS = [0, 1, 500, 500, 1234, 2999, 3000]  # an empty chunk, a one-key chunk, uneven sizes


def chunked(array):
    """``array`` (one chunk) as a ChunkedArray of zero-copy slices at CUTS."""
    return pa.chunked_array([array[a:b] for a, b in zip(CUTS, CUTS[1:])], type=array.type)


def arrow_columns():
    strings = pa.array(KEYS)
    return {
        "string": strings,
        "large_string": strings.cast(pa.large_string()),
        "string_view": strings.cast(pa.string_view()),
        "binary": strings.cast(pa.binary()),
        "large_binary": strings.cast(pa.large_binary()),
        "int64": pa.array(np.arange(3000, dtype=np.int64) % 700),
        "uint32": pa.array((np.arange(3000) % 700).astype(np.uint32)),
        "float64": pa.array((np.arange(3000) % 700) / 4),
        "timestamp": pa.array((np.arange(3000) % 700).astype("datetime64[s]")),
        "date32": pa.array((np.arange(3000) % 700).astype("datetime64[D]")),
        "dictionary": strings.dictionary_encode(),
    }


def new_filters():
    # Layouts named: the default layout is not what these tests are about.
    return [
        bloomkit.BloomFilter(2000, 0.01, layout="classic"),
        bloomkit.BloomFilter(2000, 0.01, layout="split_block"),
        bloomkit.CountingBloomFilter(2000, 0.01),
        bloomkit.ScalableBloomFilter(initial_capacity=100, error_rate=0.01, layout="blocked512"),
        bloomkit.CuckooFilter(10_000, 0.01),  # stores every copy: 4,500 here
        bloomkit.BloomFilter(2000, 0.01, layout="split_block", secret_key=b"k" * 16),
    ]


@pytest.mark.parametrize("type_name", list(arrow_columns()))
def test_a_chunked_array_is_one_batch_read_in_place(type_name):
    single = arrow_columns()[type_name]
    batch = _batch.single_batch(chunked(single))
    assert isinstance(batch, _core.ChunkedBatch) and len(batch) == len(single) == 3000


@pytest.mark.parametrize("type_name", list(arrow_columns()))
def test_chunked_arrays_give_the_single_chunk_results_on_every_filter(type_name):
    single = arrow_columns()[type_name]
    many = chunked(single)
    for one_chunk, chunks in zip(new_filters(), new_filters()):
        expected_new = one_chunk.add_many(single[:1500])
        assert np.array_equal(chunks.add_many(many[:1500]), expected_new)
        if not isinstance(one_chunk, bloomkit.CuckooFilter):  # a cuckoo filter keeps each copy: not twice
            one_chunk.update(single)
            chunks.update(many)
        assert one_chunk == chunks, type(one_chunk).__name__
        reverse = _batch.reversed_arrow(single)  # string_view: take() has no kernel for it
        probe_single, probe_many = reverse, chunked(reverse)
        assert np.array_equal(chunks.contains_many(probe_many), one_chunk.contains_many(probe_single))
        assert chunks.contains_many(many).all()


@pytest.mark.parametrize("type_name", list(arrow_columns()))
@pytest.mark.parametrize("keep", ["first", "last"])
@pytest.mark.parametrize("kind", ["bloom", "cuckoo"])
def test_dedup_mask_of_a_chunked_array_is_the_single_chunk_mask(type_name, keep, kind):
    single = arrow_columns()[type_name]
    expected = bloomkit.dedup_mask(single, keep=keep, kind=kind)
    assert expected.sum() == 700
    assert np.array_equal(bloomkit.dedup_mask(chunked(single), keep=keep, kind=kind), expected)


def test_polars_series_of_several_chunks():
    pl = pytest.importorskip("polars")
    parts = [pl.Series("url", KEYS[a:b]) for a, b in zip(CUTS, CUTS[1:])]
    series = pl.concat(parts, rechunk=False)
    assert series.n_chunks() > 1
    single = pl.Series("url", KEYS)
    for keep in ("first", "last"):
        assert np.array_equal(bloomkit.dedup_mask(series, keep=keep), bloomkit.dedup_mask(single, keep=keep))
    for one_chunk, chunks in zip(new_filters(), new_filters()):
        assert np.array_equal(chunks.add_many(series), one_chunk.add_many(single))
        assert one_chunk == chunks
        assert np.array_equal(chunks.contains_many(series.reverse()), one_chunk.contains_many(single.reverse()))


def test_an_arrow_stream_from_nanoarrow_and_duckdb():
    na = pytest.importorskip("nanoarrow")
    duckdb = pytest.importorskip("duckdb")
    stream = na.Array(chunked(pa.array(KEYS)))  # a foreign object with __arrow_c_stream__
    assert stream.n_chunks > 1
    for one_chunk, chunks in zip(new_filters(), new_filters()):
        assert np.array_equal(chunks.add_many(stream), one_chunk.add_many(KEYS))
        assert one_chunk == chunks
        assert chunks.contains_many(stream).all()
    assert np.array_equal(bloomkit.dedup_mask(stream), bloomkit.dedup_mask(KEYS))
    # DuckDB's result: a stream of several record batches (2048 rows each).
    relation = duckdb.sql("select 'k' || (i % 1000)::VARCHAR as s from range(5000) t(i)")
    mask = bloomkit.dedup_mask(relation)
    assert mask.sum() == 1000 and mask[:1000].all() and not mask[1000:].any()


@pytest.mark.parametrize("kind", ["null", "out_of_range"])
def test_a_bad_key_in_a_later_chunk_names_its_index_in_the_column_and_changes_nothing(kind):
    if kind == "null":
        good, bad, message = pa.array(KEYS), pa.array(["x", None]), "key at index 3001 is null"
    else:
        seconds = np.array([0, 10**12], dtype="datetime64[s]")  # 10**12 s is past 2262: no int64 ns
        good = pa.array(np.arange(3000).astype("datetime64[s]"))
        bad, message = pa.array(seconds), "key at index 3001 is a datetime64"
    column = pa.chunked_array([good[:1000], good[1000:], bad])
    for filter_ in new_filters():
        before = filter_.to_bytes()
        for call in (filter_.update, filter_.add_many, filter_.contains_many):
            with pytest.raises(ValueError, match=message):
                call(column)
        assert filter_.to_bytes() == before
    with pytest.raises(ValueError, match=message):
        bloomkit.dedup_mask(column)


def test_a_full_cuckoo_filter_stops_at_the_same_key_of_a_chunked_column():
    # A cuckoo filter's add_many inserts up to the key that does not fit and names it:
    # the same key (its index in the whole column) and the same state as one chunk.
    single = pa.array([f"key-{i}" for i in range(3000)])
    outcomes = []
    for keys in (single, chunked(single)):
        filter_ = bloomkit.CuckooFilter(100, 0.01)
        with pytest.raises(bloomkit.FilterFullError) as raised:
            filter_.add_many(keys)
        outcomes.append((str(raised.value), raised.value.index, filter_.to_bytes()))
    assert outcomes[0] == outcomes[1] and outcomes[0][1] > 100


def test_chunked_batch_refuses_nested_batches():
    with pytest.raises(TypeError, match="ChunkedBatch chunk must be"):
        _core.ChunkedBatch([_core.ChunkedBatch([])])


PEAK_SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import sys
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import bloomkit

    n, chunks, keep = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
    ids = pa.array(np.random.default_rng(1).integers(0, n // 2, size=n)).cast(pa.string())
    urls = pc.binary_join_element_wise("https://www.example.com/articles/", ids, "?ref=feed", "")
    size = -(-n // chunks)
    column = pa.chunked_array([urls[i : i + size] for i in range(0, n, size)]) if chunks > 1 else urls
    assert (column.num_chunks if chunks > 1 else 1) == chunks
    before = rss("VmRSS:")
    reset_peak()
    mask = bloomkit.dedup_mask(column, error_rate=0.001, keep=keep)
    extra = rss("VmHWM:") - before
    print(extra, int(mask.sum()))
    """
)


def dedup_extra_bytes(n: int, chunks: int, keep: str) -> tuple:
    result = subprocess.run(
        [sys.executable, "-c", PEAK_SCRIPT, str(n), str(chunks), keep], capture_output=True, text=True, timeout=600
    )
    assert result.returncode == 0, result.stderr[-2000:]
    extra, distinct = result.stdout.split()
    return int(extra), int(distinct)


@pytest.mark.parametrize("keep", ["first", "last"])
def test_dedup_mask_of_a_chunked_5m_row_column_needs_the_memory_of_one_chunk(keep):
    n = 5_000_000
    single, distinct_single = dedup_extra_bytes(n, 1, keep)
    many, distinct_many = dedup_extra_bytes(n, 39, keep)
    assert distinct_single == distinct_many
    # Both: the filter (~1.8 bytes/row at 0.001), the result and mask arrays
    # (1 byte/row each) and the two-thread insert's buffers: ~40 MiB here;
    # keep="last" adds one reversed copy of the column (~280 MiB), in both.
    # Combining the chunks would add the column's ~330 MB. Tolerance: 64 MiB,
    # a fifth of that: two processes' peaks differ by allocator arenas, 2 MiB
    # huge pages and the chunks' batch objects, and 8 MiB failed once in CI
    # while three other CPython suites ran beside this one.
    print(
        f"dedup_mask(keep={keep!r}) extra peak RSS, 5M rows: one chunk {single / 2**20:.1f} MiB, 39 chunks {many / 2**20:.1f} MiB"
    )
    assert single <= (16 if keep == "first" else 96) * n, single / 2**20
    assert many <= single + 64 * 2**20, (many / 2**20, single / 2**20)
