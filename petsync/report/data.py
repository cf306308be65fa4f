"""The numbers behind the report, from the history alone (the report never reads a snapshot).

- the nights in ``_history.json``: which nights have a snapshot, which were incomplete or
  flagged, the nights between them with none (gaps), each night's quality;
- the versions (:func:`~petsync.history.load.load_history`) and their
  :func:`~petsync.history.load.transitions`: pets per night, category and status, the
  changes, the status moves, the time from available to sold (:mod:`.catalogue`), and the
  versions of the pets the page can look up (:mod:`.lookup`).
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.history.load import load_history, read_history_state, transitions
from petsync.history.table import HistoryState, Night
from petsync.report.catalogue import (
    FROM_STATUS,
    TO_STATUS,
    Catalogue,
    count_catalogue,
)
from petsync.report.lookup import Lookup, pick_pets

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["FROM_STATUS", "TO_STATUS", "ReportData", "report_data", "tables"]

VERDICTS = ("complete", "incomplete", "drop flagged")


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
    versions = load_history(directory)
    return tables(state, versions, transitions(versions))


def tables(state: HistoryState, versions: pd.DataFrame, moves: pd.DataFrame) -> ReportData:
    """The report's numbers from a history's state, its versions and their transitions."""
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
        catalogue=count_catalogue(versions, moves, dates),
        quality=quality,
        lookup=pick_pets(versions),
    )
