"""The client over respx: headers, error shapes, retries, POST safety, models, deprecation."""

from __future__ import annotations

import random
import threading
from collections.abc import Callable, Iterator

import httpx
import pytest
import respx

from petsync._version import USER_AGENT
from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig, RetryPolicy
from petsync.client.listing import InvalidRecord
from petsync.core.apikey import ApiKey
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    ExitCode,
    NotFoundError,
    OutcomeUnknownError,
    PaginationError,
    PetsyncError,
    ProtocolError,
    RetriesExhaustedError,
    TransportError,
    UsageError,
)
from petsync.core.models import INT64_MAX, INT64_MIN, NewPet, PetStatus
from petsync.server.runner import RunningServer
from tests.conftest import FakeClock

BASE = "https://petstore.test/v1"
PETS = f"{BASE}/pets"
KEY = "sk-live-0123456789abcdef"
ERROR_400 = {"code": "invalid_name", "message": "name must not be empty", "status": 400}


@pytest.fixture
def api() -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        yield router


def _client(fake_clock: FakeClock, **retry: float) -> PetstoreClient:
    config = ClientConfig(base_url=BASE, api_key=ApiKey(KEY), retry=RetryPolicy(**retry))  # type: ignore[arg-type]
    # httpx's own transport, which respx mocks, in the place of the client's transport (the
    # seam every request goes through); the real transport (libcurl) is tested against real
    # loopback servers instead (test_wire.py, test_transport_errors.py, test_body.py,
    # test_deadline.py, test_stdlib_server.py).
    return PetstoreClient(
        config,
        transport=httpx.HTTPTransport(),
        sleep=fake_clock.sleep,
        clock=fake_clock,
        rng=random.Random(1),
        wall_clock=lambda: 1_445_412_480.0,  # Wed, 21 Oct 2015 07:28:00 GMT
    )


def _list(client: PetstoreClient, limit: int = 100) -> list[int]:
    return [pet.id for page in client.list_pets(limit=limit) for pet in page.pets]


# -- headers ----------------------------------------------------------------------------------


def test_every_request_carries_the_bearer_key_and_user_agent(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    route = api.get(PETS).respond(200, json=[])
    _list(_client(fake_clock))
    request = route.calls.last.request
    assert request.headers["Authorization"] == f"Bearer {KEY}"
    assert request.headers["User-Agent"] == USER_AGENT
    assert USER_AGENT.startswith("petsync/")
    assert str(request.url) == f"{PETS}?limit=100"


def test_timeouts_are_split_into_connect_and_read(fake_clock: FakeClock) -> None:
    config = ClientConfig(BASE, ApiKey(KEY), connect_timeout=2.0, read_timeout=9.0)
    seen: list[dict[str, float]] = []

    def handler(request: httpx.Request) -> httpx.Response:
        seen.append(request.extensions["timeout"])
        return httpx.Response(200, json=[])

    client = PetstoreClient(config, transport=httpx.MockTransport(handler))
    _list(client)
    assert seen[0]["connect"] == 2.0 and seen[0]["read"] == 9.0


def test_the_key_never_shows_in_reprs(fake_clock: FakeClock) -> None:
    client = _client(fake_clock)
    assert KEY not in repr(client)
    assert KEY not in repr(client._config)
    assert KEY not in repr(client._auth)


# -- error shapes -----------------------------------------------------------------------------


def test_an_error_body_becomes_an_api_error(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.post(PETS).respond(400, json=ERROR_400)
    with pytest.raises(ApiError) as caught:
        _client(fake_clock).create_pet(NewPet(name="", categoryId=1))
    error = caught.value
    assert (error.http_status, error.code, error.api_message, error.api_status) == (
        400,
        "invalid_name",
        "name must not be empty",
        400,
    )
    assert str(error) == f"POST {PETS} answered HTTP 400, invalid_name: name must not be empty"
    assert error.exit_code == ExitCode.FAILURE


PROXY_HTML = "<html><head><title>502 Bad Gateway</title></head>\n<body>nginx</body></html>"
PROBLEM_JSON = '{"type": "about:blank", "title": "Forbidden", "status": 403}'


@pytest.mark.parametrize(
    ("status", "body", "content_type", "excerpt"),
    [
        (
            502,
            PROXY_HTML,
            "text/html",
            "<html><head><title>502 Bad Gateway</title></head> <body>nginx</body></html>",
        ),
        (403, PROBLEM_JSON, "application/problem+json", PROBLEM_JSON),
    ],
    ids=["proxy-html-502", "problem-json-403"],
)
def test_a_body_that_is_not_an_error_body_keeps_status_and_excerpt(
    api: respx.MockRouter,
    fake_clock: FakeClock,
    status: int,
    body: str,
    content_type: str,
    excerpt: str,
) -> None:
    api.get(PETS).respond(status, text=body, headers={"Content-Type": content_type})
    with pytest.raises((ApiError, RetriesExhaustedError)) as caught:
        _list(_client(fake_clock, max_attempts=1))
    error = caught.value
    if isinstance(error, RetriesExhaustedError):  # 502 may be retried; 403 may not
        error = error.last_error
    assert isinstance(error, ApiError)
    assert (error.http_status, error.code, error.excerpt) == (status, None, excerpt)
    assert str(error) == (
        f"GET {PETS}?limit=100 answered HTTP {status}, not the interface's Error body "
        f"({content_type}): {excerpt!r}"
        + (
            "; the API refused this key the operation: check the key's rights with the API owner"
            if status == 403
            else ""
        )
    )


def test_an_empty_error_body_still_names_the_status(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(500)
    with pytest.raises(ApiError) as caught:
        _list(_client(fake_clock))
    assert str(caught.value) == f"GET {PETS}?limit=100 answered HTTP 500, an empty body"
    assert len(api.calls) == 1  # 500 is not retried for GET


def test_a_long_body_excerpt_is_capped_and_redacted(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    body = f"echo Authorization: Bearer {KEY} " + "x" * 500
    api.get(PETS).respond(418, text=body)
    with pytest.raises(ApiError) as caught:
        _list(_client(fake_clock))
    start = "echo Authorization: Bearer *** "
    assert caught.value.excerpt == start + "x" * (200 - len(start)) + "... (531 characters, cut)"
    assert KEY not in str(caught.value)


def test_401_names_the_base_url_never_the_key(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    body = {"code": "unauthorized", "message": f"bad key {KEY}", "status": 401}
    api.get(PETS).respond(401, json=body)
    with pytest.raises(AuthenticationError) as caught:
        _list(_client(fake_clock))
    assert str(caught.value) == (
        f"the API at {BASE} refused the API key (HTTP 401, unauthorized: bad key ***); check "
        "the key this client was given"
    )
    assert caught.value.exit_code == ExitCode.AUTH
    assert len(api.calls) == 1


def test_a_redirect_is_reported_not_followed(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.get(PETS).respond(301, headers={"Location": "https://elsewhere.test/v1/pets"})
    other = api.get("https://elsewhere.test/v1/pets").respond(200, json=[])
    with pytest.raises(ApiError, match="petsync does not follow redirects"):
        _list(_client(fake_clock))
    assert not other.called


def test_a_list_body_that_is_not_an_array_is_a_protocol_error(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(200, json={"items": []})
    with pytest.raises(ProtocolError) as caught:
        _list(_client(fake_clock))
    assert str(caught.value) == (
        f"GET {PETS}?limit=100 answered a JSON dict where listPets must return a JSON array of Pet"
    )


def test_a_list_body_that_is_not_json_is_a_protocol_error(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(200, text="<html>hello</html>")
    with pytest.raises(ProtocolError, match=rf"^GET {PETS}\?limit=100 answered 200 with a body"):
        _list(_client(fake_clock))


@pytest.mark.parametrize("limit", [0, 101, True], ids=["zero", "over-100", "bool"])
def test_limit_outside_the_interface_range_is_refused(limit: int, fake_clock: FakeClock) -> None:
    with pytest.raises(UsageError, match="limit must be an integer from 1 to 100"):
        _client(fake_clock).list_pets(limit=limit)


# -- retries ----------------------------------------------------------------------------------


def test_get_retries_503_with_seeded_full_jitter(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).mock(
        side_effect=[httpx.Response(503), httpx.Response(503), httpx.Response(200, json=[])]
    )
    client = _client(fake_clock, backoff_base=0.5)
    _list(client)
    twin = random.Random(1)
    assert fake_clock.sleeps == [twin.uniform(0, 0.5), twin.uniform(0, 1.0)]
    assert (client.requests, client.retries) == (3, 2)


@pytest.mark.parametrize(
    "retry_after",
    ["12", "Wed, 21 Oct 2015 07:28:12 GMT"],
    ids=["seconds", "http-date"],
)
def test_retry_after_is_a_floor(
    retry_after: str, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": retry_after}),
            httpx.Response(200, json=[]),
        ]
    )
    _list(_client(fake_clock))
    assert fake_clock.sleeps == [12.0]


def test_retry_after_date_is_read_against_the_response_date(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    headers = {
        "Retry-After": "Sun, 22 Nov 2026 19:00:05 GMT",
        "Date": "Sun, 22 Nov 2026 19:00:00 GMT",
    }
    api.get(PETS).mock(
        side_effect=[httpx.Response(503, headers=headers), httpx.Response(200, json=[])]
    )
    _list(_client(fake_clock))
    assert fake_clock.sleeps == [5.0]


@pytest.mark.parametrize(
    "exc",
    [httpx.ReadTimeout("slow"), httpx.ConnectError("refused"), httpx.RemoteProtocolError("gone")],
    ids=["read-timeout", "connect", "dropped"],
)
def test_get_retries_transport_errors(
    exc: Exception, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).mock(
        side_effect=[
            exc,
            httpx.Response(200, json=[{"id": 1, "name": "a", "categoryId": 2}]),
            httpx.Response(200, json=[]),  # auto's offset probe after a short first page
        ]
    )
    assert _list(_client(fake_clock)) == [1]
    assert len(api.calls) == 3


def test_max_attempts_bound_the_retries(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.get(PETS).respond(503, json={"code": "unavailable", "message": "busy", "status": 503})
    with pytest.raises(RetriesExhaustedError) as caught:
        _list(_client(fake_clock, max_attempts=3))
    assert len(api.calls) == 3
    elapsed = sum(fake_clock.sleeps)
    assert str(caught.value) == (
        f"gave up on GET {PETS}?limit=100 after 3 attempts in {elapsed:.1f} s: last error: "
        f"GET {PETS}?limit=100 answered HTTP 503, unavailable: busy; to retry more, raise "
        "max_attempts= (now 2 retries), or try again later"
    )


def test_the_time_budget_bounds_the_retries(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.get(PETS).respond(503, headers={"Retry-After": "20"})
    with pytest.raises(RetriesExhaustedError) as caught:
        _list(_client(fake_clock, max_attempts=100, budget_seconds=50.0))
    assert len(api.calls) == 3  # waits of 20 and 20; a third would end at 60 s > 50 s
    assert fake_clock.sleeps == [20.0, 20.0]
    assert str(caught.value).endswith(
        "would pass the retry budget of 50 s; to retry longer, raise budget_seconds=, "
        "or try again later"
    )


def test_get_exhausting_connect_errors_names_the_transport_cause(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).mock(side_effect=httpx.ConnectError("[Errno 111] Connection refused"))
    with pytest.raises(RetriesExhaustedError) as caught:
        _list(_client(fake_clock, max_attempts=2))
    assert isinstance(caught.value.last_error, TransportError)
    assert str(caught.value.last_error) == (
        f"could not connect for GET {PETS}?limit=100 (ConnectError: [Errno 111] Connection "
        "refused); check the base URL and that the server is up"
    )


# -- POST safety ------------------------------------------------------------------------------

CREATED = {"id": 7, "name": "Rex", "categoryId": 3, "status": "available"}


@pytest.mark.parametrize(
    "outcome",
    [
        httpx.ReadTimeout("timed out"),
        httpx.RemoteProtocolError("Server disconnected without sending a response."),
        httpx.WriteError("broken pipe"),
        httpx.Response(500, json={"code": "internal", "message": "boom", "status": 500}),
        httpx.Response(503, text="busy"),
        httpx.Response(502),
    ],
    ids=["read-timeout", "dropped", "write-error", "500", "503", "502"],
)
def test_post_is_never_retried_after_sending(
    outcome: Exception | httpx.Response, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    route = api.post(PETS).mock(side_effect=[outcome, httpx.Response(201, json=CREATED)])
    with pytest.raises(OutcomeUnknownError) as caught:
        _client(fake_clock).create_pet(NewPet("Rex", 3))
    assert route.call_count == 1
    assert fake_clock.sleeps == []
    assert "the pet may or may not have been created. petsync does not re-send it" in str(
        caught.value
    )


def test_post_outcome_unknown_message_for_a_read_timeout(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.post(PETS).mock(side_effect=httpx.ReadTimeout("timed out"))
    with pytest.raises(OutcomeUnknownError) as caught:
        _client(fake_clock).create_pet(NewPet("Rex", 3))
    assert str(caught.value) == (
        f"POST {PETS} was sent but no answer came (ReadTimeout: timed out); the pet may or may "
        "not have been created. petsync does not re-send it (that could create it twice): list "
        "the pets to check before sending it again"
    )


@pytest.mark.parametrize(
    "first",
    [
        httpx.ConnectError("refused"),
        httpx.ConnectTimeout("no route"),
        httpx.Response(429, headers={"Retry-After": "3"}),
    ],
    ids=["connect-refused", "connect-timeout", "429"],
)
def test_post_is_retried_when_surely_not_sent_or_refused(
    first: Exception | httpx.Response, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    route = api.post(PETS).mock(side_effect=[first, httpx.Response(201, json=CREATED)])
    client = _client(fake_clock)
    pet = client.create_pet(NewPet("Rex", 3, PetStatus.AVAILABLE))
    assert (pet.id, pet.name, pet.categoryId, pet.status) == (7, "Rex", 3, "available")
    assert route.call_count == 2
    assert client.retries == 1
    assert route.calls.last.request.content == b'{"name":"Rex","categoryId":3,"status":"available"}'


def test_create_pet_sends_what_httpx_json_would(fake_clock: FakeClock) -> None:
    # createPet puts on the headers httpx's json= adds itself (the body encoded once): a
    # transport must get the request httpx would build, header for header, byte for byte,
    # its content readable without read() (as a transport written for httpx expects).
    seen: list[httpx.Request] = []

    class Capture(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            return httpx.Response(201, json=CREATED)

    config = ClientConfig(base_url=BASE, api_key=ApiKey(KEY))
    name = 'Zoë "Boo", 猫'
    with PetstoreClient(config, transport=Capture(), sleep=fake_clock.sleep) as client:
        client.create_pet(NewPet(name, INT64_MAX, PetStatus.SOLD))
    (sent,) = seen
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Accept-Encoding": "gzip, deflate",
        "Authorization": f"Bearer {KEY}",
    }
    pet = {"name": name, "categoryId": INT64_MAX, "status": "sold"}
    expected = httpx.Request("POST", PETS, headers=headers, json=pet)
    assert sent.content == expected.content
    assert sent.headers.raw == expected.headers.raw
    assert (sent.method, sent.url) == ("POST", httpx.URL(PETS))


def test_listing_gets_send_what_httpx_would(fake_clock: FakeClock) -> None:
    # A listing's GETs are built from headers prepared once (Host first) and an empty body:
    # a transport must get the request httpx builds itself, header for header, for the first
    # page, a plain next link and a next link written as a whole URL.
    seen: list[httpx.Request] = []
    links = ["</v1/pets?limit=2&after=2>", f"<{PETS}?limit=2&after=4>", None]

    class Capture(httpx.BaseTransport):
        def handle_request(self, request: httpx.Request) -> httpx.Response:
            seen.append(request)
            link = links[len(seen) - 1]
            headers = {"Link": f'{link}; rel="next"'} if link else {}
            first = 2 * len(seen) - 1
            pets = [{"id": i, "name": "Rex", "categoryId": 1} for i in (first, first + 1)]
            return httpx.Response(200, json=pets[: 1 if link is None else 2], headers=headers)

    config = ClientConfig(base_url=BASE, api_key=ApiKey(KEY))
    with PetstoreClient(config, transport=Capture(), sleep=fake_clock.sleep) as client:
        pages = list(client.list_pets(limit=2))
    assert [p.columns.ids for p in pages] == [[1, 2], [3, 4], [5]]
    headers = {
        "User-Agent": USER_AGENT,
        "Accept": "application/json",
        "Accept-Encoding": "gzip, deflate",
        "Authorization": f"Bearer {KEY}",
    }
    urls = [f"{PETS}?limit=2", f"{PETS}?limit=2&after=2", f"{PETS}?limit=2&after=4"]
    for sent, url in zip(seen, urls, strict=True):
        expected = httpx.Request("GET", url, headers=headers)
        assert (sent.method, sent.url) == ("GET", httpx.URL(url))
        assert sent.headers.raw == expected.headers.raw
        assert sent.content == expected.content == b""


def test_a_failed_page_names_its_url_redacted(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    # The page's URL is redacted only when a message needs it: a next link carrying the key
    # is still shown without it when that page fails (retries counted from the first try).
    api.get(f"{PETS}?limit=2").mock(
        return_value=httpx.Response(
            200,
            json=[
                {"id": 1, "name": "Rex", "categoryId": 1},
                {"id": 2, "name": "Bo", "categoryId": 1},
            ],
            headers={"Link": f'</v1/pets?limit=2&after=2&token={KEY}>; rel="next"'},
        )
    )
    api.get(f"{PETS}?limit=2&after=2&token={KEY}").mock(return_value=httpx.Response(503))
    with _client(fake_clock, max_attempts=2) as client, pytest.raises(PetsyncError) as caught:
        list(client.list_pets(limit=2))
    message = str(caught.value)
    assert KEY not in message
    assert "after=2&token=***" in message
    assert "after 2 attempts" in message


def test_post_429_sleeps_at_least_retry_after(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.post(PETS).mock(
        side_effect=[
            httpx.Response(429, headers={"Retry-After": "3"}),
            httpx.Response(201, json=CREATED),
        ]
    )
    _client(fake_clock).create_pet(NewPet("Rex", 3))
    assert fake_clock.sleeps == [3.0]


def test_create_pet_400_is_not_retried(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    route = api.post(PETS).respond(400, json=ERROR_400)
    with pytest.raises(ApiError):
        _client(fake_clock).create_pet(NewPet("", 3))
    assert route.call_count == 1


def test_a_201_whose_body_is_not_a_pet_warns_it_was_probably_created(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.post(PETS).respond(201, json={"id": 1.0, "name": "Rex", "categoryId": 3})
    with pytest.raises(ProtocolError, match="the pet was probably created"):
        _client(fake_clock).create_pet(NewPet("Rex", 3))


# -- models through the client ------------------------------------------------------------------


def test_int64_extremes_survive_a_listing(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    body = (
        f'[{{"id": {INT64_MAX}, "name": "max", "categoryId": {INT64_MIN}}},'
        f'{{"id": -1, "name": "neg", "categoryId": -42, "status": "sold"}}]'
    )
    api.get(PETS).respond(200, text=body, headers={"Content-Type": "application/json"})
    pages = list(_client(fake_clock).list_pets())
    pets = pages[0].pets
    assert [(p.id, p.categoryId) for p in pets] == [(INT64_MAX, INT64_MIN), (-1, -42)]


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        (
            '{"id": 1.0, "name": "a", "categoryId": 1}',
            "Pet 'id' must be an int64 integer, got float 1.0",
        ),
        (
            '{"id": true, "name": "a", "categoryId": 1}',
            "Pet 'id' must be an int64 integer, got bool True",
        ),
        (
            '{"id": "5", "name": "a", "categoryId": 1}',
            "Pet 'id' must be an int64 integer, got str '5'",
        ),
        (
            '{"id": 9223372036854775808, "name": "a", "categoryId": 1}',
            "Pet 'id' must be an int64 integer, got int 9223372036854775808",
        ),
        (
            '{"id": 5, "name": "a", "categoryId": 1e3}',
            "Pet 'categoryId' must be an int64 integer, got float 1000.0",
        ),
        ('{"name": "a", "categoryId": 1}', "Pet has no 'id'"),
        ('{"id": 5, "categoryId": 1}', "Pet 'name' must be a string, got NoneType None"),
        ('"rex"', "a Pet must be a JSON object, got str"),
        (
            '{"id":1,"id":2,"name":"a","categoryId":1}',
            "Pet holds the key 'id' more than once; JSON readers differ on which value counts, "
            "so petsync stores neither: ask the API owner to send each key once",
        ),
        (
            '{"id": ' + "9" * 5000 + ', "name": "a", "categoryId": 1}',
            "Pet 'id' must be an int64 integer, got a number of 5000 digits "
            "(99999999999999999999... (5000 digits))",
        ),
    ],
    ids=[
        "float-id",
        "bool-id",
        "string-id",
        "2**63",
        "float-category",
        "no-id",
        "no-name",
        "string",
        "id-twice",
        "id-of-5000-digits",
    ],
)
def test_records_breaking_the_interface_become_invalid_records(
    raw: str, reason: str, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    body = f'[{{"id": 1, "name": "ok", "categoryId": 1}}, {raw}]'
    api.get(PETS).respond(200, text=body, headers={"Content-Type": "application/json"})
    page = next(iter(_client(fake_clock).list_pets()))
    assert [p.id for p in page.pets] == [1]
    assert len(page.invalid) == 1
    invalid = page.invalid[0]
    assert isinstance(invalid, InvalidRecord)
    assert (invalid.reason, invalid.url) == (reason, f"{PETS}?limit=100")


def test_status_absent_is_none_and_unknown_status_is_kept(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(
        200,
        json=[
            {"id": 1, "name": "a", "categoryId": 1},
            {"id": 2, "name": "b", "categoryId": 1, "status": "adopted"},
            {"id": 3, "name": "c", "categoryId": 1, "status": "pending", "colour": "red"},
        ],
    )
    pets = next(iter(_client(fake_clock).list_pets())).pets
    assert [(p.status, p.known_status) for p in pets] == [
        (None, None),
        ("adopted", None),
        ("pending", PetStatus.PENDING),
    ]


# -- getPet ------------------------------------------------------------------------------------


def test_get_pet_warns_and_surfaces_deprecation_headers(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    headers = {"Deprecation": "@1735689600", "Sunset": "Thu, 05 Dec 2030 00:00:00 GMT"}
    api.get(f"{PETS}/{INT64_MAX}").respond(
        200, json={"id": INT64_MAX, "name": "big", "categoryId": 1}, headers=headers
    )
    with pytest.warns(DeprecationWarning, match="scheduled for removal on 5 December 2030"):
        fetched = _client(fake_clock).get_pet(INT64_MAX)
    assert fetched.pet.id == INT64_MAX
    assert (fetched.deprecation, fetched.sunset) == (
        "@1735689600",
        "Thu, 05 Dec 2030 00:00:00 GMT",
    )


def test_get_pet_without_deprecation_headers(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.get(f"{PETS}/-5").respond(200, json={"id": -5, "name": "neg", "categoryId": 1})
    with pytest.warns(DeprecationWarning):
        fetched = _client(fake_clock).get_pet(-5)
    assert (fetched.pet.id, fetched.deprecation, fetched.sunset) == (-5, None, None)


def test_get_pet_404_is_not_found(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    api.get(f"{PETS}/9").respond(
        404, json={"code": "not_found", "message": "no pet 9", "status": 404}
    )
    with pytest.raises(NotFoundError) as caught, pytest.warns(DeprecationWarning):
        _client(fake_clock).get_pet(9)
    assert str(caught.value) == f"GET {PETS}/9 answered HTTP 404, not_found: no pet 9"
    assert len(api.calls) == 1


# -- check, counters, secrets -----------------------------------------------------------------


def test_check_reports_the_link_style_after_one_request(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(
        200,
        json=[{"id": 1, "name": "a", "categoryId": 1}],
        headers={"Link": '</v1/pets?limit=1&after=1>; rel="next"'},
    )
    report = _client(fake_clock).check()
    assert (report.base_url, report.key_accepted, report.pagination_style) == (BASE, True, "link")
    assert report.complete_first_page is False
    assert [str(c.request.url) for c in api.calls] == [f"{PETS}?limit=1"]


def test_check_on_an_empty_catalogue_says_none(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(200, json=[])
    report = _client(fake_clock).check()
    assert (report.pagination_style, report.complete_first_page) == ("none", True)


def test_counters_are_totals_across_threads(fake_clock: FakeClock) -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, json=[{"id": 1, "name": "a", "categoryId": 1}])

    config = ClientConfig(BASE, ApiKey(KEY), pagination="none")
    client = PetstoreClient(config, transport=httpx.MockTransport(handler))
    threads = [
        threading.Thread(target=lambda: [_list(client) for _ in range(50)]) for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=30)
    assert client.requests == 400


@pytest.mark.parametrize(
    "response",
    [
        httpx.Response(401, json={"code": "unauthorized", "message": KEY, "status": 401}),
        httpx.Response(400, json={"code": KEY, "message": KEY, "status": 400}),
        httpx.Response(500, text=f"token={KEY} Bearer {KEY}"),
        httpx.Response(200, json=[{"id": KEY, "name": "a", "categoryId": 1}]),
    ],
    ids=["401", "400", "500", "invalid-record"],
)
def test_the_key_is_never_in_an_error_message(
    response: httpx.Response, api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).mock(return_value=response)
    api.post(PETS).mock(return_value=response)
    client = _client(fake_clock)
    for call in (lambda: _list(client), lambda: client.create_pet(NewPet("a", 1))):
        try:
            call()
        except PetsyncError as exc:
            assert KEY not in str(exc)
            assert all(KEY not in str(v) for v in vars(exc).values())


# -- against the real reference server ----------------------------------------------------------


LiveClient = Callable[..., PetstoreClient]


@pytest.fixture
def live(fake_clock: FakeClock) -> Iterator[LiveClient]:
    """Clients of live servers on the fake clock, closed at teardown (no socket left open)."""
    clients: list[PetstoreClient] = []

    def make(srv: RunningServer, **config: object) -> PetstoreClient:
        cfg = ClientConfig(srv.base_url, srv.api_key, **config)  # type: ignore[arg-type]
        client = PetstoreClient(cfg, sleep=fake_clock.sleep, clock=fake_clock, rng=random.Random(2))
        clients.append(client)
        return client

    yield make
    for client in clients:
        client.close()


@pytest.mark.parametrize("pagination", ["link", "cursor", "offset", "page"])
def test_auto_lists_the_real_server_whole_with_capped_pages(
    pagination: str, petstore_server: Callable[..., RunningServer], live: LiveClient
) -> None:
    srv = petstore_server(seed_pets=95, pagination=pagination, page_cap=30)
    listing = live(srv).list_pets(limit=40)
    ids = [pet.id for page in listing for pet in page.pets]
    assert ids == [pet.id for pet in srv.store.all()]
    assert (listing.style, listing.complete, listing.duplicates) == (pagination, True, 0)


def test_rate_limited_listing_waits_out_429s_on_the_fake_clock(
    petstore_server: Callable[..., RunningServer], fake_clock: FakeClock, live: LiveClient
) -> None:
    srv = petstore_server(seed_pets=60, clock=fake_clock)
    srv.faults.rate_limit = 2.0
    client = live(srv)
    listing = client.list_pets(limit=5)
    assert sum(len(page.pets) for page in listing) == 60
    assert listing.complete is True
    assert listing.retries > 0 and client.retries == listing.retries
    assert fake_clock.sleeps and min(fake_clock.sleeps) > 0


def test_a_post_whose_answer_is_lost_is_not_re_sent(
    petstore_server: Callable[..., RunningServer], live: LiveClient
) -> None:
    srv = petstore_server()
    srv.faults.fail_after_store_rate = 1.0
    client = live(srv)
    with pytest.raises(OutcomeUnknownError, match="answered HTTP 500"):
        client.create_pet(NewPet("Once", 1))
    assert [pet.name for pet in srv.store.all()] == ["Once"]
    assert client.requests == 1


def test_create_pet_against_the_real_server_keeps_int64_extremes(
    petstore_server: Callable[..., RunningServer], live: LiveClient
) -> None:
    srv = petstore_server()
    pet = live(srv).create_pet(NewPet("Edge", INT64_MIN, PetStatus.SOLD))
    assert (pet.categoryId, pet.status) == (INT64_MIN, "sold")
    assert srv.store.get(pet.id) == pet


def test_post_connect_errors_exhaust_into_retries_exhausted_not_outcome_unknown(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    route = api.post(PETS).mock(side_effect=httpx.ConnectError("refused"))
    with pytest.raises(RetriesExhaustedError) as caught:
        _client(fake_clock, max_attempts=3).create_pet(NewPet("Rex", 3))
    assert route.call_count == 3
    assert type(caught.value.last_error) is TransportError


# -- text the server sent, as it reaches a message ------------------------------------------------

HOSTILE = "\x1b[2J\x1b[H\x1b]0;owned\x07" + "A" * (5 * 1024 * 1024 - 17)


def test_a_huge_error_message_with_escape_sequences_is_escaped_and_cut(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    body = {"code": "bad\x1b[31mcode", "message": HOSTILE, "status": 400}
    api.post(PETS).respond(400, json=body)
    with pytest.raises(ApiError) as caught:
        _client(fake_clock).create_pet(NewPet("Rex", 3))
    error = caught.value
    shown = "\\x1b[2J\\x1b[H\\x1b]0;owned\\x07"
    assert error.api_message == shown + "A" * (300 - len(shown)) + "... (5242880 characters, cut)"
    assert error.code == "bad\\x1b[31mcode"
    assert str(error) == f"POST {PETS} answered HTTP 400, {error.code}: {error.api_message}"
    assert "\x1b" not in str(error) and len(str(error)) < 500


def test_an_excerpt_and_its_content_type_are_escaped(
    api: respx.MockRouter, fake_clock: FakeClock
) -> None:
    api.get(PETS).respond(418, text="tea\x1b]0;x\x07pot", headers={"Content-Type": "x/\x1b[2J"})
    with pytest.raises(ApiError) as caught:
        _list(_client(fake_clock))
    assert caught.value.excerpt == "tea\\x1b]0;x\\x07pot"
    assert str(caught.value) == (
        f"GET {PETS}?limit=100 answered HTTP 418, not the interface's Error body "
        "(x/\\x1b[2J): 'tea\\\\x1b]0;x\\\\x07pot'"
    )


def test_a_redirect_location_is_cut(api: respx.MockRouter, fake_clock: FakeClock) -> None:
    location = "https://elsewhere.test/" + "p" * 10_000
    api.get(PETS).respond(302, headers={"Location": location})
    with pytest.raises(ApiError) as caught:
        _list(_client(fake_clock))
    message = str(caught.value)
    assert "a redirect to https://elsewhere.test/ppp" in message
    assert "... (10023 characters, cut); petsync does not follow redirects" in message
    assert len(message) < 600


def test_a_cursor_in_a_loop_message_is_escaped_and_cut(fake_clock: FakeClock) -> None:
    cursor = "\x1b[2J" + "c" * 5_000
    calls: list[int] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(len(calls) + 1)  # a new record each time: only the cursor repeats
        pets = [{"id": calls[-1], "name": "a", "categoryId": 1}]
        return httpx.Response(200, json=pets, headers={"X-Next-Cursor": cursor})

    config = ClientConfig(BASE, ApiKey(KEY), pagination="cursor")
    client = PetstoreClient(config, transport=httpx.MockTransport(handler))
    with pytest.raises(PaginationError) as caught:
        _list(client, limit=1)
    message = str(caught.value)
    assert message.startswith("the server sent the cursor '\\x1b[2Jccc")
    assert "... (5004 characters, cut)' again (" in message
    assert "\x1b" not in message and len(message) < 1200
