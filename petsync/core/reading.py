"""Reading a local file: what it is, and how big, is checked before a byte of it is read.

Every local path petsync reads (an import's spreadsheet, a key file, ``petsync.toml``, a job
file, the metrics file it merges, the CA file handed to libcurl) goes through this module,
so one rule holds for all of them:

- The path is opened with ``O_NONBLOCK`` and then examined with ``fstat`` on the open
  descriptor, never by name first: opening a FIFO with no writer returns at once, and what
  is examined is what will be read, even if the name is swapped in between.
- Only a regular file is read. A FIFO, a device (``/dev/zero``, ``/dev/stdin`` on a
  terminal), a socket or a directory is a :class:`~petsync.core.errors.UsageError` (exit 2)
  naming the path and what it is: such a file can block forever or never end.
- A file over its size bound is refused the same way, naming the bound. Reading stops at
  the bound plus one byte whatever ``fstat`` said, so a file that grows while it is read
  is caught too.
- With a :class:`~petsync.core.stop.StopRequest`, every read of the handle first looks at
  it: a signal ends even a long read (hashing a large spreadsheet) within one chunk.

The bounds live in :mod:`petsync.core.interface`; docs/limits.md tabulates them.
"""

from __future__ import annotations

import io
import os
import stat
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from petsync.core.errors import InputError, UsageError
from petsync.core.stop import StopRequest

# Flags for every read: never block on a FIFO's open, never become a controlling terminal.
_OPEN_FLAGS = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_NOCTTY", 0) | os.O_CLOEXEC


# What a file's mode says it is, in the words a message uses; the first test that holds wins.
_KINDS: tuple[tuple[Callable[[int], bool], str], ...] = (
    (stat.S_ISREG, "a regular file"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO (named pipe)"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISLNK, "a symbolic link"),
)


def describe_kind(mode: int) -> str:
    """What a file is, in words, from its ``st_mode``.

    >>> describe_kind(stat.S_IFIFO), describe_kind(stat.S_IFCHR | 0o666)
    ('a FIFO (named pipe)', 'a character device')
    """
    return next((kind for test, kind in _KINDS if test(mode)), "not a regular file")


def open_regular(
    path: Path,
    what: str,
    *,
    limit: int | None,
    error: type[UsageError] = InputError,
    stop: StopRequest | None = None,
) -> BinaryIO:
    """``path`` opened for reading in binary, once proven a regular file within ``limit`` bytes.

    ``what`` names the file in messages (``"API key file"``); ``error`` is the class raised
    (:class:`~petsync.core.errors.ConfigError` for settings, ``InputError`` for data). An
    ``OSError`` of the open (missing file, no permission) is raised as ``error`` too. With
    ``stop``, a read after a stop request raises the request's
    :class:`~petsync.core.errors.StoppedError`. Reads never go past ``limit + 1`` bytes.
    ``limit`` None is for petsync's own files read a line at a time (journals, whose size
    follows the rows imported): their kind is still checked.

    >>> with open_regular(Path("pets.csv"), "spreadsheet", limit=2**30) as f:  # doctest: +SKIP
    ...     head = f.read(4096)
    """
    fd = _open_checked(path, what, limit, error)
    raw = _CheckedRaw(fd, path, what, limit, error, stop)
    return io.BufferedReader(raw)


def read_regular(
    path: Path,
    what: str,
    *,
    limit: int | None,
    error: type[UsageError] = InputError,
    stop: StopRequest | None = None,
) -> bytes:
    """The whole content of ``path``, checked as :func:`open_regular` checks it.

    >>> read_regular(Path("/dev/zero"), "key file", limit=4096)
    Traceback (most recent call last):
    petsync.core.errors.InputError: key file /dev/zero is a character device, not a regular ...
    """
    with open_regular(path, what, limit=limit, error=error, stop=stop) as handle:
        return handle.read()


def check_regular(
    path: Path, what: str, *, limit: int, error: type[UsageError] = InputError
) -> os.stat_result:
    """Prove ``path`` a readable regular file within ``limit`` bytes, without reading it.

    For a path handed to a library that opens it itself (a workbook reader, libcurl's CA
    file): the open is real (so permissions are proven), then closed.
    """
    fd = _open_checked(path, what, limit, error)
    try:
        return os.fstat(fd)
    finally:
        os.close(fd)


def regular_descriptor(
    path: Path | str, named: str, advice: str, *, error: type[UsageError] = InputError
) -> int:
    """A descriptor of ``path`` opened for reading, once proven a regular file.

    The open never blocks (a FIFO with no writer answers at once); an ``OSError`` of the
    open (a missing file) is raised as it is. Anything but a regular file is ``error``:
    "``named`` is a FIFO (named pipe), not a regular file; ``advice``".
    """
    fd = os.open(path, _OPEN_FLAGS)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise error(f"{named} is {describe_kind(mode)}, not a regular file; {advice}")
        # A regular file never blocks; clear the flag so reads behave as usual anyway.
        os.set_blocking(fd, True)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _open_checked(path: Path, what: str, limit: int | None, error: type[UsageError]) -> int:
    advice = (
        "petsync reads only regular files (a pipe or device could block or never end): save "
        "the content to a file and name that file"
    )
    try:
        fd = regular_descriptor(path, f"{what} {path}", advice, error=error)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise error(f"cannot read {what} {path}: {reason}") from exc
    if limit is not None and os.fstat(fd).st_size > limit:
        os.close(fd)
        raise _too_big(path, what, limit, error)
    return fd


def _too_big(path: Path, what: str, limit: int, error: type[UsageError]) -> UsageError:
    return error(
        f"{what} {path} is over {limit} bytes, the most petsync reads from such a file "
        "(docs/limits.md): is it the right file?"
    )


class _CheckedRaw(io.RawIOBase):
    """A file descriptor read with the stop request looked at and the size bound kept."""

    def __init__(
        self,
        fd: int,
        path: Path,
        what: str,
        limit: int | None,
        error: type[UsageError],
        stop: StopRequest | None,
    ) -> None:
        super().__init__()
        self._file = io.FileIO(fd, "rb", closefd=True)
        self._path, self._what, self._limit, self._error = path, what, limit, error
        self._stop = stop

    def readable(self) -> bool:
        return True

    def fileno(self) -> int:
        return self._file.fileno()

    def seekable(self) -> bool:
        return True

    def seek(self, offset: int, whence: int = os.SEEK_SET) -> int:
        return self._file.seek(offset, whence)

    def tell(self) -> int:
        return self._file.tell()

    def readinto(self, buffer: memoryview | bytearray) -> int:  # type: ignore[override]
        if self._stop is not None and self._stop.requested:
            raise self._stop.error(
                f"reading {self._what} {self._path} was stopped by {self._stop.description}"
            )
        view = memoryview(buffer)
        if self._limit is not None:  # never past the bound plus one byte
            view = view[: max(self._limit + 1 - self._file.tell(), 0)]
        got = self._file.readinto(view) or 0
        if self._limit is not None and self._file.tell() > self._limit:
            raise _too_big(self._path, self._what, self._limit, self._error)
        return got

    def close(self) -> None:
        if not self.closed:
            self._file.close()
        super().close()
