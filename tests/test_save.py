"""save() replaces a file's content and nothing else (issue 10, defect 7)."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import textwrap

import pytest

import bloomkit


def sample():
    f = bloomkit.BloomFilter(1000, 0.01)
    f.update(["a", "b", "c"])
    return f


def temporaries(directory):
    return sorted(name for name in os.listdir(directory) if name.endswith(".bloomkit-tmp"))


def test_save_keeps_the_mode_of_an_existing_file(tmp_path):
    path = tmp_path / "secret.bkf"
    path.write_bytes(b"old")
    os.chmod(path, 0o600)
    sample().save(path)
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert bloomkit.load(path) == sample()
    os.chmod(path, 0o640)
    sample().save(str(path))
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o640


def test_save_of_a_new_file_follows_the_umask(tmp_path):
    old = os.umask(0o027)
    try:
        sample().save(tmp_path / "new.bkf")
    finally:
        os.umask(old)
    assert stat.S_IMODE(os.stat(tmp_path / "new.bkf").st_mode) == 0o640


def test_save_writes_through_a_symlink(tmp_path):
    real = tmp_path / "data" / "filter.bkf"
    real.parent.mkdir()
    real.write_bytes(b"stale")
    link = tmp_path / "current.bkf"
    link.symlink_to(real)
    sample().save(link)
    assert link.is_symlink()
    assert os.readlink(link) == str(real)
    assert real.read_bytes() == sample().to_bytes()
    assert temporaries(real.parent) == [] and temporaries(tmp_path) == []


def test_save_refuses_non_regular_targets(tmp_path):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    with pytest.raises(
        ValueError, match=rf"cannot save to {fifo}: it is a FIFO; save\(\) atomically replaces regular files only"
    ):
        sample().save(fifo)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)
    with pytest.raises(ValueError, match="it is a character device"):
        sample().save("/dev/null")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
    link = tmp_path / "out"
    link.symlink_to("/dev/null")
    with pytest.raises(ValueError, match="it is a character device"):
        sample().save(link)
    with pytest.raises(IsADirectoryError):
        sample().save(tmp_path)
    assert temporaries(tmp_path) == []


def test_save_errors_name_the_target_not_the_temporary_file(tmp_path):
    target = tmp_path / "missing-directory" / "f.bkf"
    with pytest.raises(FileNotFoundError) as info:
        sample().save(target)
    assert info.value.filename == str(target)
    assert ".bloomkit-tmp" not in str(info.value)

    from bloomkit import _io

    def no_space(handle):
        raise OSError(28, "No space left on device", handle.name)

    with pytest.raises(OSError) as info:
        _io.atomic_write(tmp_path / "g.bkf", no_space)
    assert info.value.errno == 28 and info.value.filename == str(tmp_path / "g.bkf")
    assert temporaries(tmp_path) == []


def test_save_removes_stale_temporaries_of_killed_saves(tmp_path):
    path = tmp_path / "f.bkf"
    # A save SIGKILLed half-way leaves its temporary file behind.
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            textwrap.dedent(f"""
            import os, signal, bloomkit
            from bloomkit import _io
            def write(handle):
                handle.write(b"partial")
                handle.flush()
                os.kill(os.getpid(), signal.SIGKILL)
            _io.atomic_write({str(path)!r}, write)
        """),
        ]
    )
    child.wait(timeout=60)
    assert child.returncode == -9
    assert len(temporaries(tmp_path)) == 1
    # Another process's temporary file (this one is alive) is left alone.
    live = tmp_path / f".f.bkf.{os.getpid()}.abc123.bloomkit-tmp"
    live.write_bytes(b"in progress")
    sample().save(path)
    assert temporaries(tmp_path) == [live.name]
    assert bloomkit.load(path) == sample()


def test_failed_save_leaves_the_old_file_and_no_temporary(tmp_path):
    path = tmp_path / "f.bkf"
    sample().save(path)
    before = path.read_bytes()
    from bloomkit import _io

    def failing(handle):
        handle.write(b"half")
        raise RuntimeError("disk on fire")

    with pytest.raises(RuntimeError, match="disk on fire"):
        _io.atomic_write(path, failing)
    assert path.read_bytes() == before
    assert temporaries(tmp_path) == []


def run_cli(*args, **kwargs):
    return subprocess.run([sys.executable, "-m", "bloomkit", *args], capture_output=True, timeout=60, **kwargs)


def test_cli_build_dash_o_dash_writes_stdout(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("a\nb\nc\n")
    result = run_cli("build", "-o", "-", "--capacity", "1000", "--error-rate", "0.01", "-q", str(keys), cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert not (tmp_path / "-").exists()
    f = bloomkit.BloomFilter.from_bytes(result.stdout)
    assert f == sample()


def test_cli_build_refuses_to_replace_a_device(tmp_path):
    keys = tmp_path / "keys.txt"
    keys.write_text("a\n")
    result = run_cli("build", "-o", "/dev/null", "--capacity", "10", "--error-rate", "0.01", "-q", str(keys))
    assert result.returncode == 2
    assert b"cannot save to /dev/null: it is a character device" in result.stderr
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode)
