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

import html
import json
import os
import re
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.core.errors import ConfigError, InputError
from petsync.core.files import atomic_write_text
from petsync.core.reading import read_regular

if TYPE_CHECKING:
    import pandas as pd

    from petsync.report.charts import Chart

CSP = (
    "default-src 'none'; script-src 'unsafe-inline' 'unsafe-eval'; "
    "style-src 'unsafe-inline'; img-src data: blob:; font-src data:"
)
# Vega compiles its expressions with Function(), hence 'unsafe-eval'; it can fetch nothing.

STYLE = """
body { font: 15px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 900px; color: #222; }
h1 { font-size: 1.6em; margin-bottom: 0.2em; }
h2 { font-size: 1.2em; margin: 2em 0 0.2em; }
p.caption, p.meta { color: #555; margin: 0.2em 0 0.8em; }
.chart { min-height: 120px; }
details { margin-top: 0.5em; }
table { border-collapse: collapse; font-size: 13px; margin-top: 0.4em; }
th, td { border: 1px solid #ddd; padding: 2px 8px; text-align: right; }
th { background: #f4f4f4; }
td:first-child, th:first-child { text-align: left; }
"""

WATCH = """
document.addEventListener("securitypolicyviolation", function (e) {
  var n = Number(document.body.dataset.blocked || "0") + 1;
  document.body.dataset.blocked = String(n);
  document.body.dataset.blockedUri = e.blockedURI;
});
"""

EMBED = """
var charts = %s;
var options = {mode: "vega-lite", renderer: "svg", actions: false};
Promise.all(Object.keys(charts).map(function (id) {
  return vegaEmbed("#" + id, charts[id], options);
})).then(function (views) {
  document.body.dataset.rendered = String(views.length);
}).catch(function (error) {
  document.body.dataset.error = String(error);
});
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


def render_page(title: str, meta: str, charts: Sequence[Chart], *, bundle: str) -> str:
    """The whole report page as a string."""
    sections = []
    for chart in charts:
        sections.append(
            f'<section id="{chart.id}"><h2>{html.escape(chart.title)}</h2>'
            f'<p class="caption">{html.escape(chart.caption)}</p>'
            f'<div class="chart" id="chart-{chart.id}"></div>'
            f"<details><summary>Numbers ({len(chart.table)} rows)</summary>"
            f"{_table(chart.table)}</details></section>"
        )
    specs = {f"chart-{c.id}": c.spec for c in charts}
    return (
        '<!DOCTYPE html>\n<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n"
        f"<script>{WATCH}</script>\n"
        f"<script>{_script(bundle)}</script>\n</head>\n<body>\n"
        f'<h1>{html.escape(title)}</h1>\n<p class="meta">{html.escape(meta)}</p>\n'
        + "\n".join(sections)
        + f"\n<script>{_script(EMBED % json.dumps(specs, separators=(',', ':')))}</script>\n"
        "</body>\n</html>\n"
    )
