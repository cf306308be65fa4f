"""Every pagination strategy through the one paging loop, against fake paging servers."""

from __future__ import annotations

import random
from collections.abc import Callable

import httpx
import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.client.listing import Listing
from petsync.client.pagination import next_link
from petsync.core.apikey import ApiKey
from petsync.core.errors import PaginationError
from petsync.core.models import PetStatus
from tests.conftest import FakeClock

BASE = "https://petstore.test/v1"
PETS = f"{BASE}/pets"
Handler = Callable[[httpx.Request], httpx.Response]


def _pet(i: int) -> dict[str, object]:
    return {"id": i, "name": f"pet {i}", "categoryId": 1, "status": "available"}


class Catalogue:
    """A fake listPets paging one way, recording every URL asked for."""

    def __init__(
        self, count: int, style: str, *, cap: int | None = None, fixed: int | None = None
    ) -> None:
        self.ids = list(range(1, count + 1))
        self.style = style
        self.cap = cap
        self.fixed = fixed  # a page size sent whatever `limit` asks for
        self.urls: list[str] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.urls.append(str(request.url))
        q = request.url.params
        size = self.fixed or int(q.get("limit", "20"))
        if self.cap:
            size = min(size, self.cap)
        headers: dict[str, str] = {}
        if self.style in ("link", "cursor"):
            after = int(q.get("after" if self.style == "link" else "cursor", "0"))
            rows = [i for i in self.ids if i > after][:size]
            if rows and rows[-1] != self.ids[-1]:
                if self.style == "link":
                    headers["Link"] = f'</v1/pets?limit={q["limit"]}&after={rows[-1]}>; rel="next"'
                else:
                    headers["X-Next-Cursor"] = str(rows[-1])
        elif self.style == "offset":
            start = int(q.get("offset", "0"))
            rows = self.ids[start : start + size]
        elif self.style == "page":
            start = (int(q.get("page", "1")) - 1) * size
            rows = self.ids[start : start + size]
        else:  # "none": ignores everything but limit
            rows = self.ids[:size]
        return httpx.Response(200, json=[_pet(i) for i in rows], headers=headers)


def _client(handler: Handler, fake_clock: FakeClock, **config: object) -> PetstoreClient:
    cfg = ClientConfig(base_url=BASE, api_key=ApiKey("k"), **config)  # type: ignore[arg-type]
    return PetstoreClient(
        cfg,
        transport=httpx.MockTransport(handler),
        sleep=fake_clock.sleep,
        clock=fake_clock,
        rng=random.Random(0),
    )


def _ids(listing: Listing) -> list[int]:
    return [pet.id for page in listing for pet in page.pets]


STYLES = ["link", "cursor", "offset", "page"]


@pytest.mark.parametrize("style", STYLES)
def test_each_style_lists_every_pet_once_and_proves_the_end(
    style: str, fake_clock: FakeClock
) -> None:
    server = Catalogue(250, style)
    listing = _client(server, fake_clock, pagination=style).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 251))
    assert (listing.style, listing.complete, listing.incomplete_reason) == (style, True, None)
    assert listing.pages == 3


@pytest.mark.parametrize(
    ("style", "requests"),
    [("link", 3), ("cursor", 3), ("offset", 3), ("page", 4)],
    ids=STYLES,
)
def test_auto_detects_the_style_and_uses_the_probe_page(
    style: str, requests: int, fake_clock: FakeClock
) -> None:
    server = Catalogue(250, style)
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 251))
    assert (listing.style, listing.complete) == (style, True)
    # offset: first page, the accepted probe (used, not re-fetched), the short last page;
    # page: the offset probe is rejected (the server ignores offset), then page=2, page=3.
    assert listing.requests == requests == len(server.urls)


def test_auto_probes_offset_then_page_with_these_urls(fake_clock: FakeClock) -> None:
    server = Catalogue(250, "page")
    _ids(_client(server, fake_clock).list_pets(limit=100))
    assert server.urls == [
        f"{PETS}?limit=100",
        f"{PETS}?limit=100&offset=100",
        f"{PETS}?limit=100&page=2",
        f"{PETS}?limit=100&page=3",
    ]


def test_auto_refuses_a_server_that_ignores_offset_and_page(fake_clock: FakeClock) -> None:
    listing = _client(Catalogue(250, "none"), fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 101))  # the first page only; probes thrown away
    assert listing.complete is False
    assert listing.style == "unknown"
    assert listing.incomplete_reason == (
        f"the server sent a full first page (100 records) at {PETS}?limit=100 with no Link "
        'rel="next" or X-Next-Cursor header, and answered the offset and page probes with '
        "records already on the first page; petsync cannot prove it has the whole catalogue. "
        "Ask the API owner how listPets pages and set that pagination style "
        "(link, cursor, offset or page)"
    )


def test_auto_accepts_a_short_first_page_from_a_server_that_does_not_page(
    fake_clock: FakeClock,
) -> None:
    server = Catalogue(30, "none")
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 31))
    assert (listing.style, listing.complete, listing.pages) == ("none", True, 1)
    assert server.urls[1:] == [
        f"{PETS}?limit=100&offset=30",
        f"{PETS}?limit=100&page=2",
        f"{PETS}?limit=29",  # the server honours limit, so 30 < 100 is the end
    ]


def test_auto_flags_a_short_page_from_a_server_that_ignores_limit(fake_clock: FakeClock) -> None:
    # It always sends its default 20 and pages no way: 20 of 500 must not pass as complete.
    server = Catalogue(500, "none", fixed=20)
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 21))
    assert (listing.style, listing.complete) == ("unknown", False)
    assert server.urls[-1] == f"{PETS}?limit=19"
    assert listing.incomplete_reason == (
        f"the server sent 20 records at {PETS}?limit=100 when asked for up to 100, offers no "
        "way to the next page, and answered limit=19 with 20 records: it does not honour "
        "`limit`, so its short first page does not prove the end of the catalogue. Ask the "
        "API owner how listPets pages and set that pagination style"
    )


def test_auto_takes_a_single_record_page_as_the_end(fake_clock: FakeClock) -> None:
    server = Catalogue(1, "none")
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert (_ids(listing), listing.style, listing.complete) == ([1], "none", True)
    assert len(server.urls) == 3  # first page, offset and page probes; no limit=0 probe


def test_auto_on_an_empty_catalogue_is_complete_after_one_request(fake_clock: FakeClock) -> None:
    server = Catalogue(0, "offset")
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert [len(page.pets) for page in listing] == [0]
    assert (listing.style, listing.complete, listing.requests) == ("none", True, 1)


@pytest.mark.parametrize("pagination", ["offset", "auto"])
def test_a_server_capping_pages_below_limit_loses_no_rows(
    pagination: str, fake_clock: FakeClock
) -> None:
    server = Catalogue(250, "offset", cap=40)
    listing = _client(server, fake_clock, pagination=pagination).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 251))
    assert (listing.style, listing.complete) == ("offset", True)
    # offsets step by the 40 rows actually received, never by the limit of 100
    assert server.urls[1].endswith("offset=40") and server.urls[2].endswith("offset=80")


def test_auto_finds_a_page_server_that_caps_its_first_page(fake_clock: FakeClock) -> None:
    server = Catalogue(250, "page", cap=40)
    listing = _client(server, fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 251))
    assert (listing.style, listing.complete) == ("page", True)


def test_a_capped_link_server_is_followed_past_short_pages(fake_clock: FakeClock) -> None:
    listing = _client(Catalogue(250, "link", cap=40), fake_clock).list_pets(limit=100)
    assert _ids(listing) == list(range(1, 251))
    assert listing.complete is True


def test_explicit_offset_on_a_server_ignoring_offset_is_a_loop(fake_clock: FakeClock) -> None:
    client = _client(Catalogue(250, "none"), fake_clock, pagination="offset")
    listing = client.list_pets(limit=100)
    with pytest.raises(PaginationError) as caught:
        _ids(listing)
    assert listing.complete is None  # never claimed complete
    assert str(caught.value) == (
        f"the page at {PETS}?limit=100&offset=100 (reached by offset 100) holds only records "
        "already listed: the server is sending the same records again (a loop). Report it to "
        "the API owner, or try another pagination style"
    )


@pytest.mark.parametrize(
    ("style", "count"), [("link", 100), ("none", 100), ("cursor", 100)], ids=str
)
def test_a_full_page_with_no_way_onwards_is_flagged_incomplete(
    style: str, count: int, fake_clock: FakeClock
) -> None:
    server = Catalogue(250, "none")  # never sends a link or cursor
    listing = _client(server, fake_clock, pagination=style).list_pets(limit=100)
    assert len(_ids(listing)) == count
    assert listing.complete is False
    assert listing.incomplete_reason is not None
    assert listing.incomplete_reason.startswith(
        f"the server sent a full page (100 records) at {PETS}?limit=100 and "
    )


def test_the_page_cap_stops_paging(fake_clock: FakeClock) -> None:
    client = _client(Catalogue(250, "link"), fake_clock, max_pages=2)
    with pytest.raises(PaginationError) as caught:
        _ids(client.list_pets(limit=100))
    assert str(caught.value) == (
        f"stopped paging before {PETS}?limit=100&after=200: the page cap of 2 pages was "
        "reached; if the catalogue really is that large, raise max_pages"
    )


def _stuck(headers: dict[str, str]) -> Handler:
    def handler(request: httpx.Request) -> httpx.Response:
        paged = "after" in request.url.params or "cursor" in request.url.params
        start = 10 if paged else 0  # a second, different page, then the same one again
        return httpx.Response(200, json=[_pet(start + i) for i in range(1, 3)], headers=headers)

    return handler


def test_a_repeated_next_link_is_a_loop(fake_clock: FakeClock) -> None:
    client = _client(_stuck({"Link": '<pets?after=10>; rel="next"'}), fake_clock)
    with pytest.raises(PaginationError) as caught:
        _ids(client.list_pets(limit=2))
    assert str(caught.value).startswith(
        f"the server sent the next link 'pets?after=10' again ({PETS}?after=10), a page "
        "already fetched in this listing: paging would loop forever."
    )


def test_a_repeated_cursor_is_a_loop(fake_clock: FakeClock) -> None:
    client = _client(_stuck({"X-Next-Cursor": "abc0"}), fake_clock, pagination="cursor")
    with pytest.raises(PaginationError, match=r"the server sent the cursor 'abc0' again"):
        _ids(client.list_pets(limit=2))


def test_a_cross_origin_next_link_is_refused(fake_clock: FakeClock) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        link = '<https://evil.example:8443/v1/pets?after=2>; rel="next"'
        return httpx.Response(200, json=[_pet(1), _pet(2)], headers={"Link": link})

    with pytest.raises(PaginationError) as caught:
        _ids(_client(handler, fake_clock).list_pets(limit=2))
    assert str(caught.value).startswith(
        f"the server at {PETS}?limit=2 sent a next link to another origin "
        "(https://evil.example:8443); petsync refuses to follow it"
    )
    assert asked == [f"{PETS}?limit=2"]


@pytest.mark.parametrize(
    "link",
    ["http://petstore.test/v1/pets?after=2", "https://petstore.test:444/v1/pets?after=2"],
    ids=["scheme", "port"],
)
def test_another_scheme_or_port_is_another_origin(link: str, fake_clock: FakeClock) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=[_pet(1)], headers={"Link": f'<{link}>; rel="next"'})

    with pytest.raises(PaginationError, match="another origin"):
        _ids(_client(handler, fake_clock).list_pets(limit=1))


@pytest.mark.parametrize(
    ("link", "expected"),
    [
        ("?after=5", "https://petstore.test/api/v1/pets?after=5"),
        ("../v1/pets?after=5", "https://petstore.test/api/v1/pets?after=5"),
        ("pets?after=5", "https://petstore.test/api/v1/pets?after=5"),
        ("/api/v1/pets?after=5", "https://petstore.test/api/v1/pets?after=5"),
        (
            "https://petstore.test:443/api/v1/pets?after=5",
            "https://petstore.test/api/v1/pets?after=5",
        ),
    ],
    ids=["query-only", "dot-dot", "relative-path", "absolute-path", "absolute-default-port"],
)
def test_relative_next_links_resolve_against_the_response_url(
    link: str, expected: str, fake_clock: FakeClock
) -> None:
    asked: list[str] = []

    def handler(request: httpx.Request) -> httpx.Response:
        asked.append(str(request.url))
        if "after" in request.url.params:
            return httpx.Response(200, json=[_pet(6)])
        return httpx.Response(200, json=[_pet(5)], headers={"Link": f'<{link}>; rel="next"'})

    cfg = ClientConfig(base_url="https://petstore.test/api/v1", api_key=ApiKey("k"))
    client = PetstoreClient(cfg, transport=httpx.MockTransport(handler), sleep=fake_clock.sleep)
    listing = client.list_pets(limit=1)
    assert _ids(listing) == [5, 6]
    assert asked == ["https://petstore.test/api/v1/pets?limit=1", expected]
    assert listing.complete is True


def test_status_filter_is_sent_on_every_page(fake_clock: FakeClock) -> None:
    server = Catalogue(5, "offset")
    listing = _client(server, fake_clock, pagination="offset").list_pets(PetStatus.SOLD, limit=2)
    _ids(listing)
    assert all("status=sold" in url for url in server.urls)
    assert listing.status is PetStatus.SOLD


def test_records_repeated_across_pages_are_dropped_and_counted(fake_clock: FakeClock) -> None:
    pages = {0: [1, 2, 3], 3: [3, 4, 5], 6: [6]}  # a pet inserted before offset 3 shifted 3

    def handler(request: httpx.Request) -> httpx.Response:
        rows = pages.get(int(request.url.params.get("offset", "0")), [])
        return httpx.Response(200, json=[_pet(i) for i in rows])

    listing = _client(handler, fake_clock, pagination="offset").list_pets(limit=3)
    assert _ids(listing) == [1, 2, 3, 4, 5, 6]
    assert (listing.duplicates, listing.complete) == (1, True)


def test_iterating_again_starts_a_new_sweep(fake_clock: FakeClock) -> None:
    server = Catalogue(3, "link")
    listing = _client(server, fake_clock).list_pets(limit=2)
    assert _ids(listing) == _ids(listing) == [1, 2, 3]
    assert listing.requests == 2


@pytest.mark.parametrize(
    ("header", "expected"),
    [
        ('<a>; rel="next"', "a"),
        ("<a>; rel=next", "a"),
        ('<p>; rel="prev", <n>; rel="next"', "n"),
        ('<n>; rel="next last"', "n"),
        ('<x,y>; rel="next"', "x,y"),
        ('<a>; title="next"; rel="last"', None),
        ('<a>; rel="prev"', None),
        ("", None),
    ],
    ids=["quoted", "bare", "second", "rel-list", "comma-in-url", "title", "prev", "empty"],
)
def test_next_link_parsing(header: str, expected: str | None) -> None:
    assert next_link(httpx.Headers({"Link": header})) == expected


@pytest.mark.parametrize(
    "list_url",
    [
        "https://petstore.test/v1/pets?limit=100",
        "http://127.0.0.1:8080/v1/pets?limit=100&status=sold",
        "http://[::1]:9/api%20v1/pets?limit=7&status=pending",
        "https://petstore.test/v918273645546372819/pets?limit=100",  # the marker: parsed
    ],
)
@pytest.mark.parametrize("style", ["offset", "page"])
def test_requests_ahead_are_the_urls_httpx_writes(list_url: str, style: str) -> None:
    from petsync.client.pagination import FetchedPage, PageRequest, make_strategy

    url = httpx.URL(list_url)
    strategy = make_strategy(style, url, 100)
    first = strategy.first()
    page = FetchedPage(first, httpx.Headers(), list(range(100)))
    step = strategy.next(page)
    ahead = strategy.ahead(3)  # type: ignore[attr-defined]
    start, step_size = (100, 100) if style == "offset" else (2, 1)
    expected = [str(url.copy_set_param(style, start + step_size * k)) for k in range(4)]
    assert step.next is not None
    assert [r.text for r in [step.next, *ahead]] == expected
    assert all(isinstance(r, PageRequest) and r.url == httpx.URL(r.text) for r in ahead)
