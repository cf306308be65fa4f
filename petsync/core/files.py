"""Writing files so that a crash never leaves half of one, a planted link is never followed,
and locking so two runs never race.

The one recipe for every file petsync publishes (snapshot files, import outputs, journals,
reports, history files, metrics): create a new file under a temporary name in the same
directory (``O_EXCL``: never an existing file, never through a link), flush and ``fsync``
it, ``rename`` it over the target, then ``fsync`` the directory so the rename itself
survives a power cut. A reader sees the old file or the new one, never a mix.

Outputs land in directories others may write to: a shared inbox, an ``--out-dir``, a
textfile collector's directory. A symbolic link planted at an output's name
(``drop.rejects.csv -> ~/.ssh/authorized_keys``) must not turn the import into an
overwrite of the link's target, nor a FIFO planted there into a run that blocks forever.
So :func:`write_kind` looks at the name itself (``lstat``): only an absent name or a
regular file is written, by the rename above, which replaces the name and never follows
it. A symbolic link (dangling or not), a FIFO, a device, a socket or a directory is a
:class:`~petsync.core.errors.ConfigError` (exit 2) naming the path. One exception: the
file behind this process's own stdout or stderr (``--report /dev/stdout`` in a cron line
that appends to a log) is appended to, never truncated or replaced; that writes nowhere
the person running petsync did not send its output already.

New files get the mode the user's umask gives (0644 under umask 022), as any tool's
output does; a caller that needs another mode passes it.

Before a job sends its first request, :func:`check_writable_dir` and
:func:`check_writable_file` prove each output location writable (and not a link), so a bad
path fails at once (exit 2) instead of after an hour of work.

Locks are ``flock`` on an open file: the kernel drops them when the holder exits for any
reason (SIGKILL and power loss included), so there is never a stale lock to clean by hand.
petsync runs on POSIX systems (Linux, macOS), where ``fcntl`` exists.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import secrets
import stat
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import IO, Literal

from petsync.core.errors import ConfigError, InputError, LockedError
from petsync.core.reading import describe_kind
from petsync.core.wording import Said

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
    path: Path,
    *,
    encoding: str = "utf-8",
    newline: str | None = "\n",
    mode: int | None = None,
    what: Said = "output file",
) -> Iterator[IO[str]]:
    """A text handle whose content replaces ``path`` in one step when the block ends.

    If the block raises, the temporary file is removed and ``path`` is untouched. The
    temporary name starts with ``.`` and ends with ``.tmp``, so globs like ``*.prom`` or
    ``*.csv`` never match it while it is written. ``mode`` sets the permission bits
    (default: what the umask gives a new file).

    A ``path`` that is a link or not a regular file is refused (see the module's
    docstring), :class:`ConfigError` naming it as ``what``; this process's own stdout or
    stderr is appended to.

    >>> with atomic_writer(Path("report.json")) as handle:   # doctest: +SKIP
    ...     handle.write("{}")
    """
    kind = write_kind(path, what)
    if kind == "stream":
        with _stream_writer(path, what, encoding=encoding, newline=newline) as handle:
            yield handle
        return
    fd, temp = _create_temp(path)
    try:
        with os.fdopen(fd, "w", encoding=encoding, newline=newline) as handle:
            if mode is not None:
                os.fchmod(handle.fileno(), mode)
            yield handle
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)  # replaces the name: a link planted since is not followed
    except BaseException:
        temp.unlink(missing_ok=True)
        raise
    fsync_dir(path.parent)


def _create_temp(path: Path) -> tuple[int, Path]:
    """A new, empty file beside ``path``: the umask's mode, never an existing name."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC | getattr(os, "O_NOFOLLOW", 0)
    while True:
        temp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
        try:
            return os.open(temp, flags, 0o666), temp
        except FileExistsError:  # 1 in 4 billion: pick another name
            continue


WriteKind = Literal["replace", "stream"]


def write_kind(path: Path, what: Said = "output file") -> WriteKind:
    """How :func:`atomic_writer` writes ``path``, or :class:`ConfigError` if it may not.

    ``replace``: absent or a regular file, replaced by rename. ``stream``: the file behind
    this process's own stdout or stderr, appended to. Anything else at the name (a
    symbolic link, dangling or not; a FIFO, device, socket or directory) is refused.

    >>> write_kind(Path("/dev/null"))
    Traceback (most recent call last):
    petsync.core.errors.ConfigError: output file /dev/null is a character device, not a regular ...
    """
    try:
        here = path.lstat()
    except FileNotFoundError:
        return "replace"
    if stat.S_ISREG(here.st_mode):
        return "replace"
    with contextlib.suppress(OSError):
        if _is_own_stream(path.stat()):
            return "stream"
    raise ConfigError(_refusal(path, here, what))


def _refusal(path: Path, here: os.stat_result, what: Said) -> Said:
    if stat.S_ISLNK(here.st_mode):
        try:
            target = f" to {os.readlink(path)}"
        except OSError:
            target = ""
        dangling = "" if os.path.exists(path) else ", which points nowhere,"
        return (
            what + f" {path} is a symbolic link{target}{dangling} and petsync never writes "
            "through a link at an output's name (one planted in a shared directory would "
            "have petsync overwrite the file it points to): remove the link, or choose "
            "another location"
        )
    return (
        what + f" {path} is {describe_kind(here.st_mode)}, not a regular file; petsync "
        "writes outputs only as regular files: remove it, or choose another location"
    )


def _is_own_stream(target: os.stat_result) -> bool:
    """True when ``target`` is the file behind this process's stdout or stderr."""
    return _own_stream_fd(target) is not None


def _own_stream_fd(target: os.stat_result) -> int | None:
    """1 or 2 when ``target`` is the file behind that descriptor, else None."""
    for fd in (1, 2):
        with contextlib.suppress(OSError):
            if os.path.samestat(target, os.fstat(fd)):
                return fd
    return None


@contextlib.contextmanager
def _stream_writer(
    path: Path, what: Said, *, encoding: str, newline: str | None
) -> Iterator[IO[str]]:
    # Written through a copy of the descriptor itself, never by opening ``path`` again: a
    # link at the name swapped between the check and an open (`-> /proc/self/fd/1`, then
    # `-> ~/.ssh/authorized_keys`) would have the rows appended where it then points. The
    # copy shares the stream's offset and flags (cron's `>>log` stays an append).
    own = None
    with contextlib.suppress(OSError):
        own = _own_stream_fd(path.stat())
    if own is None:  # the name changed since write_kind looked at it
        raise ConfigError(
            what + f" {path} changed while petsync was about to write it: it no longer names "
            "this process's own output; look at what stands there and run again"
        )
    for stream in (sys.stdout, sys.stderr):  # what was printed before comes first
        with contextlib.suppress(Exception):
            stream.flush()
    with os.fdopen(os.dup(own), "w", encoding=encoding, newline=newline) as handle:
        yield handle


def own_folder(directory: Path, what: Said) -> None:
    """Create ``directory`` (parents too) unless it exists; refuse a link or a file there.

    For a folder petsync fills and prunes itself (``OUT/pets``, ``OUT/history``): a link
    planted at its name, dangling or not, would have petsync write, replace and remove files
    wherever it points, so it is :class:`ConfigError` (exit 2) naming it, never followed.
    """
    try:
        mode = os.lstat(directory).st_mode
    except FileNotFoundError:
        directory.mkdir(parents=True, exist_ok=True)
        mode = os.lstat(directory).st_mode
    if not stat.S_ISDIR(mode):
        raise ConfigError(
            what + f" {directory} is {describe_kind(mode)}, not a folder; petsync keeps its "
            "files in a folder of its own and never follows a link there (one planted would "
            "have petsync write and remove files where it points): remove it (a run "
            "re-creates the folder) and run again"
        )


def check_writable_dir(directory: Path, what: Said) -> None:
    """Fail (:class:`ConfigError`, exit 2) unless files can be created in ``directory``.

    A directory that does not exist yet passes when its nearest existing ancestor is a
    directory files can be created in (the job creates the rest). The proof is a real one:
    an empty file is created there and removed, so a read-only file system, a full inode
    table or missing permissions all show before the first request is sent.
    ``what`` names the location in the message: ``"export directory (" + OUT + ")"``
    (a message naming a setting: :mod:`petsync.core.wording`).
    """
    existing = directory
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise ConfigError(
            what + f" {directory}: {existing} is not a directory; choose another location"
        )
    _probe(existing, what, directory)


def check_writable_file(path: Path, what: Said, *, parent_made: bool = False) -> None:
    """Fail (:class:`ConfigError`, exit 2) unless :func:`atomic_writer` can write ``path``.

    ``what`` names the file in the message: ``"report file (" + REPORT + ")"``. With
    ``parent_made`` a missing directory passes as in :func:`check_writable_dir`: the caller
    creates it before writing.
    """
    if path.is_dir() and not path.is_symlink():
        raise ConfigError(what + f" {path} is a directory; name a file, e.g. {path}/report.json")
    if write_kind(path, what) == "stream":
        if not os.access(path, os.W_OK):
            raise ConfigError(what + f" {path}: not writable; choose another file")
        return
    if parent_made and not os.path.lexists(path.parent):
        check_writable_dir(path.parent, what + f" {path}: directory")
        return
    if not path.parent.is_dir():
        raise ConfigError(
            what + f" {path}: directory {path.parent} does not exist; create it first"
        )
    _probe(path.parent, what, path)


def _probe(directory: Path, what: Said, named: Path) -> None:
    try:
        fd, name = tempfile.mkstemp(prefix=_PROBE_PREFIX, suffix=".tmp", dir=directory)
    except OSError as exc:
        reason = exc.strerror or str(exc)
        raise ConfigError(
            what + f" {named}: cannot create files in {directory} ({reason}); choose a "
            "location petsync can write to, or fix its permissions"
        ) from exc
    os.close(fd)
    os.unlink(name)


def atomic_write_text(
    path: Path,
    text: str,
    *,
    encoding: str = "utf-8",
    mode: int | None = None,
    what: Said = "output file",
) -> None:
    """Replace ``path`` with ``text`` atomically and durably (see :func:`atomic_writer`)."""
    with atomic_writer(path, encoding=encoding, mode=mode, what=what) as handle:
        handle.write(text)


def try_lock(fd: int) -> bool:
    """Take an exclusive ``flock`` on an open file without waiting; False if another holds it."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    return True


def open_append(path: Path, what: Said, *, read: bool = False) -> int:
    """Open (or create, with the umask's mode) ``path`` for appending; the open descriptor.

    The file appended to (a journal, an index) must be a regular file: a symbolic link at
    the name is never followed (``O_NOFOLLOW``) and a FIFO never blocks the open
    (``O_NONBLOCK``); either is :class:`~petsync.core.errors.InputError` (exit 2) naming
    the path, as is a file that cannot be opened. ``read`` opens it for reading too.
    """
    flags = os.O_RDWR if read else os.O_WRONLY
    flags |= os.O_CREAT | os.O_APPEND | os.O_NONBLOCK | os.O_CLOEXEC
    flags |= getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags, 0o666)
    except OSError as exc:
        if exc.errno == errno.ELOOP or path.is_symlink():
            raise InputError(_refusal(path, path.lstat(), what)) from exc
        if exc.errno == errno.ENXIO:  # a FIFO nobody reads
            raise InputError(_refusal(path, path.lstat(), what)) from exc
        raise InputError("cannot open " + what + f" {path}: {exc.strerror or exc}") from exc
    info = os.fstat(fd)
    if not stat.S_ISREG(info.st_mode):
        os.close(fd)
        raise InputError(_refusal(path, info, what))
    os.set_blocking(fd, True)
    return fd


def open_locked(path: Path, busy: str) -> int:
    """Open (or create) a journal for appending and take its lock; the open descriptor.

    Raises :class:`~petsync.core.errors.InputError` naming the file when it cannot be opened
    or is no regular file (:func:`open_append`), and
    :class:`~petsync.core.errors.LockedError` with ``busy`` when another holds it.
    """
    fd = open_append(path, "journal", read=True)
    if not try_lock(fd):
        os.close(fd)
        raise LockedError(busy)
    return fd


def unlock(fd: int) -> None:
    """Release a lock taken with :func:`try_lock` (closing the file releases it too)."""
    fcntl.flock(fd, fcntl.LOCK_UN)
