"""Reading and atomically writing serialized filters.

Reading checks the 24-byte header (magic, version, type, lengths) before
anything else and then reads exactly the frame length it declares (a regular
file straight into the filter, anything else into one buffer of that size),
so a wrong file (``bloomkit info /dev/zero``, a 2 GB text file passed as a
filter) fails after 24 bytes, not after reading it all.

Writing replaces the target atomically (temporary file, fsync, rename) and
keeps everything about it except the content: the mode and, where the
process may set it, the owner; a symlink is followed and its target
replaced. Device nodes, FIFOs, sockets and directories are refused rather
than replaced by a regular file. docs/RELIABILITY.md lists these promises.
"""

from __future__ import annotations

import errno
import os
import stat
import tempfile

from . import _core, _keyed, _types

HEADER_SIZE = 24
_TEMP_SUFFIX = ".bloomkit-tmp"


def read_frame(path_or_bytes):
    """The bytes of a serialized filter given as bytes-like data or a file path.

    Bytes-like data is returned as is (the loaders accept any buffer); a
    file is validated header first and read into a buffer of exactly the
    declared frame length.
    """
    if isinstance(path_or_bytes, (bytes, bytearray, memoryview)):
        return path_or_bytes
    if isinstance(path_or_bytes, (str, os.PathLike)):
        name = os.fspath(path_or_bytes)
        with open(path_or_bytes, "rb") as handle:
            header, _type_tag, total = _declared_frame(handle, name)
            return _read_rest(handle, name, header, total)
    raise TypeError(f"expected a path or bytes-like data, got {type(path_or_bytes).__name__}")


def class_of_frame(data) -> type:
    """The public class of the frame ``data``, from its type tag as the core's header parser reads it."""
    return _types.row_for_tag(_core.peek_type(data)).cls


def load_file(path, secret_key, expected=None):
    """The filter saved at ``path``: of class ``expected``, or the class its type tag names.

    A regular file is read once, straight into the filter's own storage
    (``Core(fd=...)``: cpp/include/bloomkit/frame_reader.hpp, with the
    checksum computed as it is read), so loading any type needs one filter's
    worth of memory, not two. Anything else (a pipe, a character device) is
    read into a buffer of the declared length first and rebuilt from it.
    """
    name = os.fspath(path)
    with open(path, "rb") as handle:
        header, type_tag, total = _declared_frame(handle, name)
        cls = expected if expected is not None else _types.row_for_tag(type_tag).cls
        if stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
            instance = cls.__new__(cls)
            cls._core_class.__init__(instance, fd=handle.fileno(), key=_keyed.master_key(secret_key))
            return instance
        return cls.from_bytes(_read_rest(handle, name, header, total), secret_key=secret_key)


def _declared_frame(handle, name: str) -> tuple:
    """(header, type tag, declared frame length) of an open file, checked before any large read or allocation."""
    header = handle.read(HEADER_SIZE)
    # Raises ValueError for a short header, bad magic, version, type tag or
    # impossible lengths.
    type_tag, total = _core.frame_header(header)
    info = os.fstat(handle.fileno())
    if stat.S_ISREG(info.st_mode):
        if info.st_size != total:
            raise ValueError(
                f"{name}: the header declares a {total:,}-byte filter but the file has {info.st_size:,} bytes "
                "(truncated or extended data)"
            )
    elif total > _core.available_memory():
        raise ValueError(f"{name}: the header declares a {total:,}-byte filter, more than the memory available")
    return header, type_tag, total


def _read_rest(handle, name: str, header: bytes, total: int) -> bytearray:
    """The whole frame: ``header`` and the rest of the file, read into one buffer of the declared length."""
    frame = bytearray(total)
    frame[:HEADER_SIZE] = header
    view = memoryview(frame)
    filled = HEADER_SIZE
    while filled < total:
        count = handle.readinto(view[filled:])
        if not count:
            raise ValueError(f"{name}: truncated data: the header declares {total:,} bytes but only {filled:,} follow")
        filled += count
    if handle.read(1):
        raise ValueError(f"{name}: extended data: more bytes follow the {total:,}-byte filter the header declares")
    return frame


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _remove_stale_temporaries(directory: str, base: str) -> None:
    """Delete temporary files of earlier saves to ``base`` whose process is gone (e.g. SIGKILLed)."""
    prefix = f".{base}."
    try:
        names = os.listdir(directory)
    except OSError:
        return
    for name in names:
        if not (name.startswith(prefix) and name.endswith(_TEMP_SUFFIX)):
            continue
        pid_text = name[len(prefix) :].split(".", 1)[0]
        if pid_text.isdigit() and not _pid_alive(int(pid_text)):
            try:
                os.unlink(os.path.join(directory, name))
            except OSError:
                pass


def _describe_kind(mode: int) -> str:
    for check, kind in (
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if check(mode):
            return kind
    return "not a regular file"


def atomic_write(path, write) -> None:
    """Replace ``path`` by what ``write(handle)`` writes, atomically.

    The bytes go to a temporary file next to the real target (same file
    system, so the rename is atomic), are fsynced, get the old file's mode
    and owner, then are renamed over the target; the directory is fsynced
    so the rename itself is durable. Errors name ``path``, never the
    temporary file, and the temporary file is removed on any error.
    """
    path = os.fspath(path)
    target = os.path.realpath(path)  # a symlink's target is what gets replaced
    try:
        existing = os.stat(target)
    except FileNotFoundError:
        existing = None
    except OSError as error:
        raise _naming(error, path) from None
    if existing is not None:
        if stat.S_ISDIR(existing.st_mode):
            raise IsADirectoryError(errno.EISDIR, "is a directory", path)
        if not stat.S_ISREG(existing.st_mode):
            raise ValueError(
                f"cannot save to {path}: it is {_describe_kind(existing.st_mode)}; save() atomically replaces "
                "regular files only (write filter.to_bytes() to it yourself)"
            )
    directory, base = os.path.split(target)
    _remove_stale_temporaries(directory, base)
    try:
        descriptor, temporary = tempfile.mkstemp(dir=directory, prefix=f".{base}.{os.getpid()}.", suffix=_TEMP_SUFFIX)
    except OSError as error:
        raise _naming(error, path) from None
    try:
        with os.fdopen(descriptor, "wb") as handle:
            write(handle)
            handle.flush()
            if existing is not None:
                os.fchmod(handle.fileno(), stat.S_IMODE(existing.st_mode))
                if (existing.st_uid, existing.st_gid) != (os.geteuid(), os.getegid()):
                    try:
                        os.fchown(handle.fileno(), existing.st_uid, existing.st_gid)
                    except PermissionError:
                        pass  # only root may give a file away; the mode is still kept
            else:
                # mkstemp creates 0600; give a new file the permissions open() would.
                umask = os.umask(0)
                os.umask(umask)
                os.fchmod(handle.fileno(), 0o666 & ~umask)
            os.fsync(handle.fileno())
        os.replace(temporary, target)
    except BaseException as error:
        try:
            os.unlink(temporary)
        except FileNotFoundError:
            pass
        if isinstance(error, OSError):
            raise _naming(error, path) from None
        raise
    if hasattr(os, "O_DIRECTORY"):
        directory_fd = os.open(directory or ".", os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(directory_fd)
        finally:
            os.close(directory_fd)


def _naming(error: OSError, path: str) -> OSError:
    """The same kind of OSError, naming the user's path instead of a temporary file."""
    if error.errno is None:
        return error
    return type(error)(error.errno, error.strerror or str(error), path)
