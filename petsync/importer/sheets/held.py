"""A workbook read from the one descriptor that was checked, not reopened by its name.

:func:`~petsync.importer.sheets.opening.open_input` proves the import's file a regular file
within its bound on the descriptor it opens. The workbook readers (zipfile, calamine, the
reading child) take a name and open it themselves, several times: reopened by the user's
name, a file swapped in after the check (a FIFO that blocks forever, another file) would be
read unchecked. So :func:`held_workbook` hashes the checked descriptor, looking at the stop
request before each chunk, and hands the readers (:class:`HeldWorkbook`) a name that leads
to that descriptor while its block runs: a link with the workbook's suffix (calamine picks
its reader by the suffix) to ``/proc/self/fd/N``, in a private temporary folder. Opening it
reopens the very file behind the descriptor, whatever the user's name holds by then; the
reading child inherits the descriptor at the same number, so the same link serves it. The
readers take that name beside the user's path, which their messages keep naming.

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
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from petsync.core.errors import InputError
from petsync.importer.sheets.sheet import CHUNK

_DESCRIPTORS = Path("/proc/self/fd")


@dataclass(frozen=True)
class HeldWorkbook:
    """A workbook held open while it is read: the sha256 of its bytes, the ``name`` its
    readers open (a link leading to the checked descriptor, or the path itself where there
    is no ``/proc/self/fd``), and that descriptor (``fd``; None then), which a reading
    child inherits at the same number."""

    sha256: str
    name: str
    fd: int | None = None


@contextlib.contextmanager
def held_workbook(handle: BinaryIO, path: Path) -> Iterator[HeldWorkbook]:
    """The workbook ``path``, open and checked as ``handle``, hashed; and the name that
    leads its readers to that descriptor while the block runs.

    ``handle`` looks at the stop request before each read (:func:`.opening.open_input`), so
    a stop ends the hash within one chunk (the request's
    :class:`~petsync.core.errors.StoppedError`).
    """
    digest = hashlib.sha256()
    try:
        while chunk := handle.read(CHUNK):
            digest.update(chunk)
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}") from exc
    if not _DESCRIPTORS.is_dir():
        yield HeldWorkbook(digest.hexdigest(), str(path))
        return
    fd = handle.fileno()
    descriptor = _DESCRIPTORS / str(fd)
    try:
        folder: Path | None = Path(tempfile.mkdtemp(prefix="petsync-held-"))  # mode 0700
    except OSError:  # no writable temporary folder: the descriptor's own name, no suffix
        folder = None
    try:
        link = descriptor if folder is None else folder / f"workbook{path.suffix}"
        if folder is not None:
            link.symlink_to(descriptor)
        yield HeldWorkbook(digest.hexdigest(), str(link), fd)
    finally:
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)
