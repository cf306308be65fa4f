"""``write_report``: the history's report as one self-contained HTML file."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from petsync._version import __version__
from petsync.core.errors import InputError
from petsync.core.files import atomic_write_text
from petsync.core.settings_table import OUTPUT
from petsync.report.page import render_page, vega_bundle

if TYPE_CHECKING:
    from petsync.report.data import ReportData

REPORT_NAME = "report.html"


@dataclass(frozen=True)
class ReportResult:
    """The file written, its size, the nights it covers and its charts' ids."""

    path: Path
    bytes: int
    nights: int
    first: str | None
    last: str | None
    charts: tuple[str, ...]


def write_report(
    directory: Path | str,
    output: Path | None = None,
    *,
    cache_dir: Path | None = None,
    now: Callable[[], dt.datetime] | None = None,
) -> ReportResult:
    """Write the report of the history under ``directory`` to ``output`` (``DIR/report.html``).

    The history must exist (``petsync history DIR`` builds it). The page opens offline
    in any browser: everything it shows is in the file. ``directory`` may be an object-store
    URI; the page is then written only where ``output`` (a local path) says. The file gets
    the permissions a new file gets (``0o666`` less the umask: 0644 under umask 022), as a
    page meant to be served should; ``now`` (UTC) is the time the page says it was made.

    >>> write_report("/srv/petsync").path                   # doctest: +SKIP
    PosixPath('/srv/petsync/report.html')
    """
    from petsync.history.table import HistoryFiles
    from petsync.report.charts import charts
    from petsync.report.data import report_data

    if output is None and not HistoryFiles.open(directory).is_local:
        raise InputError(
            f"cannot write the report beside the history at {directory}: the report is one "
            "local file; pass "
            + OUTPUT
            + " with a local path, for example "
            + OUTPUT.given("report.html")
        )
    data = report_data(directory)
    made = charts(data)
    page = render_page(
        f"petsync history of {directory}",
        about(directory, data, (now or _utc_now)()),
        data,
        made,
        directory=str(directory),
        bundle=vega_bundle(cache_dir) if made else "",
    )
    target = Path(output) if output is not None else Path(directory) / REPORT_NAME
    try:
        atomic_write_text(target, page, what="report file")  # never through a planted link
    except OSError as exc:
        raise InputError(
            f"cannot write the report to {target}: {exc.strerror}; pass "
            + OUTPUT
            + " with a writable path"
        ) from exc
    size = len(page.encode("utf-8"))
    return ReportResult(
        target, size, len(data.nights), data.first, data.last, tuple(c.id for c in made)
    )


def about(directory: Path | str, data: ReportData, made: dt.datetime) -> list[tuple[str, str]]:
    """What the page says of itself: when, from which folder and history, by which petsync."""
    from petsync.history.table import HistoryFiles

    files = HistoryFiles.open(directory)
    folder = str(Path(directory).resolve()) if files.is_local else str(directory)
    last = f", last night {data.last}" if data.last else ""
    count = len(data.nights)
    return [
        ("generated", made.astimezone(dt.UTC).strftime("%Y-%m-%d %H:%M:%S UTC")),
        ("folder", folder),
        ("history", f"{files.shown()} ({count} night{'' if count == 1 else 's'}{last})"),
        ("petsync", __version__),
    ]


def _utc_now() -> dt.datetime:
    return dt.datetime.now(dt.UTC)
