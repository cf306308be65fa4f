"""Bearer authentication: the only place the API key is put on the wire."""

from __future__ import annotations

from collections.abc import Generator

import httpx

from petsync.core.apikey import ApiKey


class BearerAuth(httpx.Auth):
    """Sends ``Authorization: Bearer <key>`` (interface, Authentication 1) on every request."""

    def __init__(self, key: ApiKey) -> None:
        self._key = key

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._key.reveal()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(***)"
