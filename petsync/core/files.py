"""Writing files so that a crash never leaves half of one, and locking so two runs never race.

The one recipe for every file petsync publishes (snapshot files, import outputs, reports,
metrics): write under a temporary name in the same directory, flush and ``fsync`` it,
``rename`` it over the target, then ``fsync`` the directory so the rename itself survives
a power cut. A reader sees the old file or the new one, never a mix.

Only a regular file (or no file yet) is ever replaced by rename. A path that names something
else is written through, never replaced (:func:`atomic_writer`): a device or FIFO
(``/dev/null``, ``/dev/stdout`` on a terminal or pipe) gets the text written to it; a path
that is this process's own stdout or stderr (``/dev/stdout`` when cron appends it to a log)
gets the text appended, so the log is not truncated; a symbolic link to a regular file
keeps the link, and the file it points to is replaced atomically.

Before a job sends its first request, :func:`check_writable_dir` and
:func:`check_writable_file` prove each output location writable, so a bad path fails at
once (exit 2) instead of after an hour of work.

Locks are ``flock`` on an open file: the kernel drops them when the holder exits for any
reason (SIGKILL and power loss included), so there is never a stale lock to clean by hand.
petsync runs on POSIX systems (Linux, macOS), where ``fcntl`` exists.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal

from petsync.core.errors import ConfigError, InputError, LockedError

# Errors of fsync on a directory that mean "this file system cannot", not "it failed".
_NO_DIRECTORY_SYNC = frozenset({errno.EINVAL, errno.ENOTSUP, errno.EBADF, errno.EISDIR})
_PROBE_PREFIX = ".petsync-probe-"


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

    A ``path`` that is not a regular file is written through instead (see the module's
    docstring): a device, FIFO or this process's stdout or stderr gets the text directly
    (appended, never truncated; ``mode`` does not apply), and a symbolic link to a regular
    file has that file replaced. A symbolic link itself is never replaced.

    >>> with atomic_writer(Path("report.json")) as handle:   # doctest: +SKIP
    ...     handle.write("{}")
    """
    kind, path = write_kind(path)
    if kind == "direct":
        with _direct_writer(path, encoding=encoding, newline=newline) as handle:
            yield handle
        return
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


WriteKind = Literal["replace", "direct"]


def write_kind(path: Path) -> tuple[WriteKind, Path]:
    """How :func:`atomic_writer` writes ``path``, and the path it really writes.

    ``replace``: absent or a regular file, replaced by rename (through a symbolic link: the
    file the link points to, keeping the link). ``direct``: a device, FIFO or socket, or the
    file behind this process's own stdout or stderr, written to in place.

    >>> write_kind(Path("/dev/null"))
    ('direct', PosixPath('/dev/null'))
    """
    try:
        target = path.stat()
    except FileNotFoundError:  # nothing there, or a dangling link: create what it names
        return "replace", Path(os.path.realpath(path)) if path.is_symlink() else path
    if not stat.S_ISREG(target.st_mode) or _is_own_stream(target):
        return "direct", path
    return "replace", Path(os.path.realpath(path)) if path.is_symlink() else path


def _is_own_stream(target: os.stat_result) -> bool:
    """True when ``target`` is the file behind this process's stdout or stderr."""
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if os.path.samestat(target, os.fstat(fd)):
                return True
    return False


@contextlib.contextmanager
def _direct_writer(path: Path, *, encoding: str, newline: str | None) -> Iterator[IO[str]]:
    # O_APPEND: /dev/stdout behind cron's `>>log` must add to the log, not overwrite its
    # start; on devices and FIFOs it changes nothing. No O_CREAT, no O_TRUNC.
    for stream in (sys.stdout, sys.stderr):  # what was printed before comes first
        with contextlib.suppress(Exception):
            stream.flush()
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | getattr(os, "O_NOCTTY", 0))
    with os.fdopen(fd, "w", encoding=encoding, newline=newline) as handle:
        yield handle


def check_writable_dir(directory: Path, what: str) -> None:
    """Fail (:class:`ConfigError`, exit 2) unless files can be created in ``directory``.

    A directory that does not exist yet passes when its nearest existing ancestor is a
    directory files can be created in (the job creates the rest). The proof is a real one:
    an empty file is created there and removed, so a read-only file system, a full inode
    table or missing permissions all show before the first request is sent.
    ``what`` names the location in the message: ``"export directory (--out)"``.
    """
    existing = directory
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            f"{what} {directory}: {existing} is not a directory; choose another location"
        )
    _probe(existing, what, directory)


def check_writable_file(path: Path, what: str, *, parent_made: bool = False) -> None:
    """Fail (:class:`ConfigError`, exit 2) unless :func:`atomic_writer` can write ``path``.

    ``what`` names the file in the message: ``"report file (--report)"``. With
    ``parent_made`` a missing directory passes as in :func:`check_writable_dir`: the caller
    creates it before writing.
    """
    if path.is_dir():
        raise ConfigError(f"{what} {path} is a directory; name a file, e.g. {path}/report.json")
    kind, target = write_kind(path)
    if kind == "direct":
        if not os.access(path, os.W_OK):
            raise ConfigError(f"{what} {path}: not writable; choose another file")
        return
    if parent_made and not os.path.lexists(target.parent):
        check_writable_dir(target.parent, f"{what} {path}: directory")
        return
    if not target.parent.is_dir():
        raise ConfigError(
            f"{what} {path}: directory {target.parent} does not exist; create it first"
        )
    _probe(target.parent, what, path)


def _probe(directory: Path, what: str, named: Path) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=_PROBE_PREFIX, suffix=".tmp", dir=directory)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            f"{what} {named}: cannot create files in {directory} ({reason}); choose a "
            "location petsync can write to, or fix its permissions"
        ) from exc
    os.close(fd)
    os.unlink(name)


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


def open_locked(path: Path, busy: str) -> int:
    """Open (or create) ``path`` for appending and take its lock; the open descriptor.

    Raises :class:`~petsync.core.errors.InputError` naming the file when it cannot be opened,
    and :class:`~petsync.core.errors.LockedError` with ``busy`` when another holds it.
    """
    try:
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    except OSError as exc:
        raise InputError(f"cannot open journal {path}: {exc.strerror or exc}") from exc
    if not try_lock(fd):
        os.close(fd)
        raise LockedError(busy)
    return fd


def unlock(fd: int) -> None:
    """Release a lock taken with :func:`try_lock` (closing the file releases it too)."""
    fcntl.flock(fd, fcntl.LOCK_UN)
