"""The tables under the charts: the numbers each chart draws, for every category and status,
with dates and labels instead of the charts' codes."""

from __future__ import annotations

from typing import TYPE_CHECKING

from petsync.report.catalogue import CHANGES
from petsync.report.data import TO_STATUS, ReportData

if TYPE_CHECKING:
    import pandas as pd


def _nights(data: ReportData, frame: pd.DataFrame) -> pd.DataFrame:
    """``frame`` indexed by ``n`` with the night's date and verdict in front."""
    out = frame.copy()
    out.insert(0, "night", [data.day(int(n)) for n in out.index])
    verdicts = dict(zip(data.quality["n"], data.quality["verdict"], strict=True))
    out.insert(1, "quality", [verdicts.get(int(n), "") for n in out.index])
    return out.reset_index(drop=True)


def counts_table(data: ReportData) -> pd.DataFrame:
    cat = data.catalogue
    wide = cat.counts.pivot_table(index="n", columns="s", values="p", aggfunc="sum", fill_value=0)
    wide.columns = [cat.statuses[int(s)] for s in wide.columns]
    wide["all"] = wide.sum(axis=1)
    return _nights(data, wide)


def changes_table(data: ReportData) -> pd.DataFrame:
    churn = data.catalogue.churn
    wide = churn.pivot_table(index="n", columns="k", values="p", aggfunc="sum", fill_value=0)
    wide = wide.reindex(index=data.quality["n"], columns=range(len(CHANGES)), fill_value=0)
    wide.columns = list(CHANGES)
    return _nights(data, wide)


def moves_table(data: ReportData) -> pd.DataFrame:
    import pandas as pd

    cat = data.catalogue
    moves = cat.moves.groupby(["f", "t"])["p"].sum().reset_index()
    return pd.DataFrame(
        {
            "from": [cat.statuses[int(f)] for f in moves["f"]],
            "to": [cat.statuses[int(t)] for t in moves["t"]],
            "pets": moves["p"],
        }
    )


def sold_table(data: ReportData) -> pd.DataFrame:
    sold = data.catalogue.sold.groupby("d")["p"].sum().reset_index()
    return sold.rename(columns={"d": "days", "p": "pets"})


def quality_table(data: ReportData) -> pd.DataFrame:
    return data.quality[["night", "verdict", "pets", "quarantined"]]


def category_table(data: ReportData) -> pd.DataFrame:
    """The largest categories and how they moved: pets on the first and last night, the
    change, and the pets added, removed and sold in between (after the first night)."""
    import pandas as pd

    cat = data.catalogue
    counts = cat.counts
    last = int(counts["n"].max()) if len(counts) else 0
    later = cat.churn[cat.churn["n"] > 0]
    sold_code = cat.statuses.index(TO_STATUS) if TO_STATUS in cat.statuses else -1
    moved = cat.moves[cat.moves["t"] == sold_code]
    rows = []
    for code, label in [*enumerate(cat.categories), (-1, "all categories")]:
        on, changes = _in(counts, code), _in(later, code)
        start = int(on.loc[on["n"] == 0, "p"].sum())
        end = int(on.loc[on["n"] == last, "p"].sum())
        rows.append(
            {
                "category": label,
                f"pets on {data.first}": start,
                f"pets on {data.last}": end,
                "change": f"{end - start:+,d}",
                "added": int(changes.loc[changes["k"] == CHANGES.index("added"), "p"].sum()),
                "removed": int(changes.loc[changes["k"] == CHANGES.index("removed"), "p"].sum()),
                f"became {TO_STATUS}": int(_in(moved, code)["p"].sum()),
            }
        )
    return pd.DataFrame(rows)


def _in(frame: pd.DataFrame, code: int) -> pd.DataFrame:
    """The rows of category group ``code`` (every row for -1)."""
    if code < 0:
        return frame
    chosen: pd.DataFrame = frame[frame["c"] == code]
    return chosen
