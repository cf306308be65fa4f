"""Pages read ahead: offset and page listings ask for several pages at once, and publish the
same pages in the same order as one page at a time; link and cursor never read ahead.

The fake servers sit at the client's transport seam (httpx.MockTransport), called from the
listing's threads. Where a test needs requests to overlap, a gate holds each answer until
enough requests are in flight: it waits on an event (bounded), never on the clock.
"""

from __future__ import annotations

import random
import threading
from collections.abc import Callable
from typing import Any

import httpx
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.client.listing import Listing
from petsync.client.read_ahead import RequestSlots
from petsync.client.records import decode_page
from petsync.core.apikey import ApiKey
from petsync.core.errors import PaginationError
from tests.conftest import FakeClock

BASE = "https://petstore.test/v1"
GATE_SECONDS = 10.0  # a bound on a wait that read-ahead ends at once; reached only if broken


def _pet(i: int) -> dict[str, object]:
    return {"id": i, "name": f"pet {i}", "categoryId": 1, "status": "available"}


class Server:
    """A fake offset/page/link server that counts requests in flight.

    ``overlap``: hold every answer after the first ``free`` ones until that many requests
    are in flight at once (then let everything through). ``past_end``: what a request
    beyond the catalogue gets (an empty page by default; a server may send junk or fail).
    ``first_size``: the first page's size, when the server starts smaller than it goes on.
    """

    def __init__(
        self,
        count: int,
        style: str,
        *,
        overlap: int = 0,
        free: int = 1,
        past_end: Callable[[int], httpx.Response] | None = None,
        first_size: int | None = None,
        fail_once: str | None = None,
    ) -> None:
        self.ids = list(range(1, count + 1))
        self.style = style
        self.overlap = overlap
        self.free = free
        self.past_end = past_end
        self.first_size = first_size
        self.fail_once = fail_once
        self.urls: list[str] = []
        self.in_flight = 0
        self.most_in_flight = 0
        self._lock = threading.Lock()
        self._open = threading.Event()
        if not overlap:
            self._open.set()

    def __call__(self, request: httpx.Request) -> httpx.Response:
        with self._lock:
            self.urls.append(str(request.url))
            free = len(self.urls) <= self.free
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
            if self.in_flight >= self.overlap:
                self._open.set()
        try:
            if not free:
                assert self._open.wait(GATE_SECONDS), "requests never overlapped"
            return self._answer(request)
        finally:
            with self._lock:
                self.in_flight -= 1

    def _answer(self, request: httpx.Request) -> httpx.Response:
        q = request.url.params
        if self.fail_once is not None and self.fail_once in str(request.url):
            self.fail_once = None
            return httpx.Response(503, json={"code": "x", "message": "busy", "status": 503})
        size = int(q["limit"])
        headers: dict[str, str] = {}
        if self.style == "offset":
            start = int(q.get("offset", "0"))
            if start == 0 and self.first_size is not None:
                size = self.first_size
        elif self.style == "page":
            start = (int(q.get("page", "1")) - 1) * size
        else:  # link
            start = int(q.get("after", "0"))
        if start >= len(self.ids) and start > 0 and self.past_end is not None:
            return self.past_end(start)
        rows = self.ids[start : start + size]
        if self.style == "link" and rows and rows[-1] != self.ids[-1]:
            headers["Link"] = f'</v1/pets?limit={size}&after={rows[-1]}>; rel="next"'
        return httpx.Response(200, json=[_pet(i) for i in rows], headers=headers)


def _client(server: Server, fake_clock: FakeClock, style: str, **config: object) -> PetstoreClient:
    cfg = ClientConfig(base_url=BASE, api_key=ApiKey("k"), pagination=style, **config)  # type: ignore[arg-type]
    return PetstoreClient(
        cfg,
        transport=httpx.MockTransport(server),
        sleep=fake_clock.sleep,
        clock=fake_clock,
        rng=random.Random(0),
    )


def _ids(listing: Listing) -> list[int]:
    return [pet.id for page in listing for pet in page.pets]


@pytest.mark.parametrize("style", ["offset", "page", "auto"])
def test_offset_and_page_listings_ask_for_pages_at_once_and_keep_their_order(
    style: str, fake_clock: FakeClock
) -> None:
    # auto probes offset=100 alone before it knows the style: the second request is free too
    free = 2 if style == "auto" else 1
    server = Server(1_000, "page" if style == "page" else "offset", overlap=3, free=free)
    with RequestSlots(4) as slots:
        listing = _client(server, fake_clock, style).list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 1_001))
    assert 3 <= server.most_in_flight <= 4  # the slots bound them
    assert (listing.complete, listing.pages, listing.retries) == (True, 11, 0)  # one empty
    assert listing.requests == len(server.urls)  # pages read ahead and dropped count too


@pytest.mark.parametrize("style", ["offset", "page"])
def test_pages_past_the_proven_end_are_never_published(style: str, fake_clock: FakeClock) -> None:
    def junk(start: int) -> httpx.Response:  # a server sending records past its end
        return httpx.Response(200, json=[_pet(10_000 + start + i) for i in range(100)])

    server = Server(250, style, past_end=junk)
    with RequestSlots(8) as slots:
        listing = _client(server, fake_clock, style).list_pets(limit=100, read_ahead=slots)
        pages = [[pet.id for pet in page.pets] for page in listing]
    assert pages == [list(range(1, 101)), list(range(101, 201)), list(range(201, 251))]
    assert (listing.complete, listing.pages) == (True, 3)
    assert len(server.urls) > 3  # pages were asked for past the end, and dropped


@pytest.mark.parametrize("style", ["offset", "page"])
def test_a_failure_past_the_end_is_dropped_with_its_page(style: str, fake_clock: FakeClock) -> None:
    def refused(start: int) -> httpx.Response:
        return httpx.Response(400, json={"code": "bad", "message": "no such page", "status": 400})

    server = Server(250, style, past_end=refused)
    with RequestSlots(8) as slots:
        listing = _client(server, fake_clock, style).list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 251))
    assert listing.complete is True


def test_a_guess_that_does_not_hold_costs_requests_not_pages(fake_clock: FakeClock) -> None:
    # The first page is shorter than the others: the offsets guessed from it are wrong.
    server = Server(1_000, "offset", first_size=40)
    with RequestSlots(4) as slots:
        listing = _client(server, fake_clock, "offset").list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 1_001))
    assert listing.complete is True


def test_one_slot_asks_for_one_page_at_a_time(fake_clock: FakeClock) -> None:
    server = Server(1_000, "offset")
    with RequestSlots(1) as slots:
        listing = _client(server, fake_clock, "offset").list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 1_001))
    assert server.most_in_flight == 1


@pytest.mark.parametrize("style", ["link", "auto"])
def test_link_listings_ask_for_one_page_at_a_time_as_before(
    style: str, fake_clock: FakeClock
) -> None:
    without = Server(1_000, "link")
    assert _ids(_client(without, fake_clock, style).list_pets(limit=100)) == list(range(1, 1_001))
    server = Server(1_000, "link")
    with RequestSlots(8) as slots:
        listing = _client(server, fake_clock, style).list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 1_001))
    assert server.urls == without.urls and server.most_in_flight == 1


def test_after_a_retry_nothing_more_is_read_ahead(fake_clock: FakeClock) -> None:
    server = Server(2_000, "offset", fail_once="offset=300")
    with RequestSlots(4) as slots:
        listing = _client(server, fake_clock, "offset").list_pets(limit=100, read_ahead=slots)
        pages = iter(listing)
        ids = [pet.id for page in pages for pet in page.pets]
        assert slots.throttled
    assert ids == list(range(1, 2_001))
    assert listing.retries == 1 and listing.complete is True
    offsets = [u for u in server.urls if "offset=" in u]
    # Once throttled, each page is asked for once, after the one before: no page past the end.
    assert offsets[-1].endswith("offset=2000") and offsets.count(offsets[-1]) == 1


def test_the_page_cap_bounds_pages_read_ahead(fake_clock: FakeClock) -> None:
    server = Server(10_000, "offset")
    with RequestSlots(8) as slots:
        listing = _client(server, fake_clock, "offset", max_pages=3).list_pets(
            limit=100, read_ahead=slots
        )
        with pytest.raises(PaginationError, match="page cap of 3 pages"):
            _ids(listing)
    assert len(server.urls) == 3


def test_a_listing_closed_early_waits_for_its_pages_in_flight(fake_clock: FakeClock) -> None:
    server = Server(10_000, "offset")
    with RequestSlots(4) as slots:
        pages = iter(_client(server, fake_clock, "offset").list_pets(limit=100, read_ahead=slots))
        next(pages)
        pages.close()  # as the export does on a stop request
        assert server.in_flight == 0


def test_large_pages_shrink_the_window_to_its_bytes(
    fake_clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.client import read_ahead
    from petsync.client.pagination import PageRequest

    page = (
        b"["
        + b",".join(
            b'{"id":%d,"name":"%s","categoryId":1}' % (i, b"x" * 1000) for i in range(1, 101)
        )
        + b"]"
    )
    release = threading.Event()
    asked: list[str] = []

    class Reader:
        def fetch(self, request: PageRequest, tally: object, abandoned: object = None) -> Any:
            asked.append(request.text)
            if len(asked) > 1:
                assert release.wait(GATE_SECONDS)
            return httpx.Headers(), decode_page(page, 200, "URL")

    class Tally:
        requests = retries = 0

    monkeypatch.setattr(read_ahead, "WINDOW_BYTES", 3 * len(page))
    with RequestSlots(8) as slots:
        ahead = read_ahead.ReadAhead(slots, Reader(), Tally())
        ahead.fetch(PageRequest("u0", "first"))
        ahead.plan([PageRequest(f"u{i}", "next") for i in range(1, 9)])
        assert len(ahead._pending) == 3  # 3 pages of its size fit, not the 8 slots
        release.set()
        ahead.close()


def test_a_page_past_the_end_that_keeps_failing_is_dropped_and_throttles_the_run(
    fake_clock: FakeClock,
) -> None:
    retried = threading.Event()
    tries: list[str] = []

    def busy(start: int) -> httpx.Response:
        tries.append(str(start))
        if tries.count("300") > 1:  # offset 300 asked for again: it was retried
            retried.set()
        return httpx.Response(503, json={"code": "busy", "message": "later", "status": 503})

    server = Server(250, "offset", past_end=busy)
    answer = server._answer

    def last_page_after_a_retry(request: httpx.Request) -> httpx.Response:
        if request.url.params.get("offset") == "200":  # the short page that proves the end
            assert retried.wait(GATE_SECONDS), "the page past the end was never retried"
            throttled_before_the_end.append(slots.throttled)
        return answer(request)

    throttled_before_the_end: list[bool] = []
    server._answer = last_page_after_a_retry  # type: ignore[method-assign]
    with RequestSlots(8) as slots:
        listing = _client(server, fake_clock, "offset").list_pets(limit=100, read_ahead=slots)
        assert _ids(listing) == list(range(1, 251))
    # Its first retry stopped the reading ahead at once, before the page was even dropped.
    assert throttled_before_the_end == [True]
    assert listing.complete is True and listing.pages == 3
    assert server.in_flight == 0
