"""One listPets loop over one HTTP route: the candidates for the client's wire, side by side.

Follows the ``rel="next"`` links for the three statuses, one after another, decodes each
page with msgspec and drops it; prints the number of pets. Only the route differs:

* ``httpx``: ``httpx.Client.get`` (httpx's own transport, h11 and httpcore);
* ``httpx-curl``: ``httpx.Client.get`` over petsync's :class:`CurlTransport` (libcurl);
* ``curl-transport``: an ``httpx.Request`` handed to :class:`CurlTransport` directly, as
  petsync's client sends every request (no ``httpx.Client`` in between);
* ``pycurl``: a bare pycurl handle, headers split by hand: the floor of the libcurl route.

    PETSYNC_BASE_URL=http://127.0.0.1:8080/v1 PETSYNC_API_KEY=key python wire_loop.py pycurl
"""

from __future__ import annotations

import os
import re
import sys
from collections.abc import Callable

import httpx
import msgspec
import pycurl

from petsync.client.wire import CurlTransport, WireLimits

BASE = os.environ.get("PETSYNC_BASE_URL", "")
HEADERS = {"Authorization": f"Bearer {os.environ.get('PETSYNC_API_KEY', '')}"}
HEADERS["Accept"] = "application/json"
LIMITS = WireLimits(total=60, connect=5, read=30, max_body_bytes=32 << 20)
NEXT = re.compile(r"<([^<>]*)>")
Fetch = Callable[[str], tuple[str | None, bytes]]


def httpx_route(transport: httpx.BaseTransport | None = None) -> Fetch:
    client = httpx.Client(headers=HEADERS, transport=transport)

    def fetch(url: str) -> tuple[str | None, bytes]:
        response = client.get(url)
        return response.headers.get("link"), response.content

    return fetch


def transport_route() -> Fetch:
    transport = CurlTransport(LIMITS)
    headers = httpx.Headers(HEADERS)

    def fetch(url: str) -> tuple[str | None, bytes]:
        response = transport.handle_request(httpx.Request("GET", url, headers=headers))
        body = b"".join(response.iter_raw())
        return response.headers.get("link"), body

    return fetch


def pycurl_route() -> Fetch:
    curl = pycurl.Curl()
    curl.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in HEADERS.items()])

    def fetch(url: str) -> tuple[str | None, bytes]:
        body: list[bytes] = []
        lines: list[bytes] = []
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.WRITEFUNCTION, body.append)
        curl.setopt(pycurl.HEADERFUNCTION, lines.append)
        curl.perform()
        link = next((ln[5:].strip() for ln in lines if ln[:5].lower() == b"link:"), None)
        return (link.decode() if link else None), b"".join(body)

    return fetch


ROUTES: dict[str, Callable[[], Fetch]] = {
    "httpx": httpx_route,
    "httpx-curl": lambda: httpx_route(CurlTransport(LIMITS)),
    "curl-transport": transport_route,
    "pycurl": pycurl_route,
}


def main() -> None:
    fetch = ROUTES[sys.argv[1]]()
    decoder = msgspec.json.Decoder()
    pets = 0
    for status in ("available", "pending", "sold"):
        url: str | None = f"{BASE}/pets?limit=100&status={status}"
        while url:
            link, body = fetch(url)
            pets += len(decoder.decode(body))
            found = NEXT.search(link) if link else None
            url = BASE.rsplit("/v1", 1)[0] + found.group(1) if found else None
    print(pets)


if __name__ == "__main__":
    main()
