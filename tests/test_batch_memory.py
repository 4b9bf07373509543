"""A batch call's working memory does not grow with the batch (issue 8).

Keys are hashed a chunk at a time (keys.hpp, hash_chunks) and a list of str
a block at a time beyond its first 2^20 keys (those are hashed while the
list is validated and their digests kept: at most 16 MiB, whatever the
length), so ``update``/``contains_many`` over n keys need the result array
(n bytes for ``contains_many``) and a fixed amount besides, not 16 bytes of
digest per key. Each case runs in a fresh subprocess; the extra
memory is the peak RSS (VmHWM) during the call minus the RSS just before it.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

from support import PEAK_RSS_HELPERS

SCRIPT = PEAK_RSS_HELPERS + textwrap.dedent(
    """
    import sys
    import numpy as np
    import bloomkit

    kind, operation, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
    if kind == "uint64":
        keys = np.random.default_rng(1).integers(0, 2**63, size=n, dtype=np.uint64)
    elif kind == "string[pyarrow]":  # a pandas column over one Arrow chunk: read in place, offsets too
        import pandas as pd

        keys = pd.Series([f"https://example.com/page/{i}" for i in range(n)], dtype="string[pyarrow]")
    else:
        keys = [f"https://example.com/page/{i}" for i in range(n)]
    f = bloomkit.BloomFilter(n, 0.01)
    f.update(keys if operation == "contains_many" else keys[:1000])
    before = rss("VmRSS:")
    reset_peak()
    if operation == "update":
        f.update(keys)
    else:
        result = f.contains_many(keys)
        assert result.all()
    print(rss("VmHWM:") - before)
    """
)

MIB = 2**20


def extra_bytes(kind: str, operation: str, n: int) -> int:
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT, kind, operation, str(n)], capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr[-2000:]
    return int(result.stdout.strip())


@pytest.mark.parametrize("kind", ["uint64", "str"])
@pytest.mark.parametrize("operation", ["update", "contains_many"])
def test_batch_working_memory_is_bounded(kind, operation):
    n = 4_000_000 if kind == "uint64" else 3_000_000
    extra = extra_bytes(kind, operation, n)
    # The filter's own pages are touched during update (~1.3 bytes per key at
    # 1 %); contains_many returns n bytes; a str list's first 2^20 digests
    # are a fixed 16 MiB. Digests for the whole batch would add 16 bytes per
    # key (64 MB / 48 MB here).
    result = n if operation == "contains_many" else 0
    filter_pages = 2 * n if operation == "update" else 0
    hashed_while_validating = 16 * MIB if kind == "str" else 0
    assert extra <= result + filter_pages + hashed_while_validating + 8 * MIB, (extra / MIB, n)


def test_a_string_pyarrow_column_is_read_in_place_offsets_too():
    """The offsets are read in place (clamped per key) rather than copied: 8 bytes per key."""
    pytest.importorskip("pyarrow")
    pytest.importorskip("pandas")
    n = 5_000_000  # past what the heap has free after building the column, so a copy would show
    extra = extra_bytes("string[pyarrow]", "contains_many", n)
    assert extra <= n + 4 * MIB, (extra / MIB, n)  # the result array; copied offsets measured +38 MiB more
