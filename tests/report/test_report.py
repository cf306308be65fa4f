"""The report: its numbers, a page that names no other host, and the page in a browser."""

from __future__ import annotations

import json
import re
import struct
from pathlib import Path

import pytest
from click.testing import CliRunner

from petsync.cli import cli
from petsync.history.load import load_history, transitions
from petsync.history.table import history_dir
from petsync.report.data import report_data
from petsync.report.page import CSP
from petsync.report.write import write_report
from tests.report.browser import HOW_TO_GET, Browser, SinkProxy, find_chromium

CHARTS = ("pets-per-status", "changes", "transitions", "time-to-sold", "quality")


def test_report_numbers_are_the_histories(history_out: Path) -> None:
    data = report_data(history_out)
    nights = json.loads((history_dir(history_out) / "_history.json").read_text())["nights"]

    per_night = data.pets_per_status.groupby("night")["pets"].sum().to_dict()
    assert per_night == {n["date"]: n["pets"] for n in nights}
    assert data.quality.verdict.tolist() == [
        "complete" if n["trusted"] else "incomplete" for n in nights
    ]
    moves = transitions(load_history(history_out))
    sold = moves[(moves.from_status == "available") & (moves.to_status == "sold")]
    assert dict(zip(data.time_to_sold.days, data.time_to_sold.pets, strict=True)) == (
        sold.days.value_counts().to_dict()
    )
    assert int(data.transitions.pets.sum()) == sum(
        sum(n["status_changes"].values()) for n in nights
    )


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
    assert result.stdout.startswith(f"{target}: 5 charts over 30 nights, ")
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


def test_report_renders_every_chart_in_chromium_and_requests_nothing(
    history_out: Path, bundle_cache: Path, tmp_path: Path, chromium: str, proxy: SinkProxy
) -> None:
    report = write_report(history_out, cache_dir=bundle_cache)
    url = report.path.absolute().as_uri()
    shot = tmp_path / "report.png"

    with Browser(chromium, tmp_path / "profile", proxy) as browser:
        browser.open(url, width=1000, height=900)
        rendered = browser.wait_for("document.body && document.body.dataset.rendered")
        error = browser.evaluate("document.body.dataset.error || ''")
        blocked = browser.evaluate("document.body.dataset.blocked || ''")
        stats = browser.evaluate(CHART_STATS)
        browser_points = browser.evaluate(f"[document.querySelectorAll('{POINTS}').length]")
        browser.screenshot(shot)
        requested = browser.requested_urls()

    assert (rendered, error, blocked) == ("5", "", "")
    assert [s["id"] for s in stats] == [f"chart-{c}" for c in CHARTS]
    for chart in stats:
        assert chart["svg"] and chart["width"] > 200 and chart["height"] > 100, chart
        assert chart["marks"] >= 3, chart  # bars, lines, points, cells: drawn, not empty
    points = browser_points[0]  # one point per night and status in the first chart
    assert points == len(report_data(history_out).pets_per_status)
    assert requested == [url]  # the page itself, and nothing else
    width, height = png_size(shot)
    assert width == 1000 and height > 2000  # the whole page, every chart on it
    assert shot.stat().st_size > 50_000  # drawn, not a blank page


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

    assert pixel in requested
    assert proxy.wait_for_line("petsync-test.invalid")  # it reached the proxy on loopback


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
    first, second = sorted(data.churn.night.unique())[:2]

    charted = {row["night"] for row in chart.spec["data"]["values"]}
    assert first not in charted and second in charted
    assert chart.table.night.tolist()[0] == first


def test_report_to_a_store_uri_exits_2_naming_it_as_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    target = "gs://bucket/petsync/report.html"

    result = CliRunner().invoke(cli, ["report", str(tmp_path), "-o", target])

    assert result.exit_code == 2, result.output
    assert f"{target} is not a local path: the report is one local file" in result.stderr
    assert list(tmp_path.iterdir()) == []  # no gs:/... folder made, nothing read or written


def test_report_of_one_night_says_one_night(tmp_path: Path, bundle_cache: Path) -> None:
    from tests.export.published import publish_snapshot
    from tests.history.nights import START

    publish_snapshot(tmp_path, START, [(1, "Rex", 1, "sold")])
    CliRunner().invoke(cli, ["history", str(tmp_path)])

    result = write_report(tmp_path, cache_dir=bundle_cache)

    assert result.nights == 1
    assert f"1 night, {START} to {START}." in result.path.read_text(encoding="utf-8")
