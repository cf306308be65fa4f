"""The report's charts as Vega-Lite specifications, made with Altair.

Each chart has a tooltip on every mark with the numbers it draws, and the same numbers go
into a table under it (:class:`Chart` carries both). Data is embedded in the spec: the
report is one file that needs nothing else.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from petsync.report.data import FROM_STATUS, TO_STATUS, ReportData

if TYPE_CHECKING:
    import pandas as pd

WIDTH = 760
HEIGHT = 220
# One colour per status, the same in every chart; unknown values get the scheme's rest.
STATUS_COLOURS = {
    "available": "#2a9d8f",
    "pending": "#e9c46a",
    "sold": "#e76f51",
    "(none)": "#8d99ae",
}
VERDICT_COLOURS = {"complete": "#2a9d8f", "incomplete": "#e76f51", "drop flagged": "#e9c46a"}
CHANGE_COLOURS = {"added": "#2a9d8f", "changed": "#457b9d", "removed": "#e76f51"}


@dataclass(frozen=True)
class Chart:
    """One chart: an id for the page, a title, a sentence on how to read it, its spec, its
    numbers."""

    id: str
    title: str
    caption: str
    spec: dict[str, Any]
    table: pd.DataFrame


def _scale(colours: dict[str, str], present: list[str]) -> Any:
    import altair as alt

    domain = [k for k in colours if k in present] + sorted(set(present) - set(colours))
    rest = ["#6d597a", "#b56576", "#355070", "#a8dadc"]
    rng = [colours.get(k, rest[i % len(rest)]) for i, k in enumerate(domain)]
    return alt.Scale(domain=domain, range=rng)


def charts(data: ReportData) -> list[Chart]:
    """The five charts of the report, in page order."""
    import altair as alt

    night = alt.X("night:T", title="night", axis=alt.Axis(format="%Y-%m-%d", labelAngle=-30))
    per_status = (
        alt.Chart(data.pets_per_status)
        .mark_area(opacity=0.85)
        .encode(
            x=night,
            y=alt.Y("pets:Q", stack="zero", title="pets"),
            color=alt.Color(
                "status:N", scale=_scale(STATUS_COLOURS, list(data.pets_per_status.status.unique()))
            ),
            tooltip=["night:T", "status:N", "pets:Q"],
        )
    )
    per_status = per_status + per_status.mark_point(size=18, filled=True, opacity=0.9).encode(
        y=alt.Y("pets:Q", stack="zero")
    )
    churn = (
        alt.Chart(data.churn)
        .mark_line(point=True)
        .encode(
            x=night,
            y=alt.Y("pets:Q", title="pets"),
            color=alt.Color(
                "change:N", scale=_scale(CHANGE_COLOURS, list(CHANGE_COLOURS)), title="change"
            ),
            tooltip=["night:T", "change:N", "pets:Q"],
        )
    )
    moves = alt.Chart(data.transitions).encode(
        x=alt.X("to_status:N", title="to"),
        y=alt.Y("from_status:N", title="from"),
    )
    heatmap = moves.mark_rect().encode(
        color=alt.Color("pets:Q", scale=alt.Scale(scheme="blues"), title="pets"),
        tooltip=["from_status:N", "to_status:N", "pets:Q"],
    ) + moves.mark_text(fontSize=13).encode(text="pets:Q")
    sold = (
        alt.Chart(data.time_to_sold)
        .mark_bar()
        .encode(
            x=alt.X(
                "days:Q",
                bin=alt.Bin(maxbins=40),
                axis=alt.Axis(format="d"),
                title=f"days {FROM_STATUS} before {TO_STATUS}",
            ),
            y=alt.Y("sum(pets):Q", title="pets"),
            tooltip=[
                alt.Tooltip("days:Q", bin=alt.Bin(maxbins=40), title="days"),
                alt.Tooltip("sum(pets):Q", title="pets"),
            ],
        )
    )
    quality = (
        alt.Chart(data.quality)
        .mark_bar()
        .encode(
            x=night,
            y=alt.Y("pets:Q", title="pets in the snapshot"),
            color=alt.Color(
                "verdict:N", scale=_scale(VERDICT_COLOURS, list(VERDICT_COLOURS)), title="night"
            ),
            tooltip=[
                "night:T",
                "verdict:N",
                "complete:N",
                "drop_flagged:N",
                "quarantined:Q",
                "pets:Q",
            ],
        )
    )
    quarantined = (
        alt.Chart(data.quality)
        .mark_line(point=True, color="#6d597a")
        .encode(
            x=night,
            y=alt.Y("quarantined:Q", title="quarantined rows"),
            tooltip=["night:T", "quarantined:Q"],
        )
    )
    sold_table = data.time_to_sold
    return [
        _chart(
            "pets-per-status",
            "Pets per status per night",
            "Each night's snapshot, counted by status; (none) is a pet without status.",
            per_status.properties(width=WIDTH, height=HEIGHT),
            data.pets_per_status.pivot_table(
                index="night", columns="status", values="pets", fill_value=0
            ).reset_index(),
        ),
        _chart(
            "changes",
            "Added, changed and removed each night",
            "Added: pets new or back; changed: a new version of a pet (status, name or "
            "category); removed: pets a complete night lacked.",
            churn.properties(width=WIDTH, height=HEIGHT),
            data.churn.pivot_table(
                index="night", columns="change", values="pets", fill_value=0
            ).reset_index(),
        ),
        _chart(
            "transitions",
            "Status transitions between nights",
            "Pets that went from one status (row) to another (column) from one night to "
            "the next, over all nights.",
            heatmap.properties(width=WIDTH // 2, height=HEIGHT),
            data.transitions_by_night,
        ),
        _chart(
            "time-to-sold",
            f"Time from {FROM_STATUS} to {TO_STATUS}",
            f"Days a pet spent {FROM_STATUS} before it was seen {TO_STATUS}, counted from "
            "the night it was first seen available.",
            sold.properties(width=WIDTH, height=HEIGHT),
            sold_table,
        ),
        _chart(
            "quality",
            "Data quality each night",
            "Complete: the export proved every listing whole; incomplete nights and "
            "flagged drops close no pet. The line counts the rows quarantined.",
            alt.vconcat(
                quality.properties(width=WIDTH, height=HEIGHT),
                quarantined.properties(width=WIDTH, height=120),
            ),
            data.quality,
        ),
    ]


def _chart(chart_id: str, title: str, caption: str, chart: Any, table: pd.DataFrame) -> Chart:
    as_dict: dict[str, Any] = chart.to_dict()
    as_dict.pop("$schema", None)  # a URL; nothing fetches it, but the page names no host
    return Chart(chart_id, title, caption, as_dict, table)
