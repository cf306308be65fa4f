"""The clock check against the reference server's Date header: a wrong local clock stops the
export at the first answer, not after the catalogue. The local clock is injected and the
server serves a chosen Date (``RunningServer.serve_date``): nothing waits."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.core.errors import PetsyncError
from petsync.export.config import ExportConfig
from petsync.export.fetch import ListingResult
from petsync.export.run import run_export
from petsync.formats.snapshots import list_snapshots
from petsync.server.runner import RunningServer
from petsync.storage.layout import STAGING_DIR
from tests.conftest import StartServer

SERVER_TIME = dt.datetime(2026, 11, 27, 9, 0, tzinfo=dt.UTC)
PETS = 200
LIMIT = 10  # 20 pages a listing, 4 listings: 80 pages when nothing stops the run


class _Pages:
    """Counts the pages the export took in; ``then`` runs after the n-th (to move a clock)."""

    def __init__(self, then: tuple[int, object] | None = None) -> None:
        self.pages = 0
        self._then = then

    def listing_started(self, label: str) -> None:
        pass

    def page_done(self, label: str, pages: int, pets: int) -> None:
        self.pages += 1
        if self._then is not None and self.pages == self._then[0]:
            action = self._then[1]
            assert callable(action)
            action()

    def listing_done(self, result: ListingResult) -> None:
        pass


@pytest.fixture
def srv(petstore_server: StartServer) -> RunningServer:
    server = petstore_server(seed_pets=PETS)
    server.serve_date(SERVER_TIME)
    return server


def _config(srv: RunningServer, out: Path) -> ExportConfig:
    return ExportConfig(
        client=ClientConfig(srv.base_url, srv.api_key), out_dir=out, page_limit=LIMIT
    )


def _at(moment: dt.datetime) -> object:
    return lambda: moment


def test_a_clock_a_day_ahead_stops_at_the_first_answer_naming_both_times(
    srv: RunningServer, tmp_path: Path
) -> None:
    pages = _Pages()
    with pytest.raises(PetsyncError) as caught:
        run_export(
            _config(srv, tmp_path),
            now=lambda: SERVER_TIME + dt.timedelta(days=1),
            progress=pages,
        )
    message = str(caught.value)
    assert caught.value.exit_code == 1
    assert "this machine's clock says 2026-11-28 09:00:00 UTC" in message
    assert "the API's Date header says 2026-11-27 09:00:00 UTC" in message
    assert "86400 s (1 day) ahead of the server's, more than clock_tolerance=300 s" in message
    assert "Nothing was published" in message
    assert pages.pages == 0  # refused on the first answer, before any page was taken in
    assert list_snapshots(tmp_path) == []
    assert not any((tmp_path / STAGING_DIR).iterdir())


def test_a_clock_within_the_tolerance_exports_every_page(
    srv: RunningServer, tmp_path: Path
) -> None:
    pages = _Pages()
    report = run_export(
        _config(srv, tmp_path), now=lambda: SERVER_TIME - dt.timedelta(seconds=299), progress=pages
    )
    assert report.pets == PETS
    assert pages.pages >= 4 * PETS // LIMIT // 2  # the whole catalogue was paged
    assert [s.date for s in list_snapshots(tmp_path)] == [dt.date(2026, 11, 27)]


def test_a_server_clock_that_jumps_mid_run_stops_the_run_at_the_next_answer(
    srv: RunningServer, tmp_path: Path
) -> None:
    # Later answers are checked too: after the 5th page the API's Date jumps two days ahead.
    jump = SERVER_TIME + dt.timedelta(days=2)
    pages = _Pages(then=(5, lambda: srv.serve_date(jump)))
    with pytest.raises(PetsyncError, match="the API's Date header says 2026-11-29 09:00:00"):
        run_export(_config(srv, tmp_path), now=lambda: SERVER_TIME, progress=pages)
    assert 5 <= pages.pages < 20  # stopped within a page per listing, far from the 80
    assert list_snapshots(tmp_path) == []


def test_a_callers_client_without_the_observer_is_checked_page_by_page(
    srv: RunningServer, tmp_path: Path
) -> None:
    config = _config(srv, tmp_path)
    pages = _Pages()
    with PetstoreClient(config.client) as client:
        with pytest.raises(PetsyncError, match="behind"):
            run_export(
                config,
                client=client,
                now=lambda: SERVER_TIME - dt.timedelta(hours=2),
                progress=pages,
            )
        assert client.requests <= 8  # a first answer or two a listing, of the 80 pages
    assert pages.pages == 0
    assert list_snapshots(tmp_path) == []
