"""The report's HTML: one file with the charts, their numbers, and Vega's JavaScript inlined.

The JavaScript (Vega, Vega-Lite and vega-embed) comes from the ``vl-convert-python`` wheel,
which ships them: nothing is downloaded to build the report, and the page loads nothing to
show it. Its Content-Security-Policy forbids every request (``default-src 'none'``; inline
scripts and styles only), so a chart can never reach for another host; a blocked attempt
would be counted in ``data-blocked`` on ``<body>``. When every chart has drawn, ``<body>``
gets ``data-rendered`` with their number (``data-error`` if one failed).

Bundling the JavaScript takes vl-convert a few seconds; the bundle is kept in a cache
folder (by default ``$XDG_CACHE_HOME/petsync``), named by vl-convert's version.
"""

from __future__ import annotations

import datetime as dt
import html
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from petsync.core.errors import ConfigError, InputError
from petsync.core.files import atomic_write_text
from petsync.core.reading import read_regular

if TYPE_CHECKING:
    import pandas as pd

    from petsync.report.charts import Chart
    from petsync.report.data import ReportData

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
)
# Vega compiles its expressions with Function(), hence 'unsafe-eval'; it can fetch nothing.

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 900px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin: 2em 0 0.2em; }
p.caption, p.meta, dl.meta { color: #555; margin: 0.2em 0 0.8em; }
dl.meta { display: grid; grid-template-columns: max-content auto; gap: 0 1em; font-size: 13px; }
dl.meta dt { font-weight: 600; } dl.meta dd { margin: 0; }
p.notice { background: #fff4e5; border-left: 4px solid #e9c46a; padding: 0.4em 0.8em; }
p.gaps { background: #f0f0f0; border-left: 4px solid #9e9e9e; padding: 0.4em 0.8em; }
div.controls { position: sticky; top: 0; background: #fff; padding: 0.5em 0; z-index: 1;
  border-bottom: 1px solid #ddd; }
div.controls label { margin-right: 1.5em; }
.chart { min-height: 120px; }
details { margin-top: 0.5em; }
table { border-collapse: collapse; font-size: 13px; margin-top: 0.4em; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
#lookup-results h3 { font-size: 1em; margin: 1em 0 0; }
"""

WATCH = """
document.addEventListener("securitypolicyviolation", function (e) {
  var n = Number(document.body.dataset.blocked || "0") + 1;
  document.body.dataset.blocked = String(n);
  document.body.dataset.blockedUri = e.blockedURI;
});
"""

# The charts share their tables, as CSV parsed once per chart: Vega marks the rows it
# ingests, so two views never share a row (and the bundle's window.vega, with its CSV
# reader, is null). Each chart's view is kept, so the two selects can set the parameters
# "category" and "status" in every one of them.
EMBED = """
var DATA = %s, NEEDS = %s, charts = %s;
var options = {mode: "vega-lite", renderer: "svg", actions: false};
var views = [];
function rows(name) {  // the tables hold numbers and plain words only: no quoting
  var lines = DATA[name].trim().split("\\n"), keys = lines[0].split(",");
  return lines.slice(1).map(function (line) {
    var row = {};
    line.split(",").forEach(function (v, i) { row[keys[i]] = /^-?[0-9]+$/.test(v) ? +v : v; });
    return row;
  });
}
Promise.resolve().then(function () { return Promise.all(Object.keys(charts).map(function (id) {
  var spec = charts[id];
  spec.datasets = {};
  NEEDS[id].forEach(function (name) { spec.datasets[name] = rows(name); });
  return vegaEmbed("#" + id, spec, options).then(function (result) {
    views.push(result.view);
    return result;
  });
})); }).then(function (results) {
  document.body.dataset.rendered = String(results.length);
}).catch(function (error) {
  document.body.dataset.error = String(error);
});
function filter(name, value) {
  document.body.dataset.filtered = "";
  Promise.all(views.map(function (view) {
    return view.signal(name, Number(value)).runAsync();
  })).then(function () {
    document.body.dataset.filtered = name + "=" + value;
  });
}
["category", "status"].forEach(function (name) {
  var select = document.getElementById("filter-" + name);
  if (select) select.addEventListener("change", function () { filter(name, select.value); });
});
"""

# The lookup: every version of the pets the page carries (see petsync.report.lookup).
LOOKUP = """
var PETS = %s, SHOWN = 20;
function cell(text) { var td = document.createElement("td"); td.textContent = text; return td; }
function lookup(query) {
  var out = document.getElementById("lookup-results");
  out.textContent = "";
  query = query.trim().toLowerCase();
  if (!query) { document.body.dataset.lookup = ""; return; }
  var byId = /^[0-9-]+$/.test(query), found = [], versions = {};
  PETS.forEach(function (v) {
    var hit = byId ? String(v[0]) === query : v[1].toLowerCase().indexOf(query) >= 0;
    if (!hit) return;
    if (!(v[0] in versions)) { versions[v[0]] = []; found.push(v[0]); }
  });
  PETS.forEach(function (v) { if (v[0] in versions) versions[v[0]].push(v); });
  var note = document.createElement("p");
  note.textContent = found.length ? found.length + " pet" + (found.length == 1 ? "" : "s") +
    " found" + (found.length > SHOWN ? ", the first " + SHOWN + " shown" : "") :
    "No pet carried by this page matches; see above for looking up any pet.";
  out.appendChild(note);
  found.slice(0, SHOWN).forEach(function (id) {
    var title = document.createElement("h3");
    title.textContent = "Pet " + id;
    var table = document.createElement("table");
    var head = document.createElement("tr");
    ["from night", "until night", "status", "name", "categoryId"].forEach(function (t) {
      var th = document.createElement("th"); th.textContent = t; head.appendChild(th);
    });
    table.appendChild(head);
    versions[id].forEach(function (v) {
      var tr = document.createElement("tr");
      [v[2], v[3] === null ? "(current)" : v[3], v[4] === null ? "(none)" : v[4], v[1],
       String(v[5])].forEach(function (t) { tr.appendChild(cell(t)); });
      table.appendChild(tr);
    });
    out.appendChild(title);
    out.appendChild(table);
  });
  document.body.dataset.lookup = String(found.length);
}
var box = document.getElementById("lookup");
if (box) box.addEventListener("input", function () { lookup(box.value); });
"""


# The cached Vega bundle is about 1 MB; anything far larger is not ours: bundled again.
_BUNDLE_LIMIT = 64 << 20


def default_cache_dir() -> Path:
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "petsync"


def vega_bundle(cache_dir: Path | None = None) -> str:
    """Vega, Vega-Lite and vega-embed as one script, from the vl-convert wheel (cached)."""
    import vl_convert as vlc

    folder = cache_dir if cache_dir is not None else default_cache_dir()
    version = getattr(vlc, "__version__", "unknown")
    cached = folder / f"vega-embed-vl-convert-{version}.js"
    try:  # a regular file only: a FIFO planted in the cache must not block the report
        return read_regular(cached, "cached script", limit=_BUNDLE_LIMIT).decode("utf-8")
    except (InputError, UnicodeDecodeError):
        pass
    # The default snippet puts vegaEmbed on window (the stubs wrongly require one); the
    # Vega-Lite is the newest vl-convert ships.
    bundle: str = vlc.javascript_bundle()  # type: ignore[call-arg]
    try:
        folder.mkdir(parents=True, exist_ok=True)
        atomic_write_text(cached, bundle)
    except (OSError, ConfigError):  # unwritable, or a link or FIFO at the name
        pass  # no cache: the next report bundles again
    return bundle


def _script(text: str) -> str:
    # Inside <script>, only "</script" ends the element early (and "<!--" can confuse the
    # parser). In JavaScript strings, regular expressions and JSON, "<\/" still means "</".
    return re.sub(r"</(script)", r"<\\/\1", text, flags=re.IGNORECASE).replace("<!--", "<\\!--")


def _table(frame: pd.DataFrame) -> str:
    head = "".join(f"<th>{html.escape(str(c))}</th>" for c in frame.columns)
    rows = []
    for record in frame.itertuples(index=False):
        cells = "".join(f"<td>{html.escape(_cell(v))}</td>" for v in record)
        rows.append(f"<tr>{cells}</tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cell(value: object) -> str:
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _select(name: str, options: list[tuple[int, str]]) -> str:
    items = "".join(f'<option value="{v}">{html.escape(label)}</option>' for v, label in options)
    return f'<label>{name} <select id="filter-{name}">{items}</select></label>'


def _dates(days: Sequence[str], limit: int = 20) -> str:
    shown = ", ".join(days[:limit])
    return shown + (f" and {len(days) - limit} more" if len(days) > limit else "")


def _notices(data: ReportData) -> str:
    parts = []
    if data.gaps:
        runs = _runs(data.gaps)
        said = [
            f"no snapshot on {a}" if a == b else f"no snapshot from {a} to {b}" for a, b in runs
        ]
        parts.append(
            f'<p class="gaps">{html.escape(_dates(said).capitalize())}: nothing is drawn for '
            "these nights, and lines do not cross them.</p>"
        )
    for kind, meaning in (
        ("incomplete", "a listing could not be proven whole: pets it lacked are not closed"),
        ("drop flagged", "the pet count fell further than --max-drop allows"),
    ):
        nights = [night for night, verdict in data.untrusted if verdict == kind]
        if nights:
            label = f"{kind.capitalize()} night{'s' if len(nights) > 1 else ''}"
            parts.append(
                f'<p class="notice">{label} ({html.escape(meaning)}): '
                f"{html.escape(_dates(nights))}. Shaded on every chart.</p>"
            )
    return "\n".join(parts)


def _runs(days: Sequence[dt.date]) -> list[tuple[str, str]]:
    """Consecutive days as (first, last) pairs of ISO dates."""
    runs: list[list[dt.date]] = []
    for day in days:
        if runs and (day - runs[-1][-1]).days == 1:
            runs[-1].append(day)
        else:
            runs.append([day])
    return [(r[0].isoformat(), r[-1].isoformat()) for r in runs]


def _controls(data: ReportData) -> str:
    cat = data.catalogue
    categories = [(-1, "all")] + [
        (code, f"{label}" if label.startswith("other") else f"category {label}")
        for code, label in enumerate(cat.categories)
    ]
    statuses = [(-1, "all"), *enumerate(cat.statuses)]
    return (
        '<div class="controls">'
        + _select("category", categories)
        + _select("status", statuses)
        + "<span>Filters every chart it applies to (the captions say which).</span></div>"
    )


def _lookup(data: ReportData, directory: str) -> str:
    found = data.lookup
    how = f"petsync.load_history({directory!r}).query('id == 42')"
    return (
        '<section id="pet"><h2>Look up a pet</h2>'
        f'<p class="caption">Its versions: the nights it was seen, its status, name and '
        f"category. This page carries the {found.pets:,} pets that changed last, of "
        f"{found.of:,} in the history (so it stays small for any catalogue); any other pet: "
        f"<code>{html.escape(how)}</code> in Python.</p>"
        '<input id="lookup" type="search" placeholder="id or name" size="30">'
        '<div id="lookup-results"></div></section>'
    )


def render_page(
    title: str,
    about: Sequence[tuple[str, str]],
    data: ReportData,
    charts: Sequence[Chart],
    *,
    directory: str,
    bundle: str,
) -> str:
    """The whole report page as a string."""
    from petsync.report.charts import datasets
    from petsync.report.tables import category_table, counts_table

    nights = len(data.nights)
    script = f"<script>{_script(bundle)}</script>\n" if charts else ""  # 0.9 MB: only for charts
    head = (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n"
        f"<script>{WATCH}</script>\n{script}</head>\n<body>\n"
        f"<h1>{html.escape(title)}</h1>\n"
    )
    span = f"{data.first} to {data.last}" if nights > 1 else str(data.first or "no night yet")
    summary = f"{'one night' if nights == 1 else f'{nights} nights'}, {span}."
    meta = "".join(f"<dt>{html.escape(k)}</dt><dd>{html.escape(v)}</dd>" for k, v in about)
    body = [f'<p class="meta">{html.escape(summary)}</p>', f'<dl class="meta">{meta}</dl>']
    if nights < 2:
        body.append(
            '<p class="notice">This history has one night so far: come back tomorrow. The '
            "charts compare nights, so they start with the second.</p>"
            if nights
            else '<p class="notice">No night yet: run <code>petsync export</code>, then '
            "<code>petsync history</code>.</p>"
        )
        if nights:
            body.append(_section("numbers", "The night's numbers", "", counts_table(data)))
        return head + "\n".join(body) + "\n</body>\n</html>\n"
    body.append(
        '<p class="caption">Hover a mark for its numbers; each chart\'s table is under it.</p>'
    )
    body.append(_notices(data))
    body.append(_controls(data))
    body.append(
        _section(
            "categories",
            "The largest categories",
            "Pets on the first and last night, and the pets added, removed and sold in "
            "between, for the largest categories on the last night; the rest are one group.",
            category_table(data),
            open_table=True,
        )
    )
    for chart in charts:
        body.append(
            f'<section id="{chart.id}"><h2>{html.escape(chart.title)}</h2>'
            f'<p class="caption">{html.escape(chart.caption)}</p>'
            f'<div class="chart" id="chart-{chart.id}"></div>'
            f"<details><summary>Numbers ({len(chart.table)} rows)</summary>"
            f"{_table(chart.table)}</details></section>"
        )
    body.append(_lookup(data, directory))
    specs = {f"chart-{c.id}": c.spec for c in charts}
    needs = {f"chart-{c.id}": _names(c.spec) for c in charts}
    compact = {"separators": (",", ":")}
    embed = EMBED % (
        json.dumps(datasets(data), **compact),  # type: ignore[arg-type]
        json.dumps(needs, **compact),  # type: ignore[arg-type]
        json.dumps(specs, **compact),  # type: ignore[arg-type]
    )
    script = LOOKUP % json.dumps(data.lookup.rows, separators=(",", ":"))
    return (
        head
        + "\n".join(body)
        + f"\n<script>{_script(embed)}</script>\n<script>{_script(script)}</script>\n"
        "</body>\n</html>\n"
    )


def _section(
    ident: str, title: str, caption: str, table: pd.DataFrame, *, open_table: bool = False
) -> str:
    return (
        f'<section id="{ident}"><h2>{html.escape(title)}</h2>'
        + (f'<p class="caption">{html.escape(caption)}</p>' if caption else "")
        + (
            _table(table)
            if open_table
            else f"<details open><summary>Numbers</summary>{_table(table)}</details>"
        )
        + "</section>"
    )


def _names(spec: Any) -> list[str]:
    """The named datasets a spec reads, anywhere in it."""
    found: set[str] = set()

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            data = node.get("data")
            if isinstance(data, dict) and "name" in data:
                found.add(str(data["name"]))
            for value in node.values():
                walk(value)
        elif isinstance(node, list):
            for value in node:
                walk(value)

    walk(spec)
    return sorted(found)
