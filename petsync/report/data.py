"""The numbers behind the report, from the history alone (the report never reads a snapshot).

- the nights in ``_history.json``: which nights have a snapshot, which were incomplete or
  flagged, the nights between them with none (gaps), each night's quality;
- the versions (the history's files, read as :func:`~petsync.history.load.load_history`
  reads them, but only into NumPy): pets per night, category and status, the changes, the
  status moves, the time from available to sold (:mod:`.catalogue`), and the versions of
  the pets the page can look up (:mod:`.lookup`).
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.core.errors import InputError
from petsync.history.load import read_history_state
from petsync.history.table import HistoryFiles, HistoryState, Night
from petsync.report.catalogue import (
    COLUMNS,
    FROM_STATUS,
    TO_STATUS,
    Catalogue,
    Columns,
    Versions,
    count_catalogue,
    versions_from_columns,
)
from petsync.report.lookup import Lookup, pick_pets

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FROM_STATUS", "TO_STATUS", "ReportData", "report_data", "tables"]

VERDICTS = ("complete", "incomplete", "drop flagged")
READERS = 2  # files read at once: the files are small and the reads use little else


@dataclass(frozen=True)
class ReportData:
    """Everything the page shows; see :func:`report_data`."""

    nights: tuple[Night, ...]
    gaps: tuple[dt.date, ...]  # days between the first and last night with no snapshot
    catalogue: Catalogue
    quality: pd.DataFrame  # n, g, night, verdict, pets, quarantined (nights with a snapshot)
    lookup: Lookup

    @property
    def first(self) -> str | None:
        return self.nights[0].date.isoformat() if self.nights else None

    @property
    def last(self) -> str | None:
        return self.nights[-1].date.isoformat() if self.nights else None

    @property
    def untrusted(self) -> list[tuple[str, str]]:
        """(night, verdict) of every night that is not complete and trusted."""
        return [(n.date.isoformat(), verdict(n)) for n in self.nights if not n.trusted]

    def day(self, number: int) -> str:
        """The date ``number`` days after the first night."""
        assert self.nights
        return (self.nights[0].date + dt.timedelta(days=number)).isoformat()


def verdict(night: Night) -> str:
    """``complete`` (trusted), ``drop flagged`` (complete, count fell too far) or ``incomplete``."""
    return "complete" if night.trusted else "drop flagged" if night.complete else "incomplete"


def report_data(directory: Path | str) -> ReportData:
    """The report's numbers for the history under ``directory`` (the export's --out)."""
    state = read_history_state(directory)
    return tables(state, read_versions(directory, state))


def read_versions(directory: Path | str, state: HistoryState) -> Versions:
    """The versions in the history's files, read in the state's order (oldest night first,
    the open versions last), a few files at a time on threads.

    The files' footers are read first: their row counts place each file's rows in
    columns made once (:class:`~petsync.report.catalogue.Columns`), which each file is
    copied into on its thread and then dropped. Files are read with ``ParquetFile``
    (``read_table`` goes through pyarrow.dataset, which imports pandas)."""

    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    files = HistoryFiles.open(directory)
    first = state.nights[0].date if state.nights else dt.date(1970, 1, 1)

    def unreadable(name: str, exc: Exception) -> InputError:
        return InputError(
            f"cannot read {files.shown(name)} ({exc}); rebuild the history with "
            + files.rebuild_hint()
        )

    def footer(name: str) -> pq.FileMetaData:
        try:
            with files.filesystem.open_input_file(files.path(name)) as handle:
                return pq.read_metadata(handle)
        except (OSError, ValueError) as exc:  # pa.ArrowInvalid is a ValueError
            raise unreadable(name, exc) from exc

    def row_groups(
        name: str, columns: list[str], meta: pq.FileMetaData, groups: list[int] | None = None
    ) -> Iterator[pa.Table]:
        """The file's row groups (``groups``, else all), one table each: a file is never
        held whole beside the columns it is copied into."""
        try:
            with files.filesystem.open_input_file(files.path(name)) as handle:
                parquet = pq.ParquetFile(
                    handle, metadata=meta, read_dictionary=["status"], pre_buffer=True
                )
                for group in range(meta.num_row_groups) if groups is None else groups:
                    yield parquet.read_row_group(group, columns=columns, use_threads=False)
        except (OSError, ValueError) as exc:
            raise unreadable(name, exc) from exc

    with ThreadPoolExecutor(max_workers=READERS) as pool:
        footers = list(pool.map(footer, state.files))
        starts = np.cumsum([0] + [f.num_rows for f in footers]).tolist()
        columns = Columns.empty(starts[-1])

        def fill(index: int) -> None:
            name = state.files[index]
            at = starts[index]
            for table in row_groups(name, COLUMNS[:1] + COLUMNS[2:], footers[index]):
                if at + table.num_rows > starts[index + 1]:
                    break
                columns.fill(table, at, first)
                at += table.num_rows
            if at != starts[index + 1]:  # not from a footer read just now
                raise unreadable(name, ValueError("the file changed while it was read"))

        list(pool.map(fill, range(len(footers))))

    def names(rows: np.ndarray) -> list[str]:
        """The names of ``rows``, reading the name column of the row groups that hold them."""
        out: list[str] = [""] * len(rows)
        which = np.searchsorted(starts, rows, side="right") - 1
        for index in np.unique(which).tolist():
            mine = np.flatnonzero(which == index)
            meta = footers[index]
            sizes = [meta.row_group(g).num_rows for g in range(meta.num_row_groups)]
            group_starts = np.cumsum([0, *sizes])
            local = rows[mine] - starts[index]
            group_of = np.searchsorted(group_starts, local, side="right") - 1
            groups = np.unique(group_of).tolist()
            read = row_groups(state.files[index], ["name"], meta, groups)
            for group, table in zip(groups, read, strict=True):
                here = np.flatnonzero(group_of == group)
                wanted = pa.array(local[here] - group_starts[group])
                taken = table.column("name").take(wanted).to_pylist()
                for at, name in zip(mine[here].tolist(), taken, strict=True):
                    out[at] = name
        return out

    return versions_from_columns(columns, first, names)


def tables(state: HistoryState, versions: Versions) -> ReportData:
    """The report's numbers from a history's state and its versions."""
    import pandas as pd

    nights = list(state.nights)
    dates = [n.date for n in nights]
    gaps: list[dt.date] = []
    for before, after in zip(dates, dates[1:], strict=False):
        gaps.extend(before + dt.timedelta(days=d) for d in range(1, (after - before).days))
    first = dates[0] if dates else None
    numbers = [(d - first).days for d in dates] if first else []
    quality = pd.DataFrame(
        {
            "n": pd.Series(numbers, dtype="int64"),
            "g": pd.Series([n - i for i, n in enumerate(numbers)], dtype="int64"),
            "night": [d.isoformat() for d in dates],
            "verdict": [verdict(n) for n in nights],
            "pets": pd.Series([n.pets for n in nights], dtype="int64"),
            "quarantined": pd.Series([n.quarantined for n in nights], dtype="int64"),
        }
    )
    return ReportData(
        nights=tuple(nights),
        gaps=tuple(gaps),
        catalogue=count_catalogue(versions, dates),
        quality=quality,
        lookup=pick_pets(versions),
    )
