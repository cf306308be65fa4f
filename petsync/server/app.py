"""The reference Petstore as a Starlette app: the interface's three operations under ``/v1``.

Where the interface is silent this server makes the choices the README lists ("not shown"):
listPets pages with an RFC 8288 ``Link: <...>; rel="next"`` header over a keyset cursor
(``after`` = the last id sent), so pets created while a client pages neither repeat nor
vanish; ``limit`` outside 1..100 and an unknown ``status`` filter answer 400; a pet created
without a status keeps none; every error is the interface's Error with ``status`` equal to
the HTTP status and one of the codes in :data:`ERROR_CODES`.

Faults (:class:`~petsync.server.faults.Faults`) are read on every request, before the key
is checked, the way a gateway in front of a real service sheds load.
"""

from __future__ import annotations

import asyncio
import base64
import binascii
import json
import logging
import re
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.datastructures import QueryParams
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, Router

from petsync.apikey import ApiKey
from petsync.errors import ConfigError
from petsync.models import INT64_MAX, INT64_MIN, STATUS_VALUES, NewPet, PetStatus, is_int64
from petsync.server import SERVER_PAGINATION_STYLES, ServerPagination
from petsync.server.faults import Faults, TokenBucket
from petsync.server.openapi import build_openapi
from petsync.server.store import PetStore, Row, StoreFullError

logger = logging.getLogger(__name__)


API_PREFIX = "/v1"
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20  # interface, Limits
MAX_BODY_BYTES = 1024 * 1024
CURSOR_HEADER = "X-Next-Cursor"  # same values as petsync.config (the client's side)
CURSOR_PARAM = "cursor"
# getPet is scheduled for removal on 5 December 2030 (interface, Versioning 3). The
# interface gives no deprecation date; 1 January 2025 stands for "already deprecated".
DEPRECATION_HEADER = "@1735689600"
SUNSET_HEADER = "Thu, 05 Dec 2030 00:00:00 GMT"

# The Error codes this server sends (the interface leaves the set "not shown").
ERROR_CODES: dict[int, str] = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    429: "rate_limited",
    500: "internal_error",
    503: "unavailable",
}

_INTEGER = re.compile(r"-?[0-9]{1,19}")
_CURSOR_PREFIX = "k1:"
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode


@dataclass(frozen=True)
class ServerConfig:
    """How one reference server behaves. ``faults`` stays mutable: switch it while running."""

    api_key: ApiKey
    pagination: ServerPagination = "link"
    db_path: Path | None = None
    seed_pets: int = 0
    faults: Faults = field(default_factory=Faults)
    page_cap: int | None = None

    def __post_init__(self) -> None:
        if self.pagination not in SERVER_PAGINATION_STYLES:
            raise ConfigError(
                f"unknown server pagination style {self.pagination!r}; "
                f"use one of: {', '.join(SERVER_PAGINATION_STYLES)}"
            )
        if self.seed_pets < 0:
            raise ConfigError(f"seed_pets must be 0 or more, got {self.seed_pets}")
        if self.page_cap is not None and self.page_cap < 1:
            raise ConfigError(f"page_cap must be at least 1, got {self.page_cap}")


class BadRequest(Exception):
    """A request the server answers 400 invalid_request; the message says what to fix."""


def error_response(status: int, message: str, headers: Mapping[str, str] | None = None) -> Response:
    """The interface's Error body, with ``status`` equal to the HTTP status."""
    body = {"code": ERROR_CODES.get(status, f"http_{status}"), "message": message, "status": status}
    return Response(_encode(body), status, headers=headers, media_type="application/json")


def _json_response(
    body: object, status: int = 200, headers: dict[str, str] | None = None
) -> Response:
    return Response(_encode(body), status, headers=headers, media_type="application/json")


Endpoint = Callable[[Request], Awaitable[Response]]


class PetstoreApp:
    """The endpoints, bound to one store, config and clock."""

    def __init__(
        self,
        config: ServerConfig,
        store: PetStore,
        clock: Callable[[], float],
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.config = config
        self._sleep = sleep
        self.store = store
        self.faults = config.faults
        self._bucket = TokenBucket(config.faults, clock)
        self._expected = config.api_key.reveal().encode("utf-8")

    # -- the gate every operation passes ---------------------------------------------------

    async def _gate(self, request: Request) -> Response | None:
        faults = self.faults
        if faults.latency_ms > 0:
            await self._sleep(faults.latency_ms / 1000.0)
        if faults.roll(faults.fail_rate):
            return error_response(503, "injected fault: the service is unavailable; retry later")
        wait = self._bucket.take()
        if wait is not None:
            return error_response(
                429,
                f"rate limit of {faults.rate_limit:g} requests per second exceeded; "
                f"retry after {wait} s",
                {"Retry-After": str(wait)},
            )
        return self._authenticate(request)

    def _authenticate(self, request: Request) -> Response | None:
        header = request.headers.get("authorization")
        challenge = {"WWW-Authenticate": 'Bearer realm="petstore"'}
        if header is None:
            return error_response(
                401, "missing API key: send the header Authorization: Bearer <API_KEY>", challenge
            )
        scheme, _, token = header.partition(" ")
        # Starlette decodes headers as latin-1: encoding back gives the bytes the client sent.
        given = token.strip().encode("latin-1")
        if scheme.lower() != "bearer" or not secrets.compare_digest(given, self._expected):
            return error_response(401, "the API key is not valid for this server", challenge)
        return None

    def guarded(self, handler: Endpoint) -> Endpoint:
        """Wrap an operation: faults, then the key, then the handler; errors become Error."""

        async def endpoint(request: Request) -> Response:
            refusal = await self._gate(request)
            if refusal is not None:
                return refusal
            try:
                return await handler(request)
            except BadRequest as exc:
                return error_response(400, str(exc))
            except StoreFullError:
                return error_response(500, "no id left to assign: a pet holds id 2**63-1")
            except Exception:
                logger.exception("request_failed", extra={"fields": {"path": request.url.path}})
                return error_response(500, "internal error; see the server log")

        return endpoint

    # -- operations --------------------------------------------------------------------------

    async def pets(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.create_pet(request)
        return await self.list_pets(request)

    async def list_pets(self, request: Request) -> Response:
        query = request.query_params
        limit = _query_int(query, "limit", LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT)
        status = _query_status(query)
        size = min(limit, self.config.page_cap) if self.config.page_cap else limit
        style = self.config.pagination
        headers: dict[str, str] = {}
        if style in ("link", "cursor"):
            after = _query_after(query) if style == "link" else _query_cursor(query)
            rows = self.store.page_after(after, size, status)
            if rows and len(rows) == size:
                last = rows[-1][0]
                if style == "link":
                    params = f"limit={limit}" + (f"&status={status}" if status else "")
                    headers["Link"] = f'<{API_PREFIX}/pets?{params}&after={last}>; rel="next"'
                else:
                    headers[CURSOR_HEADER] = encode_cursor(last)
        elif style == "offset":
            offset = _query_int(query, "offset", 0, INT64_MAX, 0)
            rows = self.store.page_offset(offset, size, status)
        elif style == "page":
            page = _query_int(query, "page", 1, INT64_MAX, 1)
            offset = (page - 1) * size
            rows = self.store.page_offset(offset, size, status) if offset <= INT64_MAX else []
        else:  # "none": only limit; anything else is ignored
            rows = self.store.page_after(None, size, status)
        return Response(_render_rows(rows), 200, headers=headers, media_type="application/json")

    async def create_pet(self, request: Request) -> Response:
        body = await _read_body(request)
        if body is None:
            return error_response(413, f"request body over {MAX_BODY_BYTES} bytes")
        new_pet = parse_new_pet(body)
        pet = self.store.create(new_pet)
        if self.faults.roll(self.faults.fail_after_store_rate):
            return error_response(500, "injected fault: the pet was stored but the answer failed")
        return _json_response(pet.to_json(), 201)

    async def get_pet(self, request: Request) -> Response:
        raw = request.path_params["petId"]
        pet_id = int(raw) if _INTEGER.fullmatch(raw) else None
        headers = {"Deprecation": DEPRECATION_HEADER, "Sunset": SUNSET_HEADER}
        # A petId that is not an int64 names no animal: 404, the only failure the interface
        # lists for getPet besides 401.
        pet = self.store.get(pet_id) if pet_id is not None and is_int64(pet_id) else None
        if pet is None:
            return error_response(404, f"no pet with id {raw[:40]!r}", headers)
        return _json_response(pet.to_json(), 200, headers)

    async def openapi(self, request: Request) -> Response:
        return _json_response(build_openapi())


def create_app(
    config: ServerConfig,
    store: PetStore,
    *,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> Starlette:
    """The ASGI app of one reference server.

    ``clock`` drives the rate limiter and ``sleep`` the injected latency, so tests need not
    wait. ``/v1/openapi.json`` needs no key and sees no faults: it is public and no operation.
    """
    api = PetstoreApp(config, store, clock, sleep)
    routes = [
        Route("/pets", api.guarded(api.pets), methods=["GET", "POST"]),
        Route("/pets/{petId}", api.guarded(api.get_pet), methods=["GET"]),
        Route("/openapi.json", api.openapi, methods=["GET"]),
    ]

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, HTTPException)
        if exc.status_code == 404:
            path = request.url.path[:80]
            message = (
                f"no such resource {path!r}; the operations are GET and POST "
                f"{API_PREFIX}/pets and GET {API_PREFIX}/pets/{{petId}}"
            )
        else:
            message = str(exc.detail)
        return error_response(exc.status_code, message, exc.headers)

    # No trailing-slash redirects: a wrong path is a 404 Error, like any other error.
    api_router = Router(routes, redirect_slashes=False)
    app = Starlette(
        routes=[Mount(API_PREFIX, app=api_router)], exception_handlers={HTTPException: http_error}
    )
    app.router.redirect_slashes = False
    app.state.petstore = api
    return app


# -- request parsing -------------------------------------------------------------------------


def _single(query: QueryParams, name: str) -> str | None:
    values = query.getlist(name)
    if len(values) > 1:
        raise BadRequest(f"query parameter {name!r} given {len(values)} times; give it once")
    return values[0] if values else None


def _query_int(query: QueryParams, name: str, low: int, high: int, default: int) -> int:
    raw = _single(query, name)
    if raw is None:
        return default
    if not _INTEGER.fullmatch(raw) or not low <= int(raw) <= high:
        bound = f"from {low} to {high}" if high < INT64_MAX else f"of at least {low}"
        raise BadRequest(f"query parameter {name!r} must be an integer {bound}, got {raw[:40]!r}")
    return int(raw)


def _query_status(query: QueryParams) -> str | None:
    raw = _single(query, "status")
    if raw is None:
        return None
    if raw not in STATUS_VALUES:
        raise BadRequest(
            f"query parameter 'status' must be one of {', '.join(STATUS_VALUES)}, got {raw[:40]!r}"
        )
    return raw


def _query_after(query: QueryParams) -> int | None:
    raw = _single(query, "after")
    if raw is None:
        return None
    if not _INTEGER.fullmatch(raw) or not is_int64(int(raw)):
        raise BadRequest(f"query parameter 'after' must be an int64 pet id, got {raw[:40]!r}")
    return int(raw)


def encode_cursor(after: int) -> str:
    """The opaque token of the ``cursor`` style: the last id sent, base64url-wrapped."""
    return base64.urlsafe_b64encode(f"{_CURSOR_PREFIX}{after}".encode()).decode().rstrip("=")


def _query_cursor(query: QueryParams) -> int | None:
    raw = _single(query, CURSOR_PARAM)
    if raw is None:
        return None
    try:
        text = base64.urlsafe_b64decode(raw + "=" * (-len(raw) % 4)).decode("ascii")
    except (binascii.Error, UnicodeDecodeError, ValueError):
        text = ""
    number = text.removeprefix(_CURSOR_PREFIX)
    if not text.startswith(_CURSOR_PREFIX) or not _INTEGER.fullmatch(number):
        raise BadRequest(
            f"query parameter {CURSOR_PARAM!r} is not a cursor this server issued; "
            f"pass the value of the {CURSOR_HEADER} header unchanged"
        )
    return int(number)


async def _read_body(request: Request) -> bytes | None:
    """The request body, or None once it passes :data:`MAX_BODY_BYTES` (read no further)."""
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY_BYTES:
            return None
        chunks.append(chunk)
    return b"".join(chunks)


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _object_without_duplicates(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise ValueError(f"key {key[:40]!r} appears twice")
        obj[key] = value
    return obj


def parse_new_pet(body: bytes) -> NewPet:
    """Parse and validate a createPet body strictly, or raise :class:`BadRequest` saying why.

    Strict JSON: UTF-8 only, no NaN/Infinity, no duplicate keys. NewPet: ``name`` a non-empty
    string, ``categoryId`` an int64 integer (``1.0``, ``true`` and ``"1"`` are refused),
    ``status`` absent or one of the PetStatus values. Other keys are ignored.
    """
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadRequest(f"request body is not UTF-8 (byte {exc.start} is not)") from exc
    try:
        obj = json.loads(
            text,
            parse_constant=_reject_constant,
            object_pairs_hook=_object_without_duplicates,
        )
    except (ValueError, RecursionError) as exc:
        raise BadRequest(f"request body is not valid JSON: {str(exc)[:120]}") from exc
    if not isinstance(obj, dict):
        raise BadRequest(f"request body must be a JSON object (NewPet), got {_json_type(obj)}")
    if "name" not in obj:
        raise BadRequest("'name' is required")
    name = obj["name"]
    if not isinstance(name, str):
        raise BadRequest(f"'name' must be a string, got {_json_type(name)}")
    if not name:
        raise BadRequest("'name' must not be empty")
    try:
        name.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise BadRequest("'name' contains an unpaired surrogate escape") from exc
    if "categoryId" not in obj:
        raise BadRequest("'categoryId' is required")
    category = obj["categoryId"]
    if not is_int64(category):
        raise BadRequest(
            f"'categoryId' must be an integer from {INT64_MIN} to {INT64_MAX}, "
            f"got {_json_type(category)}"
        )
    status = None
    if "status" in obj:
        raw = obj["status"]
        if raw not in STATUS_VALUES:
            shown = repr(raw[:40]) if isinstance(raw, str) else _json_type(raw)
            raise BadRequest(f"'status' must be one of {', '.join(STATUS_VALUES)}, got {shown}")
        status = PetStatus(raw)
    return NewPet(name=name, categoryId=category, status=status)


def _json_type(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return f"the integer {value}" if len(str(value)) <= 40 else "an integer out of range"
    if isinstance(value, float):
        return f"the number {value!r}"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def _render_rows(rows: list[Row]) -> bytes:
    """A Pets array; ``status`` left out when the pet has none (like the Pet model does)."""
    items = [
        {"id": r[0], "name": r[1], "categoryId": r[2]}
        if r[3] is None
        else {"id": r[0], "name": r[1], "categoryId": r[2], "status": r[3]}
        for r in rows
    ]
    return _encode(items).encode("utf-8")
