"""The report: its numbers, a page that names no other host, and the page in a browser."""

from __future__ import annotations

import datetime as dt
import json
import os
import re
import stat
import struct
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest
from click.testing import CliRunner

import petsync
from petsync.cli import cli
from petsync.history import table as history_table
from petsync.history.load import load_history, read_history_state, transitions
from petsync.history.table import history_dir
from petsync.history.update import update_history
from petsync.report import catalogue
from petsync.report.data import read_versions, report_data
from petsync.report.page import CSP
from petsync.report.write import write_report
from tests.export.published import publish_snapshot
from tests.history.nights import START, random_nights
from tests.report.axes import Axis, affine, axes, point_xs, points, rect_centres, rects
from tests.report.browser import HOW_TO_GET, Browser, SinkProxy, find_chromium
from tests.report.conftest import FLAGGED, GAP

CHARTS = ("pets-per-status", "changes", "transitions", "time-to-sold", "quality")


def test_report_counts_are_the_catalogue_each_night(history_out: Path) -> None:
    data = report_data(history_out)
    cat = data.catalogue
    counts = cat.counts.groupby(["n", "s"])["p"].sum()
    for night in data.nights:
        day = (night.date - data.nights[0].date).days
        catalogue = load_history(history_out, as_of=night.date)
        statuses = catalogue["status"].astype("string").fillna("(none)").value_counts()
        drawn = {cat.statuses[s]: int(p) for (n, s), p in counts.items() if n == day and p}
        assert drawn == statuses.to_dict(), night.date


def test_report_changes_and_moves_are_the_nights(history_out: Path) -> None:
    data = report_data(history_out)
    churn = data.catalogue.churn.groupby(["n", "k"])["p"].sum()
    first = data.nights[0].date
    for night in data.nights:
        day = (night.date - first).days
        drawn = [int(churn.get((day, k), 0)) for k in range(3)]
        assert drawn == [night.added, night.changed, night.removed], night.date
    assert int(data.catalogue.moves["p"].sum()) == sum(
        sum(n.status_changes.values()) for n in data.nights
    )
    moves = transitions(load_history(history_out))
    sold = moves[(moves.from_status == "available") & (moves.to_status == "sold")]
    by_days = data.catalogue.sold.groupby("d")["p"].sum().to_dict()
    assert by_days == sold.days.value_counts().to_dict()


def test_report_names_the_gap_and_the_untrusted_nights(
    history_out: Path, bundle_cache: Path
) -> None:
    data = report_data(history_out)
    assert data.gaps == (START + dt.timedelta(days=GAP),)
    assert ((START + dt.timedelta(days=FLAGGED)).isoformat(), "drop flagged") in data.untrusted
    page = write_report(history_out, cache_dir=bundle_cache).path.read_text(encoding="utf-8")
    assert f"No snapshot on {START + dt.timedelta(days=GAP)}:" in page
    assert "Drop flagged night (the pet count fell further than --max-drop allows): " in page


def test_report_page_loads_nothing_and_carries_its_numbers(
    history_out: Path, bundle_cache: Path
) -> None:
    result = write_report(history_out, cache_dir=bundle_cache)

    page = result.path.read_text(encoding="utf-8")
    assert result.path == history_out / "report.html"
    assert result.charts == CHARTS
    assert f'content="{CSP}"' in page and "default-src 'none'" in CSP
    assert not re.search(r"""\b(?:src|href)\s*=\s*["']?(?:https?:)?//""", page)
    assert "<script src" not in page and "<link" not in page
    nights = json.loads((history_dir(history_out) / "_history.json").read_text())["nights"]
    last = nights[-1]
    row = f"<tr><td>{last['date']}</td>"
    assert row in page  # each night's numbers are in the tables under the charts


def test_report_command_writes_the_page_where_asked(
    history_out: Path, bundle_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("XDG_CACHE_HOME", str(bundle_cache.parent / "xdg"))
    target = history_out.parent / "page.html"

    result = CliRunner().invoke(cli, ["report", str(history_out), "-o", str(target)])

    assert result.exit_code == 0, result.output
    assert result.stdout.startswith(f"{target}: 5 charts over 29 nights, ")
    assert target.stat().st_size > 100_000


def test_report_without_a_history_says_how_to_build_it(tmp_path: Path) -> None:
    result = CliRunner().invoke(cli, ["report", str(tmp_path)])

    assert result.exit_code == 2
    assert f"no history at {tmp_path / 'history'}; `petsync history {tmp_path}` builds it" in (
        result.stderr
    )


def png_size(path: Path) -> tuple[int, int]:
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    width, height = struct.unpack(">II", data[16:24])
    return width, height


POINTS = "#chart-pets-per-status g.mark-symbol.role-mark path"
CHART_STATS = """
Array.from(document.querySelectorAll("div.chart")).map(function (div) {
  var svg = div.querySelector("svg");
  var box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  var marks = div.querySelectorAll("g.role-mark path, g.role-mark line, g.role-mark text");
  var drawn = Array.from(marks).filter(function (m) {
    return m.tagName !== "path" || (m.getAttribute("d") || "").length > 0;
  });
  return {id: div.id, svg: !!svg, width: box.width, height: box.height, marks: drawn.length};
})
"""


@pytest.fixture
def chromium() -> str:
    found = find_chromium()
    if found is None:
        pytest.skip(HOW_TO_GET)
    return found


@pytest.fixture
def proxy() -> object:
    sink = SinkProxy()
    yield sink
    sink.close()


SVGS = """
Array.from(document.querySelectorAll("div.chart")).map(function (div) {
  return [div.id, new XMLSerializer().serializeToString(div.querySelector("svg"))];
})
"""
# A time zone west of UTC: a date drawn in local time instead of UTC would show the day before.
TIME_ZONE = "America/Los_Angeles"


def open_report(browser: Browser, url: str) -> None:
    browser.call("Emulation.setTimezoneOverride", {"timezoneId": TIME_ZONE})
    browser.open(url, width=1000, height=900)
    browser.wait_for(
        "document.body && (document.body.dataset.rendered || document.body.dataset.error)"
    )


def test_report_renders_every_chart_in_chromium_and_requests_nothing(
    history_out: Path, bundle_cache: Path, tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    report = write_report(history_out, cache_dir=bundle_cache)
    url = report.path.absolute().as_uri()
    shot = tmp_path / "report.png"

    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        open_report(browser, url)
        rendered = browser.evaluate("document.body.dataset.rendered || ''")
        error = browser.evaluate("document.body.dataset.error || ''")
        blocked = browser.evaluate("document.body.dataset.blocked || ''")
        stats = browser.evaluate(CHART_STATS)
        browser_points = browser.evaluate(f"[document.querySelectorAll('{POINTS}').length]")
        # What a tooltip and a screen reader say of the first point: its night, in UTC.
        said = browser.evaluate(f"document.querySelector('{POINTS}').getAttribute('aria-label')")
        browser.screenshot(shot)
        requested = browser.requested_urls()

    assert (rendered, error, blocked) == ("5", "", "")
    assert [s["id"] for s in stats] == [f"chart-{c}" for c in CHARTS]
    for chart in stats:
        assert chart["svg"] and chart["width"] > 200 and chart["height"] > 100, chart
        assert chart["marks"] >= 3, chart  # bars, lines, points, cells: drawn, not empty
    points = browser_points[0]  # one point per night and status in the first chart
    assert points == len(report_data(history_out).catalogue.counts.groupby(["n", "s"]))
    assert said.startswith(f"night: {START}; status: ")  # not the day before (local time)
    assert requested == [url]  # the page itself, and nothing else
    width, height = png_size(shot)
    assert width == 1000 and height > 2000  # the whole page, every chart on it
    assert shot.stat().st_size > 50_000  # drawn, not a blank page


def _number(label: str) -> float:
    return float(label.replace(",", "").replace("\u2212", "-"))


def _whole(values: list[float], what: str) -> None:
    off = [v for v in values if abs(v - round(v)) > 0.05]
    assert off == [], f"{what}: not on a whole value: {off[:5]}"


def check_axis(chart: str, axis: Axis) -> tuple[float, float] | None:
    """Labels unique, each on its tick, and (on a scale) each where its value maps; returns
    the scale's ``a, b`` (position = a + b * value; days for a night axis)."""
    texts = [text for text, _ in axis.labels]
    assert texts and len(set(texts)) == len(texts), (chart, axis.description, texts)
    assert len(axis.ticks) == len(texts), (chart, axis.description)
    # Each label by its tick: Vega lowers a y label a third of its font size, so that its
    # digits centre on the tick; the same shift for every label.
    shifts = [at - tick for (_, at), tick in zip(axis.labels, axis.ticks, strict=True)]
    assert max(shifts) - min(shifts) <= 1 and abs(shifts[0]) <= 4, (chart, texts, shifts)
    if "discrete scale" in axis.description:
        return None  # statuses: names, no values to place
    if "utc scale" in axis.description:
        days = [dt.date.fromisoformat(t).toordinal() for t in texts]  # each label a date
        values = [float(d) for d in days]
    else:
        values = [_number(t) for t in texts]
        _whole(values, f"{chart} {axis.description}")  # counts and days: whole numbers
        if axis.orient == "y":  # the top of the plot (0) is a labelled tick, not a bare frame
            assert abs(min(axis.ticks)) <= 1, (chart, axis.description, texts, axis.ticks)
    positions = axis.ticks
    assert len(values) >= 2, (chart, axis.description, texts)  # a scale shows its extent
    a, b = affine(values, positions)
    for value, at in zip(values, positions, strict=True):
        assert abs(a + b * value - at) <= 1, (chart, axis.description, value, at)
    return a, b


def test_report_axes_label_each_value_once_where_it_is(
    history_out: Path, bundle_cache: Path, tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    report = write_report(history_out, cache_dir=bundle_cache)
    data = report_data(history_out)
    first = data.nights[0].date.toordinal()

    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        open_report(browser, report.path.absolute().as_uri())
        svgs = dict(browser.evaluate(SVGS))

    checked = 0
    for chart, svg in svgs.items():
        found = axes(svg)
        assert {a.orient for a in found} == {"x", "y"}, chart
        for axis in found:
            scale = check_axis(chart, axis)
            checked += 1
            if axis.orient != "x" or scale is None:
                continue
            a, b = scale
            marks = point_xs(svg) + rect_centres(svg)
            assert marks, chart
            at = [(x - a) / b for x in marks]
            _whole(at, f"{chart}: marks")  # every point and bar centred on a night or a day
            if "utc scale" in axis.description:
                nights = {round(v) - first for v in at}
                assert nights <= {(n.date.toordinal() - first) for n in data.nights} | {GAP}
    assert checked >= 10  # an x and a y axis in each chart (two of each in the last)


# What a screen reader says of a mark: "title: value" pairs, each title one a tooltip shows.
SAID_TITLES = {
    *("night", "shaded", "change", "pets", "verdict", "quarantined rows", "days", "from", "to")
}
# Hover the middle of the last bar of a chart; what the tooltip and the mark there say.
HOVER_BAR = """(function (chart) {
  var bars = document.querySelectorAll("#chart-" + chart + " g.mark-rect.role-mark path");
  var bar = bars[bars.length - 1];
  bar.scrollIntoView({block: "center"});
  var box = bar.getBoundingClientRect();
  var x = box.left + box.width / 2, y = box.top + box.height / 2;
  return [x, y, document.elementFromPoint(x, y).getAttribute("aria-label")];
})"""
TOOLTIP = "(document.getElementById('vg-tooltip-element') || {}).textContent || ''"


def _said(label: str) -> dict[str, str]:
    pairs = dict(part.split(": ", 1) for part in label.split("; "))
    assert set(pairs) <= SAID_TITLES, label  # no internal field name (t1, y1, g, ...)
    return pairs


def test_report_bars_tell_a_screen_reader_the_night_their_tooltip_names(
    history_out: Path, bundle_cache: Path, tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    report = write_report(history_out, cache_dir=bundle_cache)
    hovered = {}

    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        open_report(browser, report.path.absolute().as_uri())
        svgs = dict(browser.evaluate(SVGS))
        for chart in ("changes", "quality"):
            x, y, label = browser.evaluate(f"{HOVER_BAR}('{chart}')")
            browser.call("Input.dispatchMouseEvent", {"type": "mouseMoved", "x": x, "y": y})
            tip = browser.wait_for(f"{TOOLTIP}.indexOf('night') >= 0 && {TOOLTIP}")
            hovered[chart] = (label, tip)

    for chart, (label, tip) in hovered.items():
        night = _said(label)["night"]
        assert re.match(rf"night\s*{night}(?!\d)", tip), (chart, label, tip)  # the tooltip's night
    checked = 0
    for chart, svg in svgs.items():
        x = next(a for a in axes(svg) if a.orient == "x")
        if "discrete scale" in x.description:  # status transitions: cells, not bars
            checked += sum(1 for _, label in rects(svg) if _said(label))
            continue
        a, b = affine([_value(x, t) for t, _ in x.labels], [at for _, at in x.labels])
        for centre, label in rects(svg):
            said = _said(label)
            if "utc scale" in x.description:  # the night the bar is centred on
                night = dt.date.fromordinal(round((centre - a) / b))
                assert said["night"] == night.isoformat(), (chart, label)
            elif chart == "chart-time-to-sold":
                assert said["days"] == str(round((centre - a) / b)), (chart, label)
            checked += 1
    assert checked > 50  # the bars of two charts and the shaded nights of four


def _value(axis: Axis, text: str) -> float:
    return dt.date.fromisoformat(text).toordinal() if "utc" in axis.description else _number(text)


def test_the_controls_filter_every_chart_and_find_a_pet(
    history_out: Path, bundle_cache: Path, tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    report = write_report(history_out, cache_dir=bundle_cache)
    data = report_data(history_out)
    counts = data.catalogue.counts
    pet = data.lookup.rows[0][0]
    versions = [r for r in data.lookup.rows if r[0] == pet]
    pick = """(function (name, value) {
      var s = document.getElementById("filter-" + name);
      s.value = value; s.dispatchEvent(new Event("change")); return s.value; })"""

    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        open_report(browser, report.path.absolute().as_uri())
        browser.evaluate(f"{pick}('category', '0')")
        browser.wait_for("document.body.dataset.filtered === 'category=0'")
        browser.evaluate(f"{pick}('status', '0')")
        browser.wait_for("document.body.dataset.filtered === 'status=0'")
        shown_points = browser.evaluate(f"document.querySelectorAll('{POINTS}').length")
        svgs = dict(browser.evaluate(SVGS))
        browser.evaluate(
            f"(function () {{ var b = document.getElementById('lookup'); b.value = '{pet}';"
            " b.dispatchEvent(new Event('input')); })()"
        )
        found = browser.wait_for("document.body.dataset.lookup")
        shown = browser.evaluate("document.querySelectorAll('#lookup-results tr').length")

    chosen = counts[(counts.c == 0) & (counts.s == 0)]
    assert (
        shown_points == len(chosen) == len(data.nights)
    )  # one status, one category: a point a night
    drawn = svgs["chart-pets-per-status"]
    ys = axes(drawn)[1]
    a, b = affine([_number(t) for t, _ in ys.labels], ys.ticks)
    heights = sorted(round((y - a) / b) for _, y in points(drawn))
    assert heights == sorted(chosen.p.tolist())  # that category's pets in that status
    for chart in ("chart-changes", "chart-transitions", "chart-time-to-sold"):
        assert svgs[chart]  # still drawn after the filters
    assert (found, shown) == ("1", 1 + len(versions))  # a header row, then each version


def test_the_request_check_sees_a_page_that_makes_requests(
    tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    page = tmp_path / "leaky.html"
    page.write_text(
        '<!DOCTYPE html><img src="http://petsync-test.invalid/pixel.png">'
        "<script>document.body.dataset.done = '1'</script>"
    )
    pixel = "http://petsync-test.invalid/pixel.png"
    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        browser.open(page.as_uri(), width=400, height=300)
        browser.wait_for("document.body && document.body.dataset.done")
        # The request's event may come after the script ran: wait for it, bounded.
        browser.wait_until(lambda: pixel in browser.requested_urls())
        requested = browser.requested_urls()
        # Asked while the browser still runs: closing it may cancel a request it has
        # announced but not yet sent (seen on a loaded machine).
        reached = proxy.wait_for_line("petsync-test.invalid")  # the proxy, on loopback

    assert pixel in requested
    assert reached


def test_every_chart_spec_is_valid_vega_lite(history_out: Path) -> None:
    import importlib.resources

    import jsonschema

    from petsync.report.charts import charts

    schema = json.loads(
        importlib.resources.files("altair.vegalite.v6.schema")
        .joinpath("vega-lite-schema.json")
        .read_text(encoding="utf-8")
    )
    validator = jsonschema.Draft7Validator(schema)
    for chart in charts(report_data(history_out)):
        errors = [e.message for e in validator.iter_errors(chart.spec)]
        assert errors == [], chart.id


def test_the_churn_chart_starts_on_the_second_night_and_its_table_on_the_first(
    history_out: Path,
) -> None:
    from petsync.report.charts import charts

    data = report_data(history_out)
    chart = next(c for c in charts(data) if c.id == "changes")
    bars = chart.spec["layer"][-1]

    assert bars["transform"][0] == {"filter": "datum.n > 0"}  # n: days since the first night
    assert chart.table.night.tolist()[:2] == [data.first, data.nights[1].date.isoformat()]
    assert chart.table.added.tolist()[0] == data.nights[0].added


def test_report_to_a_store_uri_exits_2_naming_it_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = "gs://bucket/petsync/report.html"

    result = CliRunner().invoke(cli, ["report", str(tmp_path), "-o", target])

    assert result.exit_code == 2, result.output
    assert f"{target} is not a local path: the report is one local file" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no gs:/... folder made, nothing read or written


def test_report_of_one_night_says_come_back_tomorrow(tmp_path: Path, bundle_cache: Path) -> None:
    from tests.export.published import publish_snapshot

    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "sold")])
    CliRunner().invoke(cli, ["history", str(tmp_path)])

    result = CliRunner().invoke(cli, ["report", str(tmp_path)])

    assert result.exit_code == 0, result.output
    assert result.stdout == (
        f"{tmp_path / 'report.html'}: one night so far: come back tomorrow (the charts start "
        "with the second night)\n"
    )
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert f"one night, {START}." in page  # not "START to START"
    assert f"(1 night, last night {START})</dd>" in page  # not "1 nights"
    assert "This history has one night so far: come back tomorrow." in page
    assert 'class="chart"' not in page and "vegaEmbed" not in page  # no empty charts
    assert "<td>2026-01-01</td><td>complete</td><td>1</td><td>1</td>" in page  # its numbers


def test_report_says_when_where_and_by_which_petsync_it_was_made(
    history_out: Path, bundle_cache: Path
) -> None:
    made = dt.datetime(2026, 2, 3, 4, 5, 6, tzinfo=dt.UTC)

    page = write_report(history_out, cache_dir=bundle_cache, now=lambda: made)

    text = page.path.read_text(encoding="utf-8")
    assert "<dt>generated</dt><dd>2026-02-03 04:05:06 UTC</dd>" in text
    assert f"<dt>folder</dt><dd>{history_out.resolve()}</dd>" in text
    assert (
        f"<dt>history</dt><dd>{history_out / 'history'} (29 nights, last night 2026-01-30)</dd>"
        in text
    )
    assert f"<dt>petsync</dt><dd>{petsync.__version__}</dd>" in text


@pytest.mark.parametrize(
    ("umask", "mode"), [(0o022, 0o644), (0o077, 0o600), (0o002, 0o664)], ids=["022", "077", "002"]
)
def test_report_file_takes_the_umask(
    history_out: Path, bundle_cache: Path, umask: int, mode: int
) -> None:
    old = os.umask(umask)
    try:
        path = write_report(history_out, cache_dir=bundle_cache).path
    finally:
        os.umask(old)
    assert stat.S_IMODE(path.stat().st_mode) == mode


@pytest.mark.parametrize("shuffle", [False, True], ids=["files-reversed", "rows-shuffled"])
def test_report_numbers_do_not_depend_on_how_the_files_are_laid_out(
    history_out: Path, shuffle: bool
) -> None:
    import numpy as np
    import pyarrow as pa
    import pyarrow.parquet as pq

    from petsync.history.load import read_history_state
    from petsync.report.catalogue import versions_from_table
    from petsync.report.data import tables

    files = sorted((history_out / "history").glob("*.parquet"), reverse=True)
    table = pa.concat_tables([pq.read_table(f) for f in files])
    if shuffle:  # no night's versions in id order: pets are paired by a sort instead
        table = table.take(np.random.default_rng(5).permutation(table.num_rows))
    state = read_history_state(history_out)

    laid_out = tables(state, versions_from_table(table, state.nights[0].date))
    expected = report_data(history_out)

    for name in ("counts", "churn", "moves", "sold"):
        assert getattr(laid_out.catalogue, name).equals(getattr(expected.catalogue, name)), name
    assert laid_out.lookup.rows == expected.lookup.rows


def test_report_reads_the_history_a_row_group_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The versions are copied into the report's columns a row group at a time: no file's
    table is held whole beside them (the open file holds every current pet)."""
    monkeypatch.setattr(history_table, "PIECE_ROWS", 7)  # the open file's row groups
    out = tmp_path / "out"
    for date, rows, complete in random_nights(11, nights=4, pets=60):
        publish_snapshot(out, date, rows, complete=complete)
    update_history(out)
    filled: list[int] = []
    fill = catalogue.Columns.fill

    def counted(self: catalogue.Columns, table: Any, at: int, first: Any) -> None:
        filled.append(table.num_rows)
        fill(self, table, at, first)

    monkeypatch.setattr(catalogue.Columns, "fill", counted)
    data = report_data(out)

    last = data.nights[-1]
    current = load_history(out, as_of=last.date)["status"].astype("string").fillna("(none)")
    assert max(filled) < len(current)  # the open file (every current pet) not read whole
    counts = data.catalogue.counts.groupby(["n", "s"])["p"].sum()
    day = (last.date - data.nights[0].date).days
    drawn = {data.catalogue.statuses[s]: int(p) for (n, s), p in counts.items() if n == day and p}
    assert drawn == current.value_counts().to_dict()

    # A pet's name is read from the row group that holds it, not from the whole file.
    versions = read_versions(out, read_history_state(out))
    read_groups: list[int] = []
    read_group = pq.ParquetFile.read_row_group

    def counted_group(self: pq.ParquetFile, group: int, **options: Any) -> Any:
        table = read_group(self, group, **options)
        read_groups.append(table.num_rows)
        return table

    monkeypatch.setattr(pq.ParquetFile, "read_row_group", counted_group)
    last_row = np.array([len(versions) - 1])
    (name,) = versions.names(versions.row[last_row])
    assert name and len(read_groups) == 1 and read_groups[0] <= 8
