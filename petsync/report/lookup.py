"""The pets the page can look up: every version of a bounded number of pets.

A catalogue of millions of pets cannot travel in one HTML page, so the page carries the
:data:`LOOKUP_PETS` pets whose latest version is newest (the pets that moved last: ties go
to the higher id), each with all its versions. That bounds the page by the number of pets
times their versions, whatever the catalogue; the page says how many it carries and how to
look up any other pet from Python.
"""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass
from typing import Any

from petsync.report.catalogue import NO_STATUS, Versions

LOOKUP_PETS = 1_000


@dataclass(frozen=True)
class Lookup:
    """The pets carried (``rows``: one list per version) and how many pets there are."""

    pets: int  # distinct pets carried
    of: int  # distinct pets in the history
    rows: list[list[Any]]  # [id, name, first night, last night or None, status, categoryId]


def pick_pets(v: Versions, limit: int = LOOKUP_PETS) -> Lookup:
    """Every version of the ``limit`` pets whose newest version started last."""
    import numpy as np

    if not len(v):
        return Lookup(0, 0, [])
    # The newest version of each pet is among the ``limit`` * 3 versions that started
    # last (a pet has a few there at most); those pets, newest first, ties to the higher id.
    top = min(len(v), limit * 3)
    newest = np.partition(v.start, len(v) - top)[len(v) - top]
    recent = np.flatnonzero(v.start >= newest)  # every version tied at the edge too
    recent = recent[np.lexsort((v.id[recent], v.start[recent]))[::-1]]
    _, first_seen = np.unique(v.id[recent], return_index=True)
    chosen = v.id[recent[np.sort(first_seen)]][:limit]
    # The versions are in pet order: each chosen pet's versions are one run of rows,
    # found by bisection (rather than a membership test over every version).
    chosen = np.sort(chosen)
    begin, end = np.searchsorted(v.id, chosen), np.searchsorted(v.id, chosen, side="right")
    sizes = end - begin
    rows = np.arange(int(sizes.sum())) + np.repeat(begin - (np.cumsum(sizes) - sizes), sizes)
    names = v.names(v.row[rows])
    pets = int(np.count_nonzero(v.id[1:] != v.id[:-1])) + 1
    first = v.first
    return Lookup(
        len(chosen),
        pets,
        [
            [
                int(v.id[r]),
                str(name),
                _day(first, int(v.start[r])),
                _day(first, int(v.end[r])) if v.end[r] >= 0 else None,
                None if v.statuses[v.status[r]] == NO_STATUS else v.statuses[v.status[r]],
                int(v.category[r]),
            ]
            for r, name in zip(rows.tolist(), names, strict=True)
        ],
    )


def _day(first: dt.date, number: int) -> str:
    return (first + dt.timedelta(days=number)).isoformat()
