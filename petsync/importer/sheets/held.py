"""A workbook read from the one descriptor that was checked, not reopened by its name.

:func:`~petsync.importer.sheets.sheet.open_input` proves the import's file a regular file
within its bound on the descriptor it opens. The workbook readers (zipfile, calamine, the
reading child) take a name and open it themselves, several times: reopened by the user's
name, a file swapped in after the check (a FIFO that blocks forever, another file) would be
read unchecked. So :func:`held_workbook` hashes the checked descriptor, looking at the stop
request before each chunk, and while its block runs :func:`source_name` gives the readers a
name that leads to that descriptor: a link with the workbook's suffix (calamine picks its
reader by the suffix) to ``/proc/self/fd/N``, in a private temporary folder. Opening it
reopens the very file behind the descriptor, whatever the user's name holds by then; the
reading child inherits the descriptor at the same number, so the same link serves it. The
readers keep naming the user's path in their messages.

Without a writable temporary folder, ``/proc/self/fd/N`` itself is given (calamine then
finds the format from the content; only a damaged file's message is less specific). Where
``/proc/self/fd`` does not exist (macOS, whose ``/dev/fd/N`` shares one file offset
between every open, which interleaved readers would break), the name is used.
"""

from __future__ import annotations

import contextlib
import hashlib
import shutil
import tempfile
from collections.abc import Iterator
from contextvars import ContextVar
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.stop import StopRequest
from petsync.importer.sheets.sheet import CHUNK, open_input

_DESCRIPTORS = Path("/proc/self/fd")
_HELD: ContextVar[tuple[Path, int, str] | None] = ContextVar("held_workbook", default=None)


@contextlib.contextmanager
def held_workbook(path: Path, stop: StopRequest | None = None) -> Iterator[str]:
    """The workbook ``path`` opened once and checked; yields its sha256.

    A stop request ends the hash within one chunk (the request's
    :class:`~petsync.core.errors.StoppedError`). Inside the block, :func:`source_name`
    and :func:`held_descriptor` lead the readers to the checked descriptor.
    """
    with open_input(path, stop) as handle:
        digest = hashlib.sha256()
        try:
            while chunk := handle.read(CHUNK):
                digest.update(chunk)
        except OSError as exc:
            raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
        if not _DESCRIPTORS.is_dir():
            yield digest.hexdigest()
            return
        descriptor = _DESCRIPTORS / str(handle.fileno())
        try:
            folder: Path | None = Path(tempfile.mkdtemp(prefix="petsync-held-"))  # mode 0700
        except OSError:  # no writable temporary folder: the descriptor's own name, no suffix
            folder = None
        try:
            link = descriptor if folder is None else folder / f"workbook{path.suffix}"
            if folder is not None:
                link.symlink_to(descriptor)
            with holding(path, handle.fileno(), str(link)):
                yield digest.hexdigest()
        finally:
            if folder is not None:
                shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def holding(path: Path, fd: int, name: str) -> Iterator[None]:
    """While the block runs, readers of ``path`` open ``name``, which leads to ``fd``."""
    token = _HELD.set((path, fd, name))
    try:
        yield
    finally:
        _HELD.reset(token)


def held_descriptor(path: Path) -> tuple[int, str] | None:
    """The checked descriptor of ``path`` held by :func:`held_workbook` and the name that
    leads to it, if one is held."""
    held = _HELD.get()
    return held[1:] if held is not None and held[0] == path else None


def source_name(path: Path) -> str:
    """The name a reader opens to read ``path``: one leading to its checked descriptor
    where one is held, else ``path`` itself.

    >>> source_name(Path("pets.xlsx"))
    'pets.xlsx'
    """
    held = held_descriptor(path)
    return str(path) if held is None else held[1]
