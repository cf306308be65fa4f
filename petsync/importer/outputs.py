"""The CSV files an import writes: rejects, accepted and uncertain rows, written atomically.

Each file repeats the input's own columns (the ``petsync_*`` ones of a re-imported petsync
file excepted) with the raw cells unchanged, then petsync's columns. Files are UTF-8 with a
BOM (so Excel picks the right encoding), comma-separated, every cell passed through the
Excel-safe rule of :mod:`petsync.importer.excel_safe`. Each file is written to a temporary name in
the same directory, fsynced and renamed over the old one, so a reader never sees half a
file.
"""

from __future__ import annotations

import contextlib
import csv
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import IO

from petsync.core.errors import PetsyncError
from petsync.importer.excel_safe import escape_row

OUTPUT_ENCODING = "utf-8-sig"

REJECT_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_error_source",
    "petsync_error_code",
    "petsync_error_field",
    "petsync_error_message",
    "petsync_http_status",
)
ACCEPTED_COLUMNS: tuple[str, ...] = ("petsync_row", "petsync_id")
UNCERTAIN_COLUMNS: tuple[str, ...] = (
    "petsync_row",
    "petsync_uncertain_reason",
    "petsync_http_status",
)


def output_paths(source: Path, out_dir: Path | None) -> dict[str, Path]:
    """Where the files of ``source`` go: beside it, or in ``out_dir``.

    >>> sorted(output_paths(Path("/d/pets.csv"), None))
    ['accepted', 'journal', 'rejects', 'uncertain']
    """
    directory = out_dir if out_dir is not None else source.parent
    stem = source.stem
    return {
        "rejects": directory / f"{stem}.rejects.csv",
        "accepted": directory / f"{stem}.accepted.csv",
        "uncertain": directory / f"{stem}.uncertain.csv",
        "journal": directory / f"{stem}.journal.jsonl",
    }


class AtomicCsv:
    """A CSV file written under a temporary name and renamed into place by :meth:`commit`."""

    def __init__(self, path: Path, header: Sequence[str]) -> None:
        self.path = path
        self.rows = 0
        try:
            fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as exc:
            raise PetsyncError(f"cannot write {path}: {exc.strerror or exc}") from exc
        self._temp = Path(temp)
        self._handle: IO[str] = os.fdopen(fd, "w", encoding=OUTPUT_ENCODING, newline="")
        self._writer = csv.writer(self._handle)
        self._write(header)

    def write(self, cells: Sequence[str]) -> None:
        self._write(cells)
        self.rows += 1

    def commit(self) -> None:
        try:
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._handle.close()
            os.replace(self._temp, self.path)
        except OSError as exc:
            self.abort()
            raise PetsyncError(f"cannot write {self.path}: {exc.strerror or exc}") from exc

    def abort(self) -> None:
        with contextlib.suppress(OSError):
            self._handle.close()
        with contextlib.suppress(OSError):
            self._temp.unlink()

    def _write(self, cells: Sequence[str]) -> None:
        try:
            self._writer.writerow(escape_row(cells))
        except OSError as exc:
            self.abort()
            raise PetsyncError(f"cannot write {self.path}: {exc.strerror or exc}") from exc


def write_text_atomic(path: Path, text: str) -> None:
    """Write a small text file (the JSON report) atomically."""
    try:
        fd, temp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, path)
    except OSError as exc:
        raise PetsyncError(f"cannot write {path}: {exc.strerror or exc}") from exc
