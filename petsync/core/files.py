"""Writing files so that a crash never leaves half of one, and locking so two runs never race.

The one recipe for every file petsync publishes (snapshot files, import outputs, reports,
metrics): write under a temporary name in the same directory, flush and ``fsync`` it,
``rename`` it over the target, then ``fsync`` the directory so the rename itself survives
a power cut. A reader sees the old file or the new one, never a mix.

Locks are ``flock`` on an open file: the kernel drops them when the holder exits for any
reason (SIGKILL and power loss included), so there is never a stale lock to clean by hand.
petsync runs on POSIX systems (Linux, macOS), where ``fcntl`` exists.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO

# Errors of fsync on a directory that mean "this file system cannot", not "it failed".
_NO_DIRECTORY_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EISDIR})


def fsync_file(path: Path) -> None:
    """Flush a file's data to disk by path (one a writer has already closed)."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def fsync_dir(directory: Path) -> None:
    """Make renames and creations inside ``directory`` durable.

    File systems that cannot sync a directory (some network and FUSE mounts answer
    EINVAL) are accepted silently: there, nothing more can be done.
    """
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:
        if exc.errno not in _NO_DIRECTORY_SYNC:
            raise
    finally:
        os.close(fd)


@contextlib.contextmanager
def atomic_writer(
    path: Path, *, encoding: str = "utf-8", newline: str | None = "\n", mode: int | None = None
) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` in one step when the block ends.

    If the block raises, the temporary file is removed and ``path`` is untouched. The
    temporary name starts with ``.`` and ends with ``.tmp``, so globs like ``*.prom`` or
    ``*.csv`` never match it while it is written. ``mode`` sets the permission bits
    (``mkstemp`` creates files readable by the owner only).

    >>> with atomic_writer(Path("report.json")) as handle:   # doctest: +SKIP
    ...     handle.write("{}")
    """
    fd, temp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    temp = Path(temp_name)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline=newline) as handle:
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        if mode is not None:
            os.chmod(temp, mode)
        os.replace(temp, path)
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def atomic_write_text(
    path: Path, text: str, *, encoding: str = "utf-8", mode: int | None = None
) -> None:
    """Replace ``path`` with ``text`` atomically and durably (see :func:`atomic_writer`)."""
    with atomic_writer(path, encoding=encoding, mode=mode) as handle:
        handle.write(text)


def try_lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on an open file without waiting; False if another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def unlock(fd: int) -> None:
    """Release a lock taken with :func:`try_lock` (closing the file releases it too)."""
    fcntl.flock(fd, fcntl.LOCK_UN)
