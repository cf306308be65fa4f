"""The reference server over real HTTP: validation, auth, errors, getPet, faults."""

from __future__ import annotations

import json
import secrets
from collections.abc import Iterator

import httpx
import pytest

from petsync.core.apikey import ApiKey
from petsync.core.models import INT64_MAX, INT64_MIN, Pet
from petsync.server.app import ServerConfig
from petsync.server.runner import RunningServer, start_server
from tests.conftest import FakeClock, StartServer

RANGE = f"from {INT64_MIN} to {INT64_MAX}"


@pytest.fixture
def srv(petstore_server: StartServer) -> RunningServer:
    return petstore_server(seed_pets=30)


@pytest.fixture(scope="module")
def refusing() -> Iterator[RunningServer]:
    """One server shared by the tests of refused requests (each checks nothing was stored)."""
    config = ServerConfig(api_key=ApiKey("test-key-" + secrets.token_hex(8)), seed_pets=30)
    with start_server(config) as server:
        yield server


def client_for(srv: RunningServer, key: str | None = None) -> httpx.Client:
    token = srv.api_key.reveal() if key is None else key
    headers = {"Authorization": f"Bearer {token}"}
    return httpx.Client(base_url=srv.base_url, headers=headers, timeout=10)


@pytest.fixture
def http(srv: RunningServer) -> Iterator[httpx.Client]:
    with client_for(srv) as client:
        yield client


def error(status: int, code: str, message: str) -> dict[str, object]:
    return {"code": code, "message": message, "status": status}


def test_fixture_serves_under_v1_on_loopback(srv: RunningServer) -> None:
    assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
    assert srv.store.count() == 30


# -- createPet validation --------------------------------------------------------------------

BAD_BODIES = [
    (
        "not-json",
        b"{name",
        "request body is not valid JSON: "
        "Expecting property name enclosed in double quotes: line 1 column 2 (char 1)",
    ),
    ("array", b"[]", "request body must be a JSON object (NewPet), got an array"),
    ("string", b'"Rex"', "request body must be a JSON object (NewPet), got a string"),
    ("null", b"null", "request body must be a JSON object (NewPet), got null"),
    (
        "empty-body",
        b"",
        "request body is not valid JSON: Expecting value: line 1 column 1 (char 0)",
    ),
    (
        "nan",
        b'{"name": "Rex", "categoryId": NaN}',
        "request body is not valid JSON: NaN is not valid JSON",
    ),
    (
        "infinity",
        b'{"name": "Rex", "categoryId": Infinity}',
        "request body is not valid JSON: Infinity is not valid JSON",
    ),
    (
        "duplicate-key",
        b'{"name": "Rex", "name": "Max", "categoryId": 1}',
        "request body is not valid JSON: key 'name' appears twice",
    ),
    (
        "latin-1",
        '{"name": "Zoë", "categoryId": 1}'.encode("latin-1"),
        "request body is not UTF-8 (byte 12 is not)",
    ),
    ("missing-name", b'{"categoryId": 1}', "'name' is required"),
    ("empty-name", b'{"name": "", "categoryId": 1}', "'name' must not be empty"),
    ("null-name", b'{"name": null, "categoryId": 1}', "'name' must be a string, got null"),
    ("number-name", b'{"name": 7, "categoryId": 1}', "'name' must be a string, got the integer 7"),
    (
        "surrogate-name",
        b'{"name": "\\ud800", "categoryId": 1}',
        "'name' contains an unpaired surrogate escape",
    ),
    ("missing-category", b'{"name": "Rex"}', "'categoryId' is required"),
    *[
        (
            f"category-{label}",
            b'{"name": "Rex", "categoryId": ' + raw + b"}",
            f"'categoryId' must be an integer {RANGE}, got {described}",
        )
        for label, raw, described in [
            ("float", b"1.0", "the number 1.0"),
            ("exponent", b"1e3", "the number 1000.0"),
            ("bool", b"true", "a boolean"),
            ("string", b'"1"', "a string"),
            ("null", b"null", "null"),
            ("2**63", b"9223372036854775808", "the integer 9223372036854775808"),
            ("below-min", b"-9223372036854775809", "the integer -9223372036854775809"),
        ]
    ],
    (
        "unknown-status",
        b'{"name": "Rex", "categoryId": 1, "status": "lost"}',
        "'status' must be one of available, pending, sold, got 'lost'",
    ),
    (
        "status-case",
        b'{"name": "Rex", "categoryId": 1, "status": "Sold"}',
        "'status' must be one of available, pending, sold, got 'Sold'",
    ),
    (
        "null-status",
        b'{"name": "Rex", "categoryId": 1, "status": null}',
        "'status' must be one of available, pending, sold, got null",
    ),
]


@pytest.mark.parametrize(
    ("body", "message"), [c[1:] for c in BAD_BODIES], ids=[c[0] for c in BAD_BODIES]
)
def test_create_rejects_invalid_body_with_400_error(
    refusing: RunningServer, body: bytes, message: str
) -> None:
    srv = refusing
    with client_for(srv) as http:
        response = http.post("/pets", content=body, headers={"Content-Type": "application/json"})
    assert response.status_code == 400
    assert response.headers["content-type"] == "application/json"
    assert response.json() == error(400, "invalid_request", message)
    assert srv.store.count() == 30  # nothing stored


def test_create_returns_201_with_the_new_id_and_stores_it(
    srv: RunningServer, http: httpx.Client
) -> None:
    response = http.post(
        "/pets", json={"name": 'Rex, "the" =1', "categoryId": INT64_MIN, "status": "sold"}
    )
    assert response.status_code == 201
    assert response.json() == {
        "id": 31,
        "name": 'Rex, "the" =1',
        "categoryId": INT64_MIN,
        "status": "sold",
    }
    assert srv.store.get(31) == Pet(31, 'Rex, "the" =1', INT64_MIN, "sold")


def test_create_without_status_keeps_the_status_absent(http: httpx.Client) -> None:
    created = http.post("/pets", json={"name": "Nameless", "categoryId": INT64_MAX}).json()
    assert created == {"id": 31, "name": "Nameless", "categoryId": INT64_MAX}
    fetched = http.get("/pets/31")
    assert fetched.json() == created
    listed = http.get("/pets", params={"after": 30}).json()
    assert listed == [created]


def test_create_ignores_unknown_fields_and_a_client_sent_id(http: httpx.Client) -> None:
    created = http.post("/pets", json={"id": 5, "name": "Rex", "categoryId": 1, "age": 3})
    assert created.json() == {"id": 31, "name": "Rex", "categoryId": 1}


def test_create_refuses_a_body_over_one_mebibyte(srv: RunningServer, http: httpx.Client) -> None:
    body = json.dumps({"name": "x" * (1024 * 1024), "categoryId": 1})
    response = http.post("/pets", content=body)
    assert response.status_code == 413
    assert response.json() == error(413, "payload_too_large", "request body over 1048576 bytes")
    assert srv.store.count() == 30


def test_ids_are_never_reused_after_the_highest_pet_is_deleted(
    srv: RunningServer, http: httpx.Client
) -> None:
    # There is no delete operation; delete behind the API's back, as an operator might.
    srv.store._conn.execute("DELETE FROM pets WHERE id = 30")
    created = http.post("/pets", json={"name": "Next", "categoryId": 1}).json()
    assert created["id"] == 31


# -- authentication ----------------------------------------------------------------------------

OPERATIONS = [
    ("listPets", "GET", "/pets", None),
    ("createPet", "POST", "/pets", {"name": "Rex", "categoryId": 1}),
    ("getPet", "GET", "/pets/1", None),
]


@pytest.mark.parametrize(
    ("method", "path", "body"), [o[1:] for o in OPERATIONS], ids=[o[0] for o in OPERATIONS]
)
def test_every_operation_answers_401_error_without_a_key(
    refusing: RunningServer, method: str, path: str, body: object
) -> None:
    srv = refusing
    response = httpx.request(method, srv.base_url + path, json=body, timeout=10)
    assert response.status_code == 401
    assert response.headers["www-authenticate"] == 'Bearer realm="petstore"'
    assert response.json() == error(
        401, "unauthorized", "missing API key: send the header Authorization: Bearer <API_KEY>"
    )
    assert srv.store.count() == 30


WRONG_KEYS = ["wrong-key", "key-prefix", "basic-scheme", "non-ascii"]


@pytest.mark.parametrize(
    ("method", "path", "body"), [o[1:] for o in OPERATIONS], ids=[o[0] for o in OPERATIONS]
)
@pytest.mark.parametrize("case", WRONG_KEYS)
def test_every_operation_answers_401_error_for_a_wrong_key(
    refusing: RunningServer, method: str, path: str, body: object, case: str
) -> None:
    srv = refusing
    key = srv.api_key.reveal()
    header: str | bytes = {
        "wrong-key": "Bearer not-the-key",
        "key-prefix": f"Bearer {key[:-1]}",
        "basic-scheme": f"Basic {key}",
        "non-ascii": "Bearer clé".encode(),
    }[case]
    response = httpx.request(
        method, srv.base_url + path, json=body, headers={"Authorization": header}, timeout=10
    )
    assert response.status_code == 401
    assert response.json() == error(401, "unauthorized", "the API key is not valid for this server")
    assert key not in response.text
    assert srv.store.count() == 30


def test_bearer_scheme_is_case_insensitive(srv: RunningServer) -> None:
    headers = {"Authorization": f"bearer {srv.api_key.reveal()}"}
    response = httpx.get(srv.base_url + "/pets", headers=headers, timeout=10)
    assert response.status_code == 200


def test_openapi_document_is_public(srv: RunningServer) -> None:
    response = httpx.get(srv.base_url + "/openapi.json", timeout=10)
    assert response.status_code == 200
    assert response.json()["info"]["version"] == "1.0.0"


# -- getPet ----------------------------------------------------------------------------------

DEPRECATION = {"deprecation": "@1735689600", "sunset": "Thu, 05 Dec 2030 00:00:00 GMT"}


def test_get_pet_returns_the_pet_with_deprecation_and_sunset(http: httpx.Client) -> None:
    response = http.get("/pets/1")
    assert response.status_code == 200
    assert response.json() == {"id": 1, "name": "Rex 1", "categoryId": 1, "status": "available"}
    assert {k: response.headers[k] for k in DEPRECATION} == DEPRECATION


@pytest.mark.parametrize(
    ("pet_id", "shown"),
    [
        ("31", "'31'"),
        ("0", "'0'"),
        ("-1", "'-1'"),
        ("abc", "'abc'"),
        ("1.0", "'1.0'"),
        ("9223372036854775808", "'9223372036854775808'"),
    ],
    ids=["unknown", "zero", "negative", "not-a-number", "float", "beyond-int64"],
)
def test_get_pet_answers_404_error_for_no_such_pet(
    http: httpx.Client, pet_id: str, shown: str
) -> None:
    response = http.get(f"/pets/{pet_id}")
    assert response.status_code == 404
    assert response.json() == error(404, "not_found", f"no pet with id {shown}")
    assert {k: response.headers[k] for k in DEPRECATION} == DEPRECATION


@pytest.mark.parametrize(
    "pet_id", [INT64_MAX, INT64_MIN, -1, 0], ids=["max", "min", "minus-one", "zero"]
)
def test_get_pet_and_list_keep_extreme_ids_exact(
    srv: RunningServer, http: httpx.Client, pet_id: int
) -> None:
    pet = Pet(pet_id, "Edge", INT64_MAX, None)
    srv.store.insert(pet)
    assert http.get(f"/pets/{pet_id}").json() == pet.to_json()
    listed = http.get("/pets", params={"limit": 100}).json()
    assert pet.to_json() in listed


# -- other errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("path", ["/v1/animals", "/v1/pets/", "/v1", "/", "/v2/pets"], ids=str)
def test_unknown_path_answers_404_error_and_never_redirects(
    srv: RunningServer, http: httpx.Client, path: str
) -> None:
    response = http.get(srv.base_url.removesuffix("/v1") + path)
    assert response.status_code == 404
    assert response.json() == error(
        404,
        "not_found",
        f"no such resource {path!r}; the operations are GET and POST /v1/pets "
        "and GET /v1/pets/{petId}",
    )


def test_unsupported_method_answers_405_error_with_allow(http: httpx.Client) -> None:
    response = http.delete("/pets/1")
    assert response.status_code == 405
    assert set(response.headers["allow"].split(", ")) == {"GET", "HEAD"}  # order: a set's
    assert response.json() == error(
        405, "method_not_allowed", "method DELETE is not allowed on '/v1/pets/1'; use GET, HEAD"
    )


def test_create_after_the_last_int64_id_answers_500_error(
    srv: RunningServer, http: httpx.Client
) -> None:
    srv.store.insert(Pet(INT64_MAX, "Last", 1))
    response = http.post("/pets", json={"name": "Rex", "categoryId": 1})
    assert response.status_code == 500
    assert response.json() == error(
        500, "internal_error", "no id left to assign: a pet holds id 2**63-1"
    )


# -- faults ------------------------------------------------------------------------------------


def test_fail_rate_one_answers_503_error_and_switches_off_live(
    srv: RunningServer, http: httpx.Client
) -> None:
    srv.faults.fail_rate = 1.0
    for method, path, body in [o[1:] for o in OPERATIONS]:
        response = http.request(method, path, json=body)
        assert response.status_code == 503
        assert response.json() == error(
            503, "unavailable", "injected fault: the service is unavailable; retry later"
        )
    assert srv.store.count() == 30
    srv.faults.fail_rate = 0.0
    assert http.get("/pets").status_code == 200


def test_fail_rate_is_reproducible_from_its_seed(petstore_server: StartServer) -> None:
    def statuses(seed: int) -> list[int]:
        srv = petstore_server(seed_pets=1)
        srv.faults.seed = seed
        srv.faults.fail_rate = 0.5
        with client_for(srv) as http:
            return [http.get("/pets").status_code for _ in range(20)]

    first = statuses(7)
    assert first == statuses(7)
    assert set(first) == {200, 503}


def test_rate_limit_answers_429_with_retry_after_until_the_clock_moves(
    petstore_server: StartServer, fake_clock: FakeClock
) -> None:
    srv = petstore_server(seed_pets=1, clock=fake_clock)
    srv.faults.rate_limit = 2.0
    with client_for(srv) as http:
        assert [http.get("/pets").status_code for _ in range(2)] == [200, 200]
        refused = http.get("/pets")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "1"
        assert refused.json() == error(
            429, "rate_limited", "rate limit of 2 requests per second exceeded; retry after 1 s"
        )
        fake_clock.sleep(int(refused.headers["retry-after"]))
        assert http.get("/pets").status_code == 200


def test_rate_limit_retry_after_rounds_up_to_whole_seconds(
    petstore_server: StartServer, fake_clock: FakeClock
) -> None:
    srv = petstore_server(seed_pets=1, clock=fake_clock)
    srv.faults.rate_limit = 0.4  # one request per 2.5 s
    with client_for(srv) as http:
        assert http.get("/pets").status_code == 200
        fake_clock.sleep(0.5)
        refused = http.get("/pets")
        assert refused.status_code == 429
        assert refused.headers["retry-after"] == "2"  # 2.0 s left, exactly
        fake_clock.sleep(1.9)
        assert http.get("/pets").headers["retry-after"] == "1"  # 0.1 s left, rounded up
        fake_clock.sleep(0.1)
        assert http.get("/pets").status_code == 200


def test_fail_after_store_answers_500_but_the_pet_is_stored(
    srv: RunningServer, http: httpx.Client
) -> None:
    srv.faults.fail_after_store_rate = 1.0
    response = http.post("/pets", json={"name": "Ghost", "categoryId": 9})
    assert response.status_code == 500
    assert response.json() == error(
        500, "internal_error", "injected fault: the pet was stored but the answer failed"
    )
    assert srv.store.get(31) == Pet(31, "Ghost", 9, None)
    assert http.get("/pets").status_code == 200  # GETs are not affected
