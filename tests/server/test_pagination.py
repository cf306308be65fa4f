"""The reference server's paging styles: each walks the catalogue exactly once."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx
import pytest

from petsync.core.models import Pet
from petsync.server.runner import RunningServer
from petsync.server.seed import seed_rows
from petsync.server.validation import encode_cursor
from tests.conftest import StartServer

MAX_PAGES = 500  # every walk below is bounded
_NEXT = re.compile(r'<([^>]*)>;\s*rel="next"')


def client_for(srv: RunningServer) -> httpx.Client:
    headers = {"Authorization": f"Bearer {srv.api_key.reveal()}"}
    return httpx.Client(base_url=srv.base_url, headers=headers, timeout=10)


def pages(
    http: httpx.Client, style: str, limit: int, status: str | None = None
) -> Iterator[list[dict[str, object]]]:
    """Walk listPets the way a client of ``style`` would, yielding each page's pets."""
    params: dict[str, str | int] | None = {"limit": limit}
    if status:
        params["status"] = status
    url = "/pets"
    for _ in range(MAX_PAGES):
        response = http.get(url, params=params)
        assert response.status_code == 200, response.text
        rows = response.json()
        yield rows
        if style == "link":
            match = _NEXT.search(response.headers.get("link", ""))
            if match is None:
                return
            # params=None: httpx would replace the link's own query with an empty one
            url, params = str(response.url.join(match.group(1))), None
        elif style == "cursor":
            assert params is not None
            if "x-next-cursor" not in response.headers:
                return
            params["cursor"] = response.headers["x-next-cursor"]
        elif style == "offset":
            assert params is not None
            if not rows:  # a page capped below limit is short but not the end
                return
            params["offset"] = int(params.get("offset", 0)) + len(rows)  # rows received
        elif style == "page":
            assert params is not None
            if len(rows) < limit:
                return
            params["page"] = int(params.get("page", 1)) + 1
        else:
            return
    raise AssertionError("paging did not end")


def walk(http: httpx.Client, style: str, limit: int, status: str | None = None) -> list[int]:
    return [int(str(p["id"])) for page in pages(http, style, limit, status) for p in page]


PAGED_STYLES = ["link", "cursor", "offset", "page"]


@pytest.fixture
def catalogue() -> list[tuple[int, str, int, str | None]]:
    return list(seed_rows(250))


@pytest.mark.parametrize("style", PAGED_STYLES)
@pytest.mark.parametrize("status", [None, "available", "pending", "sold"])
def test_each_style_walks_the_whole_catalogue_exactly_once(
    petstore_server: StartServer,
    catalogue: list[tuple[int, str, int, str | None]],
    style: str,
    status: str | None,
) -> None:
    srv = petstore_server(seed_pets=250, pagination=style)
    expected = [row[0] for row in catalogue if status is None or row[3] == status]
    with client_for(srv) as http:
        assert walk(http, style, 7, status) == expected


def test_pets_without_status_are_listed_unfiltered_only(
    petstore_server: StartServer, catalogue: list[tuple[int, str, int, str | None]]
) -> None:
    srv = petstore_server(seed_pets=250)
    with client_for(srv) as http:
        filtered = {s: set(walk(http, "link", 100, s)) for s in ("available", "pending", "sold")}
    no_status = {row[0] for row in catalogue if row[3] is None}
    assert no_status
    assert not no_status & set().union(*filtered.values())


def test_none_style_answers_the_first_page_and_ignores_paging_params(
    petstore_server: StartServer,
) -> None:
    srv = petstore_server(seed_pets=50, pagination="none")
    with client_for(srv) as http:
        first = http.get("/pets", params={"limit": 10})
        assert [p["id"] for p in first.json()] == list(range(1, 11))
        assert "link" not in first.headers and "x-next-cursor" not in first.headers
        for extra in ({"offset": 10}, {"page": 2}, {"after": 10}, {"cursor": "junk"}):
            again = http.get("/pets", params={"limit": 10, **extra})
            assert again.json() == first.json()


@pytest.mark.parametrize("style", ["offset", "page"])
def test_offset_and_page_styles_send_no_paging_headers(
    petstore_server: StartServer, style: str
) -> None:
    srv = petstore_server(seed_pets=50, pagination=style)
    with client_for(srv) as http:
        response = http.get("/pets", params={"limit": 10})
    assert "link" not in response.headers and "x-next-cursor" not in response.headers


def test_link_header_is_path_absolute_and_keeps_limit_and_status(
    petstore_server: StartServer,
) -> None:
    srv = petstore_server(seed_pets=250)
    with client_for(srv) as http:
        response = http.get("/pets", params={"limit": 5, "status": "sold"})
    # sold are 3, 6, 9, ... except 3 (pets 3, 13, 23, ... have no status)
    assert [p["id"] for p in response.json()] == [6, 9, 12, 15, 18]
    assert response.headers["link"] == '</v1/pets?limit=5&status=sold&after=18>; rel="next"'


def test_a_full_last_page_links_to_an_empty_page(petstore_server: StartServer) -> None:
    srv = petstore_server(seed_pets=14)
    with client_for(srv) as http:
        sizes = [len(page) for page in pages(http, "link", 7)]
    assert sizes == [7, 7, 0]


def test_cursor_style_sends_an_opaque_cursor_header(petstore_server: StartServer) -> None:
    srv = petstore_server(seed_pets=30, pagination="cursor")
    with client_for(srv) as http:
        response = http.get("/pets", params={"limit": 10})
    assert response.headers["x-next-cursor"] == encode_cursor(10)
    assert "10" not in response.headers["x-next-cursor"]


@pytest.mark.parametrize("style", ["link", "offset"])
def test_page_cap_returns_fewer_rows_than_limit_and_nothing_vanishes(
    petstore_server: StartServer, style: str
) -> None:
    srv = petstore_server(seed_pets=60, pagination=style, page_cap=8)
    with client_for(srv) as http:
        sizes = [len(page) for page in pages(http, style, 20)]
        ids = walk(http, style, 20)
    assert sizes[0] == 8
    assert ids == list(range(1, 61))


def disturb(srv: RunningServer, http: httpx.Client, number: int) -> list[int]:
    """What happens to a catalogue while a client pages: pets added at the end, one added
    behind the client's position (a crafted low id), one already listed deleted."""
    created = [
        int(http.post("/pets", json={"name": f"Late {number}.{k}", "categoryId": 1}).json()["id"])
        for k in range(3)
    ]
    srv.store.insert(Pet(-number, f"Behind {number}", 1))
    srv.store._conn.execute("DELETE FROM pets WHERE id = ?", (number,))
    return created


def test_keyset_paging_neither_repeats_nor_loses_pets_created_meanwhile(
    petstore_server: StartServer,
) -> None:
    srv = petstore_server(seed_pets=100)
    seen: list[int] = []
    created: list[int] = []
    with client_for(srv) as http:
        for number, page in enumerate(pages(http, "link", 10)):
            seen.extend(int(p["id"]) for p in page)
            if number in (2, 5):
                created += disturb(srv, http, number)
    assert len(seen) == len(set(seen))
    assert seen == list(range(1, 101)) + created


def test_offset_paging_repeats_pets_under_the_same_changes(petstore_server: StartServer) -> None:
    # Why keyset is the default: offsets shift when a pet lands behind the client.
    srv = petstore_server(seed_pets=100, pagination="offset")
    seen: list[int] = []
    with client_for(srv) as http:
        for number, page in enumerate(pages(http, "offset", 10)):
            seen.extend(int(p["id"]) for p in page)
            if number == 2:
                srv.store.insert(Pet(-1, "Behind", 1))
    assert len(seen) > len(set(seen))
    assert seen[30] == seen[29] == 30


# -- query validation -------------------------------------------------------------------------

LIMIT_RANGE = "must be an integer from 1 to 100"
BAD_QUERIES = [
    ("limit-zero", {"limit": "0"}, f"query parameter 'limit' {LIMIT_RANGE}, got '0'"),
    ("limit-101", {"limit": "101"}, f"query parameter 'limit' {LIMIT_RANGE}, got '101'"),
    ("limit-negative", {"limit": "-5"}, f"query parameter 'limit' {LIMIT_RANGE}, got '-5'"),
    ("limit-word", {"limit": "ten"}, f"query parameter 'limit' {LIMIT_RANGE}, got 'ten'"),
    ("limit-float", {"limit": "1.5"}, f"query parameter 'limit' {LIMIT_RANGE}, got '1.5'"),
    ("limit-empty", {"limit": ""}, f"query parameter 'limit' {LIMIT_RANGE}, got ''"),
    ("limit-plus", {"limit": "+5"}, f"query parameter 'limit' {LIMIT_RANGE}, got '+5'"),
    ("limit-space", {"limit": " 5"}, f"query parameter 'limit' {LIMIT_RANGE}, got ' 5'"),
    (
        "limit-twice",
        [("limit", "5"), ("limit", "6")],
        "query parameter 'limit' given 2 times; give it once",
    ),
    (
        "status-unknown",
        {"status": "lost"},
        "query parameter 'status' must be one of available, pending, sold, got 'lost'",
    ),
    (
        "status-empty",
        {"status": ""},
        "query parameter 'status' must be one of available, pending, sold, got ''",
    ),
    (
        "after-word",
        {"after": "x"},
        "query parameter 'after' must be an int64 pet id, got 'x'",
    ),
    (
        "after-beyond-int64",
        {"after": "9223372036854775808"},
        "query parameter 'after' must be an int64 pet id, got '9223372036854775808'",
    ),
]


@pytest.fixture(scope="module")
def shared(
    request: pytest.FixtureRequest,
) -> Iterator[RunningServer]:
    """One read-only link-style server for the query-validation table."""
    import secrets

    from petsync.core.apikey import ApiKey
    from petsync.server.app import ServerConfig
    from petsync.server.runner import start_server

    config = ServerConfig(api_key=ApiKey("test-key-" + secrets.token_hex(8)), seed_pets=30)
    with start_server(config) as server:
        yield server


@pytest.mark.parametrize(
    ("params", "message"), [c[1:] for c in BAD_QUERIES], ids=[c[0] for c in BAD_QUERIES]
)
def test_list_rejects_invalid_query_with_400_error(
    shared: RunningServer, params: object, message: str
) -> None:
    with client_for(shared) as http:
        response = http.get("/pets", params=params)  # type: ignore[arg-type]
    assert response.status_code == 400
    assert response.json() == {"code": "invalid_request", "message": message, "status": 400}


def test_limit_defaults_to_20_and_accepts_1_and_100(shared: RunningServer) -> None:
    with client_for(shared) as http:
        assert len(http.get("/pets").json()) == 20
        assert len(http.get("/pets", params={"limit": 1}).json()) == 1
        assert len(http.get("/pets", params={"limit": 100}).json()) == 30


STYLE_QUERIES = [
    (
        "cursor",
        {"cursor": "bm9wZQ"},
        "query parameter 'cursor' is not a cursor this server "
        "issued; pass the value of the X-Next-Cursor header unchanged",
    ),
    (
        "cursor",
        {"cursor": "%%%"},
        "query parameter 'cursor' is not a cursor this server "
        "issued; pass the value of the X-Next-Cursor header unchanged",
    ),
    (
        "offset",
        {"offset": "-1"},
        "query parameter 'offset' must be an integer of at least 0, got '-1'",
    ),
    ("page", {"page": "0"}, "query parameter 'page' must be an integer of at least 1, got '0'"),
]


@pytest.mark.parametrize(
    ("style", "params", "message"),
    STYLE_QUERIES,
    ids=["cursor-foreign", "cursor-garbage", "offset-negative", "page-zero"],
)
def test_style_parameters_are_validated(
    petstore_server: StartServer, style: str, params: dict[str, str], message: str
) -> None:
    srv = petstore_server(seed_pets=5, pagination=style)
    with client_for(srv) as http:
        response = http.get("/pets", params=params)
    assert response.status_code == 400
    assert response.json() == {"code": "invalid_request", "message": message, "status": 400}


def test_page_beyond_the_end_is_empty(petstore_server: StartServer) -> None:
    srv = petstore_server(seed_pets=5, pagination="page")
    with client_for(srv) as http:
        assert http.get("/pets", params={"page": 2**62}).json() == []
