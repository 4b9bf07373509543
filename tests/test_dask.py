"""bloomkit.dask against a real dask.distributed LocalCluster (worker processes, not threads).

One cluster of two single-threaded worker processes serves the whole module,
so every filter and partition crosses a process boundary by pickling, as on
a real cluster. Every result is compared with the same computation done
locally in this process.
"""

from __future__ import annotations

import numpy as np
import pytest

import bloomkit
from bloomkit import _types
from support import fpr_upper_bound, random_strings

pd = pytest.importorskip("pandas")
dd = pytest.importorskip("dask.dataframe")
distributed = pytest.importorskip("distributed")
import bloomkit.dask as bkdask  # noqa: E402

pytestmark = pytest.mark.integration

N = 100_000


@pytest.fixture(scope="module")
def client():
    cluster = distributed.LocalCluster(
        n_workers=2, threads_per_worker=1, processes=True, dashboard_address=None, memory_limit="2GiB"
    )
    with distributed.Client(cluster) as client:
        yield client
    cluster.close()


@pytest.fixture(scope="module")
def urls():
    return ["https://example.com/" + s for s in random_strings(N, seed=11)]


def test_the_cluster_runs_tasks_in_other_processes(client):
    import os

    pids = set(client.run(os.getpid).values())
    assert len(pids) == 2 and os.getpid() not in pids


@pytest.mark.parametrize("partitions", [1, 7])
def test_build_filter_is_byte_equal_to_a_local_build(client, urls, partitions):
    ddf = dd.from_pandas(pd.DataFrame({"url": urls}), npartitions=partitions)
    built = bkdask.build_filter(ddf, "url", capacity=N, error_rate=0.01, seed=5)
    local = bloomkit.BloomFilter(N, 0.01, seed=5)
    local.update(urls)
    assert built.to_bytes() == local.to_bytes()
    assert ddf.npartitions == partitions


def test_build_filter_skips_nulls_and_reads_integer_columns(client):
    values = pd.Series([1, None, 3, 2**40, None], dtype="Int64")
    built = bkdask.build_filter(dd.from_pandas(values, npartitions=2), capacity=100)
    local = bloomkit.BloomFilter(100, 0.01)
    local.update([1, 3, 2**40])
    assert built == local


@pytest.mark.statistical
def test_build_filter_sized_from_the_data_keeps_the_error_rate(client, urls):
    ddf = dd.from_pandas(pd.DataFrame({"url": urls + urls[: N // 2]}), npartitions=5)  # repeats do not count
    built = bkdask.build_filter(ddf, "url", error_rate=0.01)
    assert N <= built.capacity <= int(N * 1.05)
    assert built.contains_many(urls).all()
    absent = ["https://absent.example/" + s for s in random_strings(200_000, seed=12)]
    rate = built.contains_many(absent).mean()
    assert rate <= fpr_upper_bound(0.01, len(absent))


def test_might_contain_finds_every_member_and_equals_the_local_answers(client, urls):
    f = bloomkit.BloomFilter(N, 0.01)
    f.update(urls[: N // 2])
    probe = pd.DataFrame({"url": urls, "n": np.arange(N)})
    ddf = dd.from_pandas(probe, npartitions=6)
    answers = bkdask.might_contain(f, ddf, "url").compute()
    assert answers.dtype == bool
    assert answers.to_numpy().tolist() == f.contains_many(urls).tolist()
    assert answers.iloc[: N // 2].all()  # no false negatives
    kept = ddf[~bkdask.might_contain(f, ddf["url"])].compute()  # anti-join: certainly absent
    assert set(kept["url"]).isdisjoint(urls[: N // 2])
    assert rate_ok(len(kept), N - N // 2)


def rate_ok(kept, absent):
    return (absent - kept) / absent <= fpr_upper_bound(0.01, absent)


def test_might_contain_answers_false_for_nulls_like_isin(client):
    f = bloomkit.BloomFilter(100, 0.01)
    f.update(["a", "b"])
    s = dd.from_pandas(pd.Series(["a", None, "c", "b"]), npartitions=2)
    assert bkdask.might_contain(f, s).compute().tolist() == [True, False, False, True]


def test_might_contain_takes_every_filter_type(client):
    keys = list(range(0, 20_000, 2))
    probe = dd.from_pandas(pd.Series(np.arange(20_000)), npartitions=4)
    for row in _types.ROWS:
        f = row.build(keys, 20_000)
        got = bkdask.might_contain(f, probe).compute().to_numpy()
        assert got.tolist() == f.contains_many(np.arange(20_000)).tolist(), type(f).__name__


def test_might_contain_ships_the_filter_once_per_worker(client):
    f = bloomkit.BloomFilter(1000, 0.01)
    f.update(["x"])
    column = bkdask.might_contain(f, dd.from_pandas(pd.Series(["x", "y"] * 50), npartitions=10))
    graph = dict(column.__dask_graph__())
    holding = [key for key, task in graph.items() if _holds(task, f)]
    assert len(holding) == 1  # one graph key holds the filter; the ten partition tasks refer to it


def _holds(task, f):
    try:
        return bool(f == task) if isinstance(task, bloomkit.BloomFilter) else _holds_value(task, f)
    except TypeError:
        return False


def _holds_value(task, f):
    value = getattr(task, "value", None)
    return isinstance(value, bloomkit.BloomFilter) and value == f


@pytest.mark.parametrize("keep", ["first", "last"])
def test_dedup_mask_equals_the_local_mask_in_partition_order(client, urls, keep):
    rng = np.random.default_rng(3)
    values = [urls[i] for i in rng.integers(0, N // 4, size=N)]  # about 4 repeats per value
    frame = pd.DataFrame({"url": values}, index=pd.RangeIndex(10, 10 + N))
    ddf = dd.from_pandas(frame, npartitions=7)
    mask = bkdask.dedup_mask(ddf["url"], keep=keep).compute()
    local = bloomkit.dedup_mask(frame["url"], keep=keep)
    assert mask.index.equals(local.index)
    assert mask.to_numpy().tolist() == local.to_numpy().tolist()
    exact = ~frame["url"].duplicated(keep=keep)
    assert not (mask & ~exact).any()  # a repeat is never kept
    lost = int((exact & ~mask).sum())  # first occurrences taken for repeats (false positives)
    assert lost <= fpr_upper_bound(0.001, int(exact.sum())) * exact.sum()
    assert ddf[bkdask.dedup_mask(ddf["url"], keep=keep)].compute().shape[0] == int(mask.sum())


def test_dedup_mask_of_rows_and_subset_equals_the_local_mask(client):
    rng = np.random.default_rng(4)
    frame = pd.DataFrame({"user": rng.integers(0, 300, 20_000), "day": rng.integers(0, 20, 20_000)})
    ddf = dd.from_pandas(frame, npartitions=5)
    assert bkdask.dedup_mask(ddf).compute().to_numpy().tolist() == bloomkit.dedup_mask(frame).to_numpy().tolist()
    by_user = bkdask.dedup_mask(ddf, subset=["user"], keep="last").compute()
    assert by_user.to_numpy().tolist() == bloomkit.dedup_mask(frame, subset=["user"], keep="last").tolist()
    assert int(by_user.sum()) <= 300


def test_bad_arguments_are_refused_before_any_task(client):
    s = dd.from_pandas(pd.Series(["a"]), npartitions=1)
    with pytest.raises(ValueError, match="keep must be 'first' or 'last'"):
        bkdask.dedup_mask(s, keep="middle")
    with pytest.raises(TypeError, match="subset= needs a DataFrame"):
        bkdask.dedup_mask(s, subset=["a"])
    with pytest.raises(TypeError, match="needs a column name"):
        bkdask.build_filter(s.to_frame("x"))
    with pytest.raises(TypeError, match="expected a dask.dataframe"):
        bkdask.build_filter(pd.Series(["a"]))
    with pytest.raises(ValueError, match="error_rate"):
        bkdask.build_filter(s, capacity=10, error_rate=1.5)
    with pytest.raises(TypeError, match="needs a bloomkit filter"):
        bkdask.might_contain({"a"}, s)
    keyed = bloomkit.BloomFilter(10, 0.01, secret_key=b"k" * 32)
    with pytest.raises(ValueError, match="secret_key is never shipped"):
        bkdask.might_contain(keyed, s)


def test_a_missing_value_is_refused_like_the_local_dedup_mask(client):
    s = dd.from_pandas(pd.Series(["a", None, "b"]), npartitions=1)
    with pytest.raises((TypeError, ValueError)) as dask_error:
        bkdask.dedup_mask(s).compute()
    with pytest.raises(type(dask_error.value)) as local_error:
        bloomkit.dedup_mask(pd.Series(["a", None, "b"]))
    assert str(dask_error.value) == str(local_error.value)


def test_the_guide_example_runs_as_written(client):
    import pathlib
    import re

    guide = (pathlib.Path(__file__).parent.parent / "docs" / "integrations.md").read_text()
    section = guide[guide.index("## Dask") :]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    exec(compile(code, "docs/integrations.md (Dask)", "exec"), {})
