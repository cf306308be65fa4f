"""``write_report``: the history's report as one self-contained HTML file."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from petsync.core.errors import InputError
from petsync.core.files import atomic_write_text

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
    directory: Path | str, output: Path | None = None, *, cache_dir: Path | None = None
) -> ReportResult:
    """Write the report of the history under ``directory`` to ``output`` (``DIR/report.html``).

    The history must exist (``petsync history DIR`` builds it). The page opens offline
    in any browser: everything it shows is in the file. ``directory`` may be an object-store
    URI; the page is then written only where ``output`` (a local path) says.

    >>> write_report("/srv/petsync").path                   # doctest: +SKIP
    PosixPath('/srv/petsync/report.html')
    """
    from petsync.history.table import HistoryFiles
    from petsync.report.charts import charts
    from petsync.report.data import report_data
    from petsync.report.page import render_page, vega_bundle

    if output is None and not HistoryFiles.open(directory).is_local:
        raise InputError(
            f"cannot write the report beside the history at {directory}: the report is one "
            "local file; pass --output (-o) with a local path, for example -o report.html"
        )
    data = report_data(directory)
    made = charts(data)
    span = f"{data.first} to {data.last}" if data.nights else "no night yet"
    page = render_page(
        f"petsync history of {directory}",
        f"{data.nights} night{'' if data.nights == 1 else 's'}, {span}. Hover a mark for its "
        "numbers; each chart's table is under it.",
        made,
        bundle=vega_bundle(cache_dir),
    )
    target = Path(output) if output is not None else Path(directory) / REPORT_NAME
    try:
        atomic_write_text(target, page, what="report file")  # never through a planted link
    except OSError as exc:
        raise InputError(
            f"cannot write the report to {target}: {exc.strerror}; pass --output with a "
            "writable path"
        ) from exc
    size = len(page.encode("utf-8"))
    return ReportResult(target, size, data.nights, data.first, data.last, tuple(c.id for c in made))
