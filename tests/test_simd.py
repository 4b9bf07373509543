"""The SIMD kernels (cpp/include/bloomkit/simd.hpp) give the same filters as the portable code.

The level is chosen once, at import, from the CPU and the BLOOMKIT_SIMD
environment variable, so each level runs in its own interpreter: the same
keys go through per-key calls and batches of every layout (plain, scalable
and keyed filters), and the resulting bytes and answers must be equal.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

import bloomkit
from bloomkit import _core

# Fills filters of every layout through every path that reaches the in-block
# code (per-key add / in, NumPy and list batches, add_many's answers) and
# writes their bytes and answers to files in the directory given as argv[1].
CHILD = textwrap.dedent(
    """
    import json, os, sys
    import numpy as np
    import bloomkit
    from bloomkit import _core

    out = sys.argv[1]
    rng = np.random.default_rng(7)
    ints = rng.integers(0, 2**64, size=40_000, dtype=np.uint64)
    probes = rng.integers(0, 2**64, size=40_000, dtype=np.uint64)
    strs = [f"https://example.org/{i}/page?q={i * 7919}" for i in range(5_000)]
    answers = {"level": _core.simd_level()}
    for layout in ("classic", "blocked512", "split_block"):
        f = bloomkit.BloomFilter(30_000, 0.01, layout=layout, seed=5)
        answers[layout + " add_many"] = f.add_many(ints[:20_000]).tolist()
        f.update(strs[:2_500])
        answers[layout + " add"] = [f.add(k) for k in strs[2_000:]] + [f.add(int(k)) for k in ints[19_000:21_000]]
        answers[layout + " contains_many"] = f.contains_many(probes).tolist()
        answers[layout + " in"] = [k in f for k in strs] + [int(k) in f for k in probes[:3_000]]
        with open(os.path.join(out, layout + ".bloom"), "wb") as fh:
            fh.write(f.to_bytes())
        s = bloomkit.ScalableBloomFilter(2_000, 0.01, layout=layout, seed=3)
        s.update(ints[:9_000])
        answers[layout + " scalable"] = s.contains_many(probes[:5_000]).tolist()
        with open(os.path.join(out, layout + ".scalable"), "wb") as fh:
            fh.write(s.to_bytes())
        k = bloomkit.BloomFilter(10_000, 0.01, layout=layout, secret_key=b"0123456789abcdef")
        answers[layout + " keyed"] = k.add_many(ints[:10_000]).tolist() + [x in k for x in strs]
        with open(os.path.join(out, layout + ".keyed"), "wb") as fh:
            fh.write(k.to_bytes())
    with open(os.path.join(out, "answers.json"), "w") as fh:
        json.dump(answers, fh)
    """
)


def run_child(tmp_path, level: str) -> tuple[dict, dict]:
    out = tmp_path / level
    out.mkdir()
    env = dict(os.environ, BLOOMKIT_SIMD=level)
    subprocess.run([sys.executable, "-c", CHILD, str(out)], env=env, check=True, timeout=300)
    answers = json.loads((out / "answers.json").read_text())
    frames = {p.name: p.read_bytes() for p in sorted(out.iterdir()) if p.name != "answers.json"}
    return answers, frames


def test_every_level_builds_identical_filters(tmp_path):
    levels = ["portable", "auto"] + (["avx2"] if _core.simd_supported() == "avx2" else [])
    results = {level: run_child(tmp_path, level) for level in levels}
    assert results["portable"][0]["level"] == "portable"
    assert results["auto"][0]["level"] == _core.simd_supported()
    ref_answers, ref_frames = results["portable"]
    assert len(ref_frames) == 9
    # The answers are not trivial: the inserted keys are found, most probes are not.
    for layout in ("classic", "blocked512", "split_block"):
        assert all(ref_answers[layout + " in"][:5_000])
        assert 0 < sum(ref_answers[layout + " contains_many"]) < 40_000 * 0.05
    for level, (answers, frames) in results.items():
        assert frames.keys() == ref_frames.keys()
        for name, blob in frames.items():
            assert blob == ref_frames[name], f"{name} differs at level {level}"
        for key, value in answers.items():
            if key != "level":
                assert value == ref_answers[key], f"{key} differs at level {level}"


def test_switching_levels_in_process_keeps_results():
    # _set_simd_level is what the benchmark uses to interleave both levels.
    keys = list(range(0, 3_000_000, 97))
    saved = _core.simd_level()
    try:
        blobs = []
        for level in ("portable", _core.simd_supported()):
            _core._set_simd_level(level)
            assert _core.simd_level() == level
            f = bloomkit.BloomFilter(len(keys), 0.01, layout="split_block")
            for k in keys:
                f.add(k)
            assert all(k in f for k in keys)
            blobs.append(f.to_bytes())
        assert blobs[0] == blobs[1]
    finally:
        _core._set_simd_level(saved)


def test_bad_level_is_refused():
    with pytest.raises(ValueError, match=r"unknown SIMD level 'sse9': expected 'auto', 'avx2' or 'portable'"):
        _core._set_simd_level("sse9")
    if _core.simd_supported() == "portable":
        with pytest.raises(ValueError, match=r"SIMD level 'avx2' is not supported by this CPU or build"):
            _core._set_simd_level("avx2")


def test_bad_environment_value_fails_the_import():
    env = dict(os.environ, BLOOMKIT_SIMD="fastest")
    proc = subprocess.run(
        [sys.executable, "-c", "import bloomkit"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode != 0
    assert "BLOOMKIT_SIMD: unknown SIMD level 'fastest': expected 'auto', 'avx2' or 'portable'" in proc.stderr
