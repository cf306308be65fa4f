"""`petsync export` against an API that sends what the reference server never would: a lone
surrogate in a name, a Date header a year away, an archive holding a snapshot dated in the
future, a next link too long to follow. A small stdlib server on loopback answers listPets
(and createPet, for the import's tests) as each test chooses; the real command runs
against it."""

from __future__ import annotations

import contextlib
import datetime as dt
import email.utils
import json
import shutil
import threading
import time
import urllib.parse
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.interface import LINK_LENGTH_LIMIT
from petsync.formats.snapshots import list_snapshots, load_snapshot
from petsync.storage.layout import QUARANTINE_NAME, partition_path

TODAY = dt.datetime.now(dt.UTC).date()


class _Api(ThreadingHTTPServer):
    """listPets over ``records`` (one page: ``status`` and ``limit`` honoured), its Date
    header shifted by ``skew``."""

    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.records: list[dict[str, Any]] = []
        self.skew = 0.0  # seconds added to the real time in the Date header
        self.next_link: str | None = None  # a Link rel="next" sent with every page
        # createPet: the sent pet -> (status, headers, answer); None: 201 with the pet as sent
        self.answer_post: Callable[[dict[str, Any]], tuple[int, dict[str, str], Any]] | None = None
        self.posts: list[dict[str, Any]] = []

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/v1"


class _Handler(BaseHTTPRequestHandler):
    server: _Api

    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        url = urllib.parse.urlsplit(self.path)
        query = urllib.parse.parse_qs(url.query)
        status = query.get("status", [None])[0]
        limit = int(query.get("limit", ["20"])[0])
        chosen = [r for r in self.server.records if status is None or r.get("status") == status]
        chosen = chosen[:limit]  # one page: every test's catalogue fits in it
        body = json.dumps(chosen).encode()  # ASCII: a lone surrogate goes as \ud800
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        if self.server.next_link is not None:
            self.send_header("Link", f'<{self.server.next_link}>; rel="next"')
        self.end_headers()
        self.wfile.write(body)

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        sent = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        self.server.posts.append(sent)
        pet = {"id": len(self.server.posts), **sent}
        answer = self.server.answer_post
        status, headers, document = (201, {}, pet) if answer is None else answer(pet)
        body = json.dumps(document).encode()
        self.send_response(status)
        for name, value in {"Content-Type": "application/json", **headers}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def date_time_string(self, timestamp: float | None = None) -> str:
        return email.utils.formatdate(time.time() + self.server.skew, usegmt=True)

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass


@contextlib.contextmanager
def serving() -> Iterator[_Api]:
    """A :class:`_Api` answering in a thread until the block ends."""
    server = _Api()
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@pytest.fixture
def api() -> Iterator[_Api]:
    with serving() as server:
        yield server


def run(api: _Api, *args: str) -> Result:
    env = {"PETSYNC_API_KEY": "test-key", "PETSYNC_BASE_URL": api.base_url}
    return CliRunner().invoke(cli, list(args), env=env, catch_exceptions=False)


def pets(count: int, start: int = 1) -> list[dict[str, Any]]:
    return [
        {"id": i, "name": f"Pet{i}", "categoryId": 1, "status": "available"}
        for i in range(start, start + count)
    ]


def test_a_name_with_a_lone_surrogate_is_quarantined_and_the_rest_published(
    api: _Api, isolated: Path
) -> None:
    api.records = [*pets(2), {"id": 9, "name": "Bad\ud800", "categoryId": 1, "status": "sold"}]
    result = run(api, "export", "--out", "out")
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    frame = load_snapshot("out")
    assert sorted(frame["name"]) == ["Pet1", "Pet2"]
    lines = (partition_path(Path("out"), TODAY) / QUARANTINE_NAME).read_text("utf-8").splitlines()
    assert lines, "the pet is quarantined"
    entry = json.loads(lines[0])
    assert entry["record"] == {"id": 9, "name": "Bad\ud800", "categoryId": 1, "status": "sold"}
    assert entry["reason"] == (
        "Pet 'name' 'Bad\\ud800' holds a lone UTF-16 surrogate (a broken string on the "
        "server), which no UTF-8 file can hold"
    )
    assert "\\ud800" in lines[0]  # JSON's escape: the file is valid UTF-8


def test_a_clock_a_year_ahead_of_the_api_publishes_nothing_and_names_both_times(
    api: _Api, isolated: Path
) -> None:
    api.records = pets(3)
    api.skew = -395 * 86_400.0  # the API's Date says a year and a month ago
    result = run(api, "export", "--out", "out")
    assert result.exit_code == 1, result.output
    server_day = (dt.datetime.now(dt.UTC) - dt.timedelta(days=395)).date()
    assert "this machine's clock says " in result.stderr
    assert f"but the API's Date header says {server_day}" in result.stderr
    assert "more than --clock-tolerance 300 s, and the snapshot would be dated" in result.stderr
    assert "Nothing was published" in result.stderr
    assert list_snapshots("out") == []
    # Within a raised tolerance, it publishes.
    again = run(api, "export", "--out", "out", "--clock-tolerance", str(400 * 86_400))
    assert again.exit_code == 0, again.output


def test_a_clock_a_few_seconds_off_is_within_the_tolerance(api: _Api, isolated: Path) -> None:
    api.records = pets(3)
    api.skew = 20.0
    result = run(api, "export", "--out", "out")
    assert result.exit_code == 0, result.output


def _move(day: dt.date, to: dt.date) -> None:
    shutil.move(partition_path(Path("out"), day), partition_path(Path("out"), to))


def test_a_snapshot_dated_in_the_future_is_named_and_neither_baseline_latest_nor_pruned_over(
    api: _Api, isolated: Path
) -> None:
    future, yesterday = TODAY + dt.timedelta(days=400), TODAY - dt.timedelta(days=1)
    api.records = pets(10)
    assert run(api, "export", "--out", "out").exit_code == 0
    _move(TODAY, future)  # left by a night whose clock ran ahead: 10 pets
    api.records = pets(3)
    assert run(api, "export", "--out", "out").exit_code == 0
    _move(TODAY, yesterday)  # yesterday's: 3 pets

    result = run(api, "export", "--out", "out", "--keep", "1")

    # Compared with yesterday (3 pets), not the future night (10): no drop.
    assert result.exit_code == 0, result.output
    assert (
        f"warning: snapshots dated after tonight's ({TODAY}) are in the archive: {future}."
    ) in result.stdout
    # Tonight's stays, yesterday's is pruned, the future one is left for a person.
    assert [s.date for s in list_snapshots("out")] == [TODAY, future]
    manifest = json.loads((partition_path(Path("out"), TODAY) / "_manifest.json").read_text())
    assert manifest["drop_check"]["previous_snapshot_date"] == yesterday.isoformat()
    assert load_snapshot("out").attrs["snapshot_date"] == TODAY.isoformat()


def test_a_next_link_over_the_length_limit_fails_the_listing_with_a_clear_error(
    api: _Api, isolated: Path
) -> None:
    api.records = pets(3)
    api.next_link = "/v1/pets?after=" + "x" * LINK_LENGTH_LIMIT
    result = run(api, "export", "--out", "out", "--pagination", "link")
    assert result.exit_code == 1, result.output
    assert (
        f"sent a next link of {LINK_LENGTH_LIMIT + 15} characters, more than the "
        f"{LINK_LENGTH_LIMIT} petsync follows ('/v1/pets?after=xxx"
    ) in result.stderr
    assert list_snapshots("out") == []
