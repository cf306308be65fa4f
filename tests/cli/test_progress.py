"""The export's progress display: a live table on a terminal, one line per listing elsewhere."""

from __future__ import annotations

import io
import threading

import pytest

from petsync.cli.progress import ProgressDisplay, format_listing_line, progress_display
from petsync.export.fetch import ListingResult


def result(label: str, *, complete: bool = True) -> ListingResult:
    return ListingResult(
        label=label,
        style="link",
        pages=3,
        requests=4,
        retries=1,
        pets=250,
        invalid=0,
        complete=complete,
        incomplete_reason=None if complete else "no proof of the end",
        seconds=0.5,
    )


def test_progress_off_a_terminal_writes_one_line_per_listing() -> None:
    out = io.StringIO()
    display = ProgressDisplay(out, live=False, clock=lambda: 0.0)

    display.listing_started("sold")
    display.page_done("sold", 1, 100)
    display.listing_done(result("sold"))
    display.listing_done(result("all", complete=False))
    display.close()

    assert out.getvalue().splitlines() == [
        "export listing=sold style=link pages=3 pets=250 invalid=0 retries=1 seconds=0.50 "
        "rate=500/s complete",
        "export listing=all style=link pages=3 pets=250 invalid=0 retries=1 seconds=0.50 "
        "rate=500/s INCOMPLETE (no proof of the end)",
    ]


def test_progress_on_a_terminal_redraws_a_table_in_place() -> None:
    out = io.StringIO()
    now = [0.0]
    display = ProgressDisplay(out, live=True, clock=lambda: now[0])

    display.listing_started("sold")
    now[0] = 2.0
    display.page_done("sold", 2, 200)
    display.page_done("sold", 3, 300)  # within the redraw interval: not drawn

    frames = out.getvalue().split("\x1b[1F")
    assert len(frames) == 2
    assert (
        frames[1] == "\x1b[2K  sold             2 pages        200 pets       100 pets/s  paging\n"
    )


def test_format_listing_line_without_elapsed_time() -> None:
    line = format_listing_line(ListingResult("x", "none", 0, 1, 0, 0, 0, True, None, 0.0))

    assert line.endswith("seconds=0.00 rate=0/s complete")


def test_progress_rate_of_a_finished_listing_stays_frozen() -> None:
    out = io.StringIO()
    now = [0.0]
    display = ProgressDisplay(out, live=True, clock=lambda: now[0])
    display.listing_started("sold")
    now[0] = 1.0
    display.listing_done(result("sold"))  # 250 pets in 1 s

    now[0] = 10.0
    display.close()

    last = out.getvalue().split("\x1b[1F")[-1]
    assert last == "\x1b[2K  sold             3 pages        250 pets       250 pets/s  complete\n"


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(
    ("stream", "json_logs", "term", "shown"),
    [
        (io.StringIO(), False, "xterm", "export listing=sold "),
        (io.StringIO(), True, "xterm", ""),  # stderr carries JSON lines only
        (Terminal(), True, "xterm", "\x1b[2K  sold "),  # a person watches: the table stays
        (Terminal(), False, "dumb", "export listing=sold "),  # cannot redraw: plain lines
        (Terminal(), True, "dumb", ""),
    ],
    ids=[
        "pipe-text-logs",
        "pipe-json-logs",
        "terminal-json-logs",
        "dumb-terminal-text-logs",
        "dumb-terminal-json-logs",
    ],
)
def test_progress_display_fits_the_stream_and_the_log_format(
    stream: io.StringIO, json_logs: bool, term: str, shown: str
) -> None:
    with progress_display(stream, json_logs=json_logs, environ={"TERM": term}) as display:
        display.listing_done(result("sold"))
    assert stream.getvalue().startswith(shown)
    assert bool(stream.getvalue()) == bool(shown)


def test_a_page_never_waits_for_a_redraw_under_way() -> None:
    """Every listing's thread reports every page: one that finds a redraw under way on
    another thread records its count and goes on (the next redraw shows it)."""
    out = io.StringIO()
    now = [0.0]
    display = ProgressDisplay(out, live=True, clock=lambda: now[0])
    display.listing_started("sold")
    now[0] = 1.0
    with display._lock:  # another listing's thread is drawing
        done = threading.Event()
        worker = threading.Thread(target=lambda: (display.page_done("sold", 4, 400), done.set()))
        worker.start()
        assert done.wait(timeout=30), "page_done waited for the redraw's lock"
        worker.join()
    drawn = out.getvalue()
    assert "400 pets" not in drawn  # not drawn twice at once ...
    now[0] = 2.0
    display.page_done("sold", 5, 500)
    assert out.getvalue().endswith(
        "  sold             5 pages        500 pets       250 pets/s  paging\n"
    )
