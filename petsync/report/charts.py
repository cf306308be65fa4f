"""The report's charts as Vega-Lite specifications (plain JSON, rendered by vega-embed).

Each chart has a tooltip on every mark with the numbers it draws, and the same numbers go
into a table under it (:class:`Chart` carries both). Data is embedded in the spec: the
report is one file that needs nothing else. The specs are written as dicts rather than
with Altair: importing and validating through Altair cost more than a second per report,
and a test checks every spec against Vega-Lite's schema instead.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from petsync.report.data import FROM_STATUS, TO_STATUS, ReportData

if TYPE_CHECKING:
    import pandas as pd

Spec = dict[str, Any]

WIDTH = 760
HEIGHT = 220
# One colour per status, the same in every chart; unknown values get the rest in turn.
STATUS_COLOURS = {
    "available": "#2a9d8f",
    "pending": "#e9c46a",
    "sold": "#e76f51",
    "(none)": "#8d99ae",
}
VERDICT_COLOURS = {"complete": "#2a9d8f", "incomplete": "#e76f51", "drop flagged": "#e9c46a"}
CHANGE_COLOURS = {"added": "#2a9d8f", "changed": "#457b9d", "removed": "#e76f51"}
OTHER_COLOURS = ("#6d597a", "#b56576", "#355070", "#a8dadc")


@dataclass(frozen=True)
class Chart:
    """One chart: an id for the page, a title, a sentence on how to read it, its
    Vega-Lite spec, and the numbers behind it."""

    id: str
    title: str
    caption: str
    spec: Spec
    table: pd.DataFrame


def _values(frame: pd.DataFrame) -> list[dict[str, Any]]:
    return [{str(k): v for k, v in r.items()} for r in frame.astype(object).to_dict("records")]


def _colour(field: str, colours: dict[str, str], present: list[str], title: str) -> Spec:
    domain = [k for k in colours if k in present] + sorted(set(present) - set(colours))
    rest = iter(OTHER_COLOURS * (len(domain) // len(OTHER_COLOURS) + 1))
    return {
        "field": field,
        "type": "nominal",
        "title": title,
        "scale": {"domain": domain, "range": [colours.get(k) or next(rest) for k in domain]},
    }


NIGHT: Spec = {
    "field": "night",
    "type": "temporal",
    "title": "night",
    "axis": {"format": "%Y-%m-%d", "labelAngle": -30},
}
NIGHT_TIP: Spec = {"field": "night", "type": "temporal", "format": "%Y-%m-%d"}


def _tip(field: str, kind: str = "quantitative", title: str | None = None) -> Spec:
    return {"field": field, "type": kind, **({"title": title} if title else {})}


def pets_per_status(data: ReportData) -> Spec:
    statuses = list(dict.fromkeys(data.pets_per_status["status"]))
    encoding = {
        "x": NIGHT,
        "y": {"field": "pets", "type": "quantitative", "stack": "zero", "title": "pets"},
        "color": _colour("status", STATUS_COLOURS, statuses, "status"),
        "tooltip": [NIGHT_TIP, _tip("status", "nominal"), _tip("pets")],
    }
    return {
        "data": {"values": _values(data.pets_per_status)},
        "width": WIDTH,
        "height": HEIGHT,
        "layer": [
            {"mark": {"type": "area", "opacity": 0.85}, "encoding": encoding},
            {"mark": {"type": "point", "filled": True, "size": 18}, "encoding": encoding},
        ],
    }


def changes(data: ReportData) -> Spec:
    """Nightly churn from the second night on: on the first, every pet is added, and its
    one point would flatten every other night's to the axis."""
    return {
        "data": {"values": _values(_after_first_night(data.churn))},
        "width": WIDTH,
        "height": HEIGHT,
        "mark": {"type": "line", "point": True},
        "encoding": {
            "x": NIGHT,
            "y": {"field": "pets", "type": "quantitative", "title": "pets"},
            "color": _colour("change", CHANGE_COLOURS, list(CHANGE_COLOURS), "change"),
            "tooltip": [NIGHT_TIP, _tip("change", "nominal"), _tip("pets")],
        },
    }


def _after_first_night(churn: pd.DataFrame) -> pd.DataFrame:
    if churn.night.nunique() < 2:
        return churn
    later: pd.DataFrame = churn[churn.night != churn.night.min()]
    return later


def status_transitions(data: ReportData) -> Spec:
    axes = {
        "x": {"field": "to_status", "type": "nominal", "title": "to"},
        "y": {"field": "from_status", "type": "nominal", "title": "from"},
    }
    return {
        "data": {"values": _values(data.transitions)},
        "width": WIDTH // 2,
        "height": HEIGHT,
        "layer": [
            {
                "mark": "rect",
                "encoding": {
                    **axes,
                    "color": {
                        "field": "pets",
                        "type": "quantitative",
                        "scale": {"scheme": "blues"},
                        "title": "pets",
                    },
                    "tooltip": [
                        _tip("from_status", "nominal", "from"),
                        _tip("to_status", "nominal", "to"),
                        _tip("pets"),
                    ],
                },
            },
            {
                "mark": {"type": "text", "fontSize": 13},
                "encoding": {**axes, "text": {"field": "pets", "type": "quantitative"}},
            },
        ],
    }


def time_to_sold(data: ReportData) -> Spec:
    binned = {"field": "days", "bin": {"maxbins": 40}, "type": "quantitative"}
    return {
        "data": {"values": _values(data.time_to_sold)},
        "width": WIDTH,
        "height": HEIGHT,
        "mark": "bar",
        "encoding": {
            "x": {
                **binned,
                "axis": {"format": "d"},
                "title": f"days {FROM_STATUS} before {TO_STATUS}",
            },
            "y": {"aggregate": "sum", "field": "pets", "type": "quantitative", "title": "pets"},
            "tooltip": [
                {**binned, "title": "days"},
                {"aggregate": "sum", "field": "pets", "type": "quantitative", "title": "pets"},
            ],
        },
    }


def quality(data: ReportData) -> Spec:
    values = {"values": _values(data.quality)}
    return {
        "vconcat": [
            {
                "data": values,
                "width": WIDTH,
                "height": HEIGHT,
                "mark": "bar",
                "encoding": {
                    "x": NIGHT,
                    "y": {"field": "pets", "type": "quantitative", "title": "pets in the snapshot"},
                    "color": _colour("verdict", VERDICT_COLOURS, list(VERDICT_COLOURS), "night"),
                    "tooltip": [
                        NIGHT_TIP,
                        _tip("verdict", "nominal"),
                        _tip("complete", "nominal"),
                        _tip("drop_flagged", "nominal"),
                        _tip("quarantined"),
                        _tip("pets"),
                    ],
                },
            },
            {
                "data": values,
                "width": WIDTH,
                "height": 120,
                "mark": {"type": "line", "point": True, "color": "#6d597a"},
                "encoding": {
                    "x": NIGHT,
                    "y": {
                        "field": "quarantined",
                        "type": "quantitative",
                        "title": "quarantined rows",
                    },
                    "tooltip": [NIGHT_TIP, _tip("quarantined")],
                },
            },
        ]
    }


def charts(data: ReportData) -> list[Chart]:
    """The five charts of the report, in page order."""
    return [
        Chart(
            "pets-per-status",
            "Pets per status per night",
            "Each night's snapshot, counted by status; (none) is a pet without status. An "
            "incomplete night (see the last chart) counts only what its listings returned.",
            pets_per_status(data),
            data.pets_per_status.pivot_table(
                index="night", columns="status", values="pets", fill_value=0
            ).reset_index(),
        ),
        Chart(
            "changes",
            "Added, changed and removed each night",
            "Added: pets new or back; changed: a new version of a pet (status, name or "
            "category); removed: pets a complete night lacked. From the second night: the "
            "first, when every pet is added, is in the table.",
            changes(data),
            data.churn.pivot_table(
                index="night", columns="change", values="pets", fill_value=0
            ).reset_index(),
        ),
        Chart(
            "transitions",
            "Status transitions between nights",
            "Pets that went from one status (row) to another (column) from one night to "
            "the next, over all nights; the table lists them night by night.",
            status_transitions(data),
            data.transitions_by_night,
        ),
        Chart(
            "time-to-sold",
            f"Time from {FROM_STATUS} to {TO_STATUS}",
            f"Days a pet spent {FROM_STATUS} before it was seen {TO_STATUS}, counted from "
            "the night it was first seen available.",
            time_to_sold(data),
            data.time_to_sold,
        ),
        Chart(
            "quality",
            "Data quality each night",
            "Complete: the export proved every listing whole; incomplete nights and "
            "flagged drops close no pet. The line counts the rows quarantined.",
            quality(data),
            data.quality,
        ),
    ]
