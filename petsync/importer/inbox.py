"""Several files in one run, and the archive that empties an inbox.

``petsync import 'inbox/*'`` names its files by a glob that petsync expands itself
(quoted, so the shell leaves it alone, and so a job file can hold it): :func:`expand_inputs`.
A glob picks the spreadsheets it matches (``.csv``, ``.tsv`` and every workbook petsync
reads) and passes over other files (a ``README``, Excel's ``~$`` lock
files, hidden files). The files petsync writes beside an input (``*.rejects.csv``,
``*.accepted.csv``, ``*.uncertain.csv``) are never picked up by a glob, only when named;
nor is a symbolic link (with a warning): only a link named on the command line is followed.

``--archive DIR`` moves a fully processed file and its outputs into ``DIR/YYYY-MM-DD/``
(:func:`archive_import`). Fully processed means the run was not stopped and every row of
the file is final: created, or rejected (locally or by the API); none pending, none
uncertain. The journal stays where it is (in the API's journal home, see
:mod:`petsync.importer.journal_home`), so the same bytes dropped again are still
recognised as imported.
"""

from __future__ import annotations

import datetime as dt
import glob
import logging
import os
import shutil
from collections.abc import Sequence
from pathlib import Path

from petsync.core.errors import InputError
from petsync.importer.outcome import ImportReport
from petsync.importer.sheets.sheet import WORKBOOK_SUFFIXES

OUTPUT_SUFFIXES: tuple[str, ...] = (".rejects.csv", ".accepted.csv", ".uncertain.csv")
# What a glob picks: CSV (and .tsv), and every workbook petsync reads. Not .txt: an inbox
# often holds a note; a .txt spreadsheet is imported when named.
SPREADSHEET_SUFFIXES = frozenset({".csv", ".tsv"}) | WORKBOOK_SUFFIXES
MAX_SAME_DAY_FOLDERS = 1000

logger = logging.getLogger(__name__)


def expand_inputs(patterns: Sequence[str]) -> list[Path]:
    """The files ``patterns`` name, in order, each once; a glob may match nothing.

    >>> expand_inputs(["pets.csv", "pets.csv"])
    [PosixPath('pets.csv')]
    """
    found: list[Path] = []
    for pattern in patterns:
        if glob.has_magic(pattern):
            matches = [
                Path(name)
                for name in sorted(glob.glob(pattern))
                if picked_by_glob(Path(name).name) and Path(name).is_file() and _no_link(name)
            ]
        else:
            matches = [Path(pattern)]
        for path in matches:
            if path not in found:
                found.append(path)
    return found


def _no_link(name: str) -> bool:
    """False, with a warning, for a symbolic link a glob met: it is passed over.

    In a shared inbox, ``evil.csv -> ~/secret`` would have the import read a file only
    petsync's user may read and copy its rows into a reject file the inbox's users can
    (and POST them). A link named on the command line is the user's own and is followed.
    """
    if not os.path.islink(name):
        return True
    logger.warning("import_glob_link_skipped", extra={"fields": {"path": name}})
    return False


def picked_by_glob(name: str) -> bool:
    """Whether a glob takes a file of this name: a spreadsheet, not one petsync wrote, not
    an office program's lock file, not hidden.

    >>> names = ("a.xlsx", "a.CSV", "a.rejects.csv", "~$a.xlsx", "notes.txt", ".a.csv")
    >>> [picked_by_glob(n) for n in names]
    [True, True, False, False, False, False]
    """
    return (
        Path(name).suffix.lower() in SPREADSHEET_SUFFIXES
        and not name.lower().endswith(OUTPUT_SUFFIXES)
        and not name.startswith(("~$", "."))
    )


def fully_processed(report: ImportReport) -> bool:
    """True when no row of the file is left to do: none pending, none uncertain, no stop."""
    return (
        not report.dry_run and report.stop is None and report.pending == 0 and report.uncertain == 0
    )


def _free(folder: Path, moving: list[Path]) -> bool:
    """Whether ``folder`` is a real folder (or none yet) where none of the names stands."""
    if folder.is_symlink() or (os.path.lexists(folder) and not folder.is_dir()):
        return False
    return not any(os.path.lexists(folder / path.name) for path in moving)


def archive_import(source: Path, report: ImportReport, archive: Path, today: dt.date) -> Path:
    """Move ``source`` and its output files into ``archive/today/`` (or ``today_2``...).

    A folder where one of the names is taken is skipped for the next, so nothing is ever
    overwritten; so is a folder that is a symbolic link, and a name held by a link, even a
    dangling one: a move never goes through a link planted in the archive. Returns the
    folder. The report's file names are updated.
    """
    moving = [source, *(Path(p) for kind, p in report.files.items() if kind != "journal")]
    for attempt in range(1, MAX_SAME_DAY_FOLDERS + 1):
        name = today.isoformat() if attempt == 1 else f"{today.isoformat()}_{attempt}"
        folder = archive / name
        if _free(folder, moving):
            break
    else:  # pragma: no cover - a thousand archives of the same names in one day
        raise InputError(f"{archive}: too many archives of {source.name} today")
    try:
        folder.mkdir(parents=True, exist_ok=True)
        for path in moving:
            shutil.move(path, folder / path.name)
    except OSError as exc:
        raise InputError(
            f"cannot archive {source} into {folder}: {exc.strerror or exc}; the import itself "
            "is done, move the files by hand or fix the folder's permissions"
        ) from exc
    report.files = {
        kind: str(folder / Path(p).name) if kind != "journal" else p
        for kind, p in report.files.items()
    }
    report.archived_to = str(folder)
    report.archived = [path.name for path in moving]
    logger.info(
        "import_archived",
        extra={"fields": {"source": str(source), "folder": str(folder), "files": report.archived}},
    )
    return folder
