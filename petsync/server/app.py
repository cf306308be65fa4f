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
import json
import logging
import secrets
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from starlette.applications import Starlette
from starlette.exceptions import HTTPException
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Mount, Route, Router

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.interface import (
    CURSOR_HEADER,
    GET_PET_SUNSET,
    LIMIT_DEFAULT,
    LIMIT_MAX,
    LIMIT_MIN,
    SERVER_PAGINATION_STYLES,
    VERSION_SEGMENT,
    ServerPagination,
)
from petsync.core.models import INT64_MAX
from petsync.server.faults import Faults, TokenBucket
from petsync.server.openapi import build_openapi
from petsync.server.store import PetStore, Row, StoreFullError
from petsync.server.validation import (
    BadRequest,
    encode_cursor,
    parse_new_pet,
    parse_pet_id,
    query_after,
    query_cursor,
    query_int,
    query_status,
)

logger = logging.getLogger(__name__)


API_PREFIX = VERSION_SEGMENT
MAX_BODY_BYTES = 1024 * 1024
# getPet is scheduled for removal on 5 December 2030 (interface, Versioning 3). The
# interface gives no deprecation date; 1 January 2025 stands for "already deprecated".
DEPRECATION_HEADER = "@1735689600"
SUNSET_HEADER = GET_PET_SUNSET

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
        """Wrap an operation: the latency, faults, then the key, then the handler; errors
        become Error.

        A read's answer is made while its latency runs (started first, at the request's
        arrival), as a far server works while the network carries the answer back: requests
        that wake together then queue only for their sending, not for this one thread's
        work on each (at 8 concurrent pages of 20 ms that queue added 3 to 5 ms a page). A
        write waits its latency out first, so nothing is stored sooner than a far request
        would arrive.
        """

        async def endpoint(request: Request) -> Response:
            latency = self.faults.latency_ms / 1000.0
            if latency <= 0:
                return await self._answer(handler, request)
            if request.method != "GET":
                await self._sleep(latency)
                return await self._answer(handler, request)
            waited = asyncio.ensure_future(self._sleep(latency))
            try:
                await asyncio.sleep(0)  # the wait's timer is set before the work begins
                answer = await self._answer(handler, request)
                await waited
            finally:
                waited.cancel()  # (done already, unless the request itself was cancelled)
            return answer

        return endpoint

    async def _answer(self, handler: Endpoint, request: Request) -> Response:
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

    # -- operations --------------------------------------------------------------------------

    async def pets(self, request: Request) -> Response:
        if request.method == "POST":
            return await self.create_pet(request)
        return await self.list_pets(request)

    async def list_pets(self, request: Request) -> Response:
        query = request.query_params
        limit = query_int(query, "limit", LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT)
        status = query_status(query)
        size = min(limit, self.config.page_cap) if self.config.page_cap else limit
        style = self.config.pagination
        headers: dict[str, str] = {}
        if style in ("link", "cursor"):
            after = query_after(query) if style == "link" else query_cursor(query)
            rows = self.store.page_after(after, size, status)
            if rows and len(rows) == size:
                last = rows[-1][0]
                if style == "link":
                    params = f"limit={limit}" + (f"&status={status}" if status else "")
                    headers["Link"] = f'<{API_PREFIX}/pets?{params}&after={last}>; rel="next"'
                else:
                    headers[CURSOR_HEADER] = encode_cursor(last)
        elif style == "offset":
            offset = query_int(query, "offset", 0, INT64_MAX, 0)
            rows = self.store.page_offset(offset, size, status)
        elif style == "page":
            page = query_int(query, "page", 1, INT64_MAX, 1)
            offset = (page - 1) * size
            rows = self.store.page_offset(offset, size, status) if offset <= INT64_MAX else []
        else:  # "none": only limit; anything else is ignored
            rows = self.store.page_after(None, size, status)
        faults = self.faults
        body = _render_rows(rows, faults.extra_fields_of if faults.extra_fields else None)
        return Response(body, 200, headers=headers, media_type="application/json")

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
        pet_id = parse_pet_id(raw)
        headers = {"Deprecation": DEPRECATION_HEADER, "Sunset": SUNSET_HEADER}
        # A petId that is not an int64 names no animal: 404, the only failure the interface
        # lists for getPet besides 401.
        pet = self.store.get(pet_id) if pet_id is not None else None
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
        elif exc.status_code == 405:
            allowed = ", ".join(sorted((exc.headers or {}).get("Allow", "").split(", ")))
            path = request.url.path[:80]
            message = f"method {request.method} is not allowed on {path!r}; use {allowed}"
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


def _render_rows(rows: list[Row], extra: Callable[[int], dict[str, Any]] | None = None) -> bytes:
    """A Pets array; ``status`` left out when the pet has none (like the Pet model does).

    ``extra``: each pet also carries the fields this gives for its id (beyond the interface's).
    """
    items = [
        {"id": r[0], "name": r[1], "categoryId": r[2]}
        if r[3] is None
        else {"id": r[0], "name": r[1], "categoryId": r[2], "status": r[3]}
        for r in rows
    ]
    if extra:
        for item, row in zip(items, rows, strict=True):
            item.update(extra(row[0]))
    return _encode(items).encode("utf-8")
