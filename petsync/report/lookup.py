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
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import pandas as pd

LOOKUP_PETS = 1_000


@dataclass(frozen=True)
class Lookup:
    """The pets carried (``rows``: one list per version) and how many pets there are."""

    pets: int  # distinct pets carried
    of: int  # distinct pets in the history
    rows: list[list[Any]]  # [id, name, first night, last night or None, status, categoryId]


def pick_pets(versions: pd.DataFrame, limit: int = LOOKUP_PETS) -> Lookup:
    """Every version of the ``limit`` pets whose newest version started last."""
    import pandas as pd

    if versions.empty:
        return Lookup(0, 0, [])
    newest = versions.groupby("id", sort=False)["valid_from"].max()
    ranked = newest.reset_index().sort_values(["valid_from", "id"], ascending=False)
    chosen = set(ranked["id"].head(limit).tolist())
    mine = versions[versions["id"].isin(chosen)].sort_values(["id", "valid_from"])
    rows = [
        [
            int(pet_id),
            str(name),
            _day(start),
            _day(end),
            None if pd.isna(status) else str(status),
            int(category),
        ]
        for pet_id, name, start, end, status, category in zip(
            mine["id"],
            mine["name"],
            mine["valid_from"],
            mine["valid_to"],
            mine["status"].astype(object),
            mine["categoryId"],
            strict=True,
        )
    ]
    return Lookup(len(chosen), int(newest.size), rows)


def _day(value: Any) -> str | None:
    import pandas as pd

    if pd.isna(value):
        return None
    day: dt.date = value.date()
    return day.isoformat()
