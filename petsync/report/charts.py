"""The report's charts as Vega-Lite specifications (plain JSON, rendered by vega-embed).

The specs name their data (``counts``, ``churn``, ``moves``, ``sold``, ``quality``,
``marks``) instead of carrying it: the page holds each table once, as CSV, and hands it to
every chart that reads it (:func:`datasets`). Each spec declares two parameters,
``category`` and ``status`` (-1 for all), which the page's two selects set in every chart.

Axes say what they measure:

- nights are on a UTC day scale, with at most :data:`MAX_NIGHT_TICKS` ticks, each on a
  night, each label a different date; a mark for a night is centred on its day;
- counts have whole-number ticks;
- days (time to sold) are whole: one bar per number of days, centred on it, the axis
  labelled with whole days only.

A night without a snapshot splits every line (its segments are drawn apart, nothing joins
them) and is shaded grey; incomplete and drop-flagged nights are shaded on every chart that
counts pets. The specs are written as dicts rather than with Altair (importing Altair cost
more than a second per report); a test checks them against Vega-Lite's schema.
"""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from petsync.report.catalogue import CHANGES
from petsync.report.data import FROM_STATUS, TO_STATUS, VERDICTS, ReportData

if TYPE_CHECKING:
    import pandas as pd

Spec = dict[str, Any]

WIDTH = 760
HEIGHT = 220
DAY_MS = 86_400_000
MAX_NIGHT_TICKS = 12
MAX_DAY_TICKS = 16
# One colour per status, the same in every chart; unknown values get the rest in turn.
STATUS_COLOURS = {
    "available": "#2a9d8f",
    "pending": "#e9c46a",
    "sold": "#e76f51",
    "(none)": "#8d99ae",
}
VERDICT_COLOURS = {"complete": "#2a9d8f", "incomplete": "#e76f51", "drop flagged": "#e9c46a"}
MARK_COLOURS = {"no snapshot": "#9e9e9e", "incomplete": "#e76f51", "drop flagged": "#e9c46a"}
CHANGE_COLOURS = {"added": "#2a9d8f", "changed": "#457b9d", "removed": "#e76f51"}
OTHER_COLOURS = ("#6d597a", "#b56576", "#355070", "#a8dadc")
PARAMS = [{"name": "category", "value": -1}, {"name": "status", "value": -1}]
BY_CATEGORY = {"filter": "category < 0 || datum.c == category"}
BY_STATUS = {"filter": "status < 0 || datum.s == status"}


def count_scale(height: int = HEIGHT) -> Spec:
    """A count scale: whole-number ticks, 0 included.

    d3 puts ``n`` ticks at steps of 1, 2 or 5 times a power of ten, less than 1 only when
    the domain spans less than ``n``; so the domain spans at least ``n``. (Vega-Lite's
    ``tickMinStep`` did not stop steps of 0.5 on a domain of 0 to 1.)"""
    ticks = max(2, math.ceil(height / 40))
    return {
        "axis": {"tickCount": ticks, "format": ",d"},
        # nice to the tick count (True is d3's 10): the scale ends on a labelled tick.
        "scale": {"domain": {"unionWith": [0, ticks]}, "nice": ticks},
    }


@dataclass(frozen=True)
class Chart:
    """One chart: an id for the page, a title, a sentence on how to read it, its
    Vega-Lite spec, and the numbers behind it (for every category and status)."""

    id: str
    title: str
    caption: str
    spec: Spec
    table: pd.DataFrame


def _colour(field: str, colours: dict[str, str], present: list[str], title: str) -> Spec:
    domain = [k for k in colours if k in present] + sorted(set(present) - set(colours))
    rest = iter(OTHER_COLOURS * (len(domain) // len(OTHER_COLOURS) + 1))
    return {
        "field": field,
        "type": "nominal",
        "title": title,
        "scale": {"domain": domain, "range": [colours.get(k) or next(rest) for k in domain]},
    }


def _labels(field: str, code: str, labels: tuple[str, ...] | list[str]) -> Spec:
    """A calculate that turns a code column back into its label."""
    return {"calculate": "[" + ",".join(map(_js, labels)) + f"][datum.{code}]", "as": field}


def _js(text: str) -> str:
    return "'" + text.replace("\\", "\\\\").replace("'", "\\'") + "'"


def _described(spec: Spec, tips: list[Spec] | None = None) -> Spec:
    """Gives ``spec``'s marks what a screen reader says of each: the pairs of its tooltip
    (or ``tips``). Vega-Lite's own reads the encoding: a bar's left edge (the day before
    its night) and internal fields (``t1``, ``y1``, ``g``) by name."""
    said = []
    for tip in tips or spec["encoding"]["tooltip"]:
        value = f"datum[{_js(tip['field'])}]"
        value = f"format({value}, {_js(tip['format'])})" if "format" in tip else value
        said.append(f"{_js(str(tip.get('title') or tip['field']) + ': ')} + {value}")
    spec["transform"] = [*spec["transform"], {"calculate": " + '; ' + ".join(said), "as": "said"}]
    spec["encoding"]["description"] = {"field": "said", "type": "nominal"}
    return spec


class NightScale:
    """The x axis of every per-night chart: days, from half a day before the first night to
    half a day after the last, ticks on nights only."""

    def __init__(self, data: ReportData) -> None:
        first = data.nights[0].date
        self.first_ms = _ms(first)
        self.span = (data.nights[-1].date - first).days
        step = max(1, math.ceil((self.span + 1) / MAX_NIGHT_TICKS))
        self.ticks = [self.first_ms + d * DAY_MS for d in range(0, self.span + 1, step)]

    def times(self, width: float = 0.8) -> list[Spec]:
        """Transforms from ``n`` (days since the first night) to ``t`` (its time) and to
        ``t0``..``t1``, a band of ``width`` days centred on it."""
        half = width / 2
        return [
            {"calculate": f"{self.first_ms} + datum.n * {DAY_MS}", "as": "t"},
            {"calculate": f"datum.t - {half} * {DAY_MS}", "as": "t0"},
            {"calculate": f"datum.t + {half} * {DAY_MS}", "as": "t1"},
            # The night's date as text, in UTC: a tooltip's time format is local time.
            {"calculate": "utcFormat(datum.t, '%Y-%m-%d')", "as": "night"},
        ]

    def x(self, field: str = "t") -> Spec:
        return {
            "field": field,
            "type": "temporal",
            "title": "night",
            "scale": {
                "type": "utc",
                "domain": [
                    self.first_ms - DAY_MS // 2,
                    self.first_ms + self.span * DAY_MS + DAY_MS // 2,
                ],
                "nice": False,
            },
            "axis": {
                "values": self.ticks,
                # The scale is UTC, so Vega formats its labels in UTC (a "formatType" here
                # would make Vega-Lite drop the format).
                "format": "%Y-%m-%d",
                "labelAngle": -30,
                "labelOverlap": False,
                "labelFlush": False,
                "grid": False,
            },
        }

    def tip(self) -> Spec:
        return {"field": "night", "type": "nominal", "title": "night"}


def _ms(day: dt.date) -> int:
    return int(dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC).timestamp() * 1000)


def _night_marks(scale: NightScale, kinds: list[str]) -> Spec:
    """Shaded bands behind the marks: nights with no snapshot, incomplete or flagged."""
    band = {
        "data": {"name": "marks"},
        "transform": [*scale.times(1.0), {"filter": {"field": "kind", "oneOf": kinds}}],
        "mark": {"type": "rect", "opacity": 0.22},
        "encoding": {
            "x": scale.x("t0"),
            "x2": {"field": "t1"},
            "color": _colour("kind", MARK_COLOURS, kinds, "night shaded"),
            "tooltip": [scale.tip(), {"field": "kind", "type": "nominal", "title": "night"}],
        },
    }
    # Two "night" pairs would read as two nights: the kind is said as what is shaded.
    return _described(band, [scale.tip(), {"field": "kind", "title": "shaded"}])


def _marks_present(data: ReportData) -> list[str]:
    kinds = (["no snapshot"] if data.gaps else []) + [v for _, v in data.untrusted]
    return [k for k in MARK_COLOURS if k in kinds]


def _layered(data: ReportData, scale: NightScale, layers: list[Spec], *, shade: bool) -> Spec:
    kinds = _marks_present(data) if shade else (["no snapshot"] if data.gaps else [])
    behind = [_night_marks(scale, kinds)] if kinds else []
    return {
        "params": PARAMS,
        "width": WIDTH,
        "height": HEIGHT,
        "layer": behind + layers,
        "resolve": {"scale": {"color": "independent"}},
    }


def pets_per_status(data: ReportData, scale: NightScale) -> Spec:
    cat = data.catalogue
    encoding = {
        "x": scale.x(),
        "y": {"field": "p", "type": "quantitative", "title": "pets", **count_scale()},
        "color": _colour("status", STATUS_COLOURS, list(cat.statuses), "status"),
        "detail": {"field": "g", "type": "nominal"},
        "tooltip": [scale.tip(), {"field": "status", "type": "nominal"}, _count_tip()],
    }
    line = {
        "data": {"name": "counts"},
        "transform": [
            BY_CATEGORY,
            BY_STATUS,
            {"aggregate": [{"op": "sum", "field": "p", "as": "p"}], "groupby": ["n", "g", "s"]},
            *scale.times(),
            _labels("status", "s", cat.statuses),
        ],
        "encoding": encoding,
        # A line would be read as its first night: its points say each night instead.
        "layer": [
            {"mark": {"type": "line", "interpolate": "linear", "aria": False}},
            {"mark": {"type": "point", "filled": True, "size": 24}},
        ],
    }
    return _layered(data, scale, [_described(line)], shade=True)


def _count_tip(field: str = "p", title: str = "pets") -> Spec:
    return {"field": field, "type": "quantitative", "title": title, "format": ",d"}


def changes(data: ReportData, scale: NightScale) -> Spec:
    """Bars per night from the second night on (on the first, every pet is added, and its
    bar would flatten every other night's): added and changed up, removed down."""
    bars = {
        "data": {"name": "churn"},
        "transform": [
            {"filter": "datum.n > 0"},
            BY_CATEGORY,
            BY_STATUS,
            {"aggregate": [{"op": "sum", "field": "p", "as": "p"}], "groupby": ["n", "k"]},
            *scale.times(),
            _labels("change", "k", list(CHANGES)),
            {"calculate": "datum.k == 2 ? -datum.p : datum.p", "as": "y"},
            # Stacked here rather than by the bar: a bar given x and x2 is a horizontal bar.
            {"stack": "y", "groupby": ["n"], "sort": [{"field": "k"}], "as": ["y0", "y1"]},
        ],
        "mark": {"type": "rect"},
        "encoding": {
            "x": scale.x("t0"),
            "x2": {"field": "t1"},
            "y": {
                "field": "y0",
                "type": "quantitative",
                "title": "pets (removed below 0)",
                **count_scale(),
            },
            "y2": {"field": "y1"},
            "color": _colour("change", CHANGE_COLOURS, list(CHANGE_COLOURS), "change"),
            "tooltip": [scale.tip(), {"field": "change", "type": "nominal"}, _count_tip()],
        },
    }
    return _layered(data, scale, [_described(bars)], shade=True)


def status_transitions(data: ReportData) -> Spec:
    statuses = list(data.catalogue.statuses)
    axes = {
        "x": {"field": "to", "type": "nominal", "title": "to", "sort": statuses},
        "y": {"field": "from", "type": "nominal", "title": "from", "sort": statuses},
    }
    return {
        "params": PARAMS,
        "data": {"name": "moves"},
        "transform": [
            BY_CATEGORY,
            {"filter": "status < 0 || datum.f == status || datum.t == status"},
            {"aggregate": [{"op": "sum", "field": "p", "as": "p"}], "groupby": ["f", "t"]},
            _labels("from", "f", statuses),
            _labels("to", "t", statuses),
        ],
        "width": WIDTH // 2,
        "height": HEIGHT,
        "layer": [
            {
                "mark": "rect",
                "encoding": {
                    **axes,
                    "color": {
                        "field": "p",
                        "type": "quantitative",
                        "scale": {"scheme": "blues"},
                        "title": "pets",
                        # Each cell prints its count; a gradient legend would label
                        # fractions of a pet on a small range.
                        "legend": None,
                    },
                    "tooltip": [
                        {"field": "from", "type": "nominal"},
                        {"field": "to", "type": "nominal"},
                        _count_tip(),
                    ],
                },
            },
            {
                # The cell under it says its count (the text would be read as "p").
                "mark": {"type": "text", "fontSize": 13, "aria": False},
                "encoding": {
                    **axes,
                    "text": {"field": "p", "type": "quantitative", "format": ",d"},
                },
            },
        ],
    }


def time_to_sold(data: ReportData) -> Spec:
    """One bar per whole number of days, centred on it; the axis labels whole days."""
    sold = data.catalogue.sold
    low = int(sold["d"].min()) if len(sold) else 0
    high = int(sold["d"].max()) if len(sold) else 1
    step = max(1, math.ceil((high - low + 1) / MAX_DAY_TICKS))
    spec = {
        "params": PARAMS,
        "data": {"name": "sold"},
        "transform": [
            BY_CATEGORY,
            {"aggregate": [{"op": "sum", "field": "p", "as": "p"}], "groupby": ["d"]},
            {"calculate": "datum.d - 0.4", "as": "d0"},
            {"calculate": "datum.d + 0.4", "as": "d1"},
        ],
        "width": WIDTH,
        "height": HEIGHT,
        "mark": "rect",
        "encoding": {
            "x": {
                "field": "d0",
                "type": "quantitative",
                "title": f"days {FROM_STATUS} before {TO_STATUS}",
                "scale": {"domain": [low - 0.5, high + 0.5], "nice": False, "zero": False},
                "axis": {"values": list(range(low, high + 1, step)), "format": "d", "grid": False},
            },
            "x2": {"field": "d1"},
            "y": {"field": "p", "type": "quantitative", "title": "pets", **count_scale()},
            "y2": {"datum": 0},
            "tooltip": [{"field": "d", "type": "quantitative", "title": "days"}, _count_tip()],
        },
    }
    return _described(spec)


def quality(data: ReportData, scale: NightScale) -> Spec:
    bars = {
        "data": {"name": "quality"},
        "transform": [*scale.times(), _labels("verdict", "v", list(VERDICTS))],
        "mark": "rect",
        "encoding": {
            "x": scale.x("t0"),
            "x2": {"field": "t1"},
            "y": {
                "field": "pets",
                "type": "quantitative",
                "title": "pets in the snapshot",
                **count_scale(),
            },
            "y2": {"datum": 0},
            "color": _colour("verdict", VERDICT_COLOURS, list(VERDICT_COLOURS), "night"),
            "tooltip": [
                scale.tip(),
                {"field": "verdict", "type": "nominal"},
                _count_tip("pets"),
                _count_tip("quarantined", "quarantined rows"),
            ],
        },
    }
    line_encoding = {
        "x": scale.x(),
        "y": {
            "field": "quarantined",
            "type": "quantitative",
            "title": "quarantined rows",
            **count_scale(120),
        },
        "detail": {"field": "g", "type": "nominal"},
        "tooltip": [scale.tip(), _count_tip("quarantined", "quarantined rows")],
    }
    quarantined = {
        "data": {"name": "quality"},
        "transform": scale.times(),
        "encoding": line_encoding,
        "layer": [
            {"mark": {"type": "line", "color": "#6d597a", "aria": False}},
            {"mark": {"type": "point", "filled": True, "color": "#6d597a"}},
        ],
    }
    top = _layered(data, scale, [_described(bars)], shade=False)
    bottom = _layered(data, scale, [_described(quarantined)], shade=False)
    bottom["height"] = 120
    del top["params"], bottom["params"]
    return {"params": PARAMS, "vconcat": [top, bottom]}


def datasets(data: ReportData) -> dict[str, str]:
    """The tables the specs name, as CSV text (numbers only: the page parses them)."""
    import pandas as pd

    cat = data.catalogue
    segment = dict(zip(data.quality["n"], data.quality["g"], strict=True))
    counts = cat.counts.assign(g=cat.counts["n"].map(segment).astype("int64"))
    quality = data.quality.assign(v=data.quality["verdict"].map(VERDICTS.index))
    marks = pd.DataFrame(
        [(_days(data, d), "no snapshot") for d in data.gaps]
        + [(_days(data, dt.date.fromisoformat(n)), v) for n, v in data.untrusted],
        columns=["n", "kind"],
    )
    tables = {
        "counts": counts[["n", "g", "c", "s", "p"]],
        "churn": cat.churn,
        "moves": cat.moves,
        "sold": cat.sold,
        "quality": quality[["n", "g", "v", "pets", "quarantined"]],
        "marks": marks,
    }
    return {name: frame.to_csv(index=False, lineterminator="\n") for name, frame in tables.items()}


def _days(data: ReportData, day: dt.date) -> int:
    return (day - data.nights[0].date).days


def charts(data: ReportData) -> list[Chart]:
    """The five charts of the report, in page order (none before a second night)."""
    if len(data.nights) < 2:
        return []
    from petsync.report import tables

    scale = NightScale(data)
    shaded = (
        "Shaded: nights with no snapshot (grey), incomplete (red) or with a flagged drop (yellow)."
    )
    return [
        Chart(
            "pets-per-status",
            "Pets per status per night",
            "The catalogue each night, from the history, counted by status; (none) is a pet "
            "without status. A pet an incomplete or flagged night lacked is still counted: "
            "such a night ends no pet's history. " + shaded,
            pets_per_status(data, scale),
            tables.counts_table(data),
        ),
        Chart(
            "changes",
            "Added, changed and removed each night",
            "Added (up): pets new or back; changed (up): a new version of a pet (status, name or "
            "category), counted under its new status and category; removed (below 0): pets a "
            "complete night lacked. From the second night: the first, when every pet is "
            "added, is in the table. " + shaded,
            changes(data, scale),
            tables.changes_table(data),
        ),
        Chart(
            "transitions",
            "Status transitions between nights",
            "Pets that went from one status (row) to another (column) from one night to the "
            "next, over all nights, under the category they had after the change. The status "
            "filter keeps the moves from or to that status.",
            status_transitions(data),
            tables.moves_table(data),
        ),
        Chart(
            "time-to-sold",
            f"Time from {FROM_STATUS} to {TO_STATUS}",
            f"Days a pet spent {FROM_STATUS} before it was seen {TO_STATUS}, counted from the "
            f"night it was first seen {FROM_STATUS}: one bar per whole number of days. The "
            "status filter does not apply.",
            time_to_sold(data),
            tables.sold_table(data),
        ),
        Chart(
            "quality",
            "Data quality each night",
            "Complete: the export proved every listing whole; incomplete nights and flagged "
            "drops close no pet. The line counts the rows quarantined. About the nights, "
            "not the pets: the filters do not apply. Grey: no snapshot.",
            quality(data, scale),
            tables.quality_table(data),
        ),
    ]
