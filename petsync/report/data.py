"""The numbers behind the report's charts, as small tables (one row per mark).

Everything here comes from the history: the nights in ``_history.json`` (counts per
status, added / changed / removed, status changes, the manifest's quality) and the
transitions view (time from ``available`` to ``sold``). The report never reads a snapshot.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.history.fold import ARROW
from petsync.history.load import load_history, read_history_state, transitions
from petsync.history.table import HistoryState

if TYPE_CHECKING:
    import pandas as pd

FROM_STATUS = "available"
TO_STATUS = "sold"


@dataclass(frozen=True)
class ReportData:
    """One table per chart; see :func:`report_data`."""

    nights: int
    first: str | None
    last: str | None
    pets_per_status: pd.DataFrame  # night, status, pets
    churn: pd.DataFrame  # night, change (added/changed/removed), pets
    transitions: pd.DataFrame  # from_status, to_status, pets (all nights)
    transitions_by_night: pd.DataFrame  # night, transition, pets
    time_to_sold: pd.DataFrame  # days, pets
    quality: pd.DataFrame  # night, verdict, complete, drop_flagged, quarantined, pets


def report_data(directory: Path | str) -> ReportData:
    """The report's tables for the history under ``directory`` (the export's --out)."""
    state = read_history_state(directory)
    moves = transitions(load_history(directory))
    return tables(state, moves)


def tables(state: HistoryState, moves: pd.DataFrame) -> ReportData:
    """The report's tables from a history's state and its transitions view."""
    import pandas as pd

    per_status, churn, by_night, quality = [], [], [], []
    for night in state.nights:
        day = night.date.isoformat()
        for status, pets in night.by_status.items():
            per_status.append({"night": day, "status": status, "pets": pets})
        for change in ("added", "changed", "removed"):
            churn.append({"night": day, "change": change, "pets": getattr(night, change)})
        for transition, pets in night.status_changes.items():
            by_night.append({"night": day, "transition": transition, "pets": pets})
        verdict = (
            "complete" if night.trusted else "drop flagged" if night.complete else "incomplete"
        )
        quality.append(
            {
                "night": day,
                "verdict": verdict,
                "complete": night.complete,
                "drop_flagged": night.drop_flagged,
                "quarantined": night.quarantined,
                "pets": night.pets,
            }
        )
    transitions_by_night = pd.DataFrame(by_night, columns=["night", "transition", "pets"])
    totals = transitions_by_night.groupby("transition", sort=True)["pets"].sum().reset_index()
    split = totals["transition"].str.split(ARROW, n=1, expand=True, regex=False)
    totals_table = pd.DataFrame(
        {
            "from_status": split[0] if len(totals) else [],
            "to_status": split[1] if len(totals) else [],
            "pets": totals["pets"],
        }
    )
    sold = moves[(moves["from_status"] == FROM_STATUS) & (moves["to_status"] == TO_STATUS)]
    time_to_sold = (
        sold.groupby("days")["id"].count().rename("pets").reset_index().astype({"days": "int64"})
    )
    return ReportData(
        nights=len(state.nights),
        first=state.nights[0].date.isoformat() if state.nights else None,
        last=state.nights[-1].date.isoformat() if state.nights else None,
        pets_per_status=pd.DataFrame(per_status, columns=["night", "status", "pets"]),
        churn=pd.DataFrame(churn, columns=["night", "change", "pets"]),
        transitions=totals_table,
        transitions_by_night=transitions_by_night,
        time_to_sold=time_to_sold,
        quality=pd.DataFrame(
            quality,
            columns=["night", "verdict", "complete", "drop_flagged", "quarantined", "pets"],
        ),
    )
