"""How a filter reaches Spark's Python workers, classic or Spark Connect, loaded once per worker process.

A classic session broadcasts the filter's bytes. A Spark Connect session has
no broadcast variables (no ``sparkContext``): a filter of at most
:data:`CLOSURE_BYTES` travels inside the UDF itself; a larger one is written
to a file and uploaded with ``SparkSession.addArtifacts(path, file=True)``,
which streams it in small chunks, and each worker maps that file
(the class's ``open(SparkFiles.get(name))``, no copy). Either way a
worker process loads a filter once (a cache keyed by a token per shipment)
and reuses it for every batch. docs/integrations.md, "Spark Connect".
"""

from __future__ import annotations

import os
import shutil
import tempfile
import uuid

from . import _types
from .spark_sketch import SparkBloomFilter

# The bloomkit filters a UDF can ship, by the name ShippedFilter.kind holds,
# from the type registry: each loads from its frame (from_bytes) and maps a
# file read-only (open: the `mappable` rows), except a windowed one, whose
# answers depend on the clock and rotations of the process holding it (a
# shipped copy would never forget).
_SHIPPABLE = {row.class_name: row for row in _types.FRAMED if row.mappable and not row.windowed}

# Largest filter that travels inside the UDF on a Spark Connect session. The
# UDF is part of every query plan that uses it, so a closed-over filter is
# re-sent and re-read with every query (and a plan is one gRPC message, capped
# at 128 MiB; a 125 MB filter closed over made the server fail with
# OutOfMemoryError). Measured on a local Connect server, one query over 20,000
# keys: at 1 MB the closure and the artifact cost about the same (0.8 s vs
# 0.5 s + 0.2 s upload), at 3.9 MB 0.66 s vs 0.6 s + 0.2 s, at 15.8 MB the
# closure 1.3-2.0 s per query and the artifact 0.5-1.0 s (+ 0.5 s once).
CLOSURE_BYTES = 4 << 20

# token -> filter, per Python worker process.
_FILTERS: dict = {}
# token -> how many times this process loaded it (tests read it).
_LOADS: dict = {}


def is_connect(obj) -> bool:
    """Whether a session, DataFrame or Column belongs to Spark Connect (no JVM on this side)."""
    return type(obj).__module__.startswith("pyspark.sql.connect")


def _payload(filter) -> tuple:
    if isinstance(filter, SparkBloomFilter):
        return "spark", filter.to_spark_bytes()
    cls = type(filter)
    try:
        kind = _types.row_of(cls).class_name
    except TypeError:
        kind = None
    if kind not in _SHIPPABLE:
        raise TypeError(
            f"might_contain needs a bloomkit {', '.join(_SHIPPABLE)} or SparkBloomFilter, got {cls.__name__}"
        )
    if filter.keyed:
        # Its frame cannot be loaded without the key, which is never serialized.
        raise ValueError(f"might_contain needs an unkeyed {cls.__name__}: a secret_key is never shipped to executors")
    return kind, None  # bytes made only by the route that needs them


class ShippedFilter:
    """What a UDF closes over: where its worker finds the filter (``route``: broadcast, closure or artifact)."""

    __slots__ = ("token", "kind", "route", "source")

    def __init__(self, kind: str, route: str, source) -> None:
        self.token = uuid.uuid4().hex
        self.kind, self.route, self.source = kind, route, source

    def __getstate__(self):
        return self.token, self.kind, self.route, self.source

    def __setstate__(self, state) -> None:
        self.token, self.kind, self.route, self.source = state

    def get(self):
        """The filter, loaded on this process's first call and cached for the next ones."""
        cached = _FILTERS.get(self.token)
        if cached is None:
            cached = _FILTERS[self.token] = self._load()
            _LOADS[self.token] = _LOADS.get(self.token, 0) + 1
        return cached

    def _load(self):
        if self.route == "artifact":
            from pyspark import SparkFiles

            path = SparkFiles.get(self.source)
            if self.kind != "spark":
                return _SHIPPABLE[self.kind].cls.open(
                    path
                )  # mapped read-only: pages shared by every worker on the host
            with open(path, "rb") as handle:
                data = handle.read()
        else:
            data = self.source.value if self.route == "broadcast" else self.source
        return (
            SparkBloomFilter.from_spark_bytes(data)
            if self.kind == "spark"
            else _SHIPPABLE[self.kind].cls.from_bytes(data)
        )


def ship(filter, session) -> ShippedFilter:
    """Send ``filter`` towards the workers of ``session`` (``None``: the classic SparkContext)."""
    kind, data = _payload(filter)
    if session is None or not is_connect(session):
        from pyspark import SparkContext

        context = SparkContext.getOrCreate() if session is None else session.sparkContext
        return ShippedFilter(kind, "broadcast", context.broadcast(data if data is not None else filter.to_bytes()))
    if filter.nbytes <= CLOSURE_BYTES:
        return ShippedFilter(kind, "closure", data if data is not None else filter.to_bytes())
    if not hasattr(session, "addArtifacts"):  # Spark Connect clients before 3.5
        raise ValueError(
            f"this filter is {filter.nbytes} bytes; a Spark Connect client without SparkSession.addArtifacts "
            f"(PySpark < 3.5) can ship at most {CLOSURE_BYTES} bytes inside a UDF. Use PySpark >= 3.5, "
            "a classic session, or a smaller filter (a higher error_rate)"
        )
    directory = tempfile.mkdtemp(prefix="bloomkit-ship-")
    try:
        name = f"bloomkit-{uuid.uuid4().hex}.filter"
        path = os.path.join(directory, name)
        if data is None:
            filter.save(path)
        else:
            with open(path, "wb") as handle:
                handle.write(data)
        session.addArtifacts(path, file=True)
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    return ShippedFilter(kind, "artifact", name)
