"""One listPets loop over one HTTP route: the candidates for the client's wire, side by side.

Follows the ``rel="next"`` links for the three statuses, one after another, decodes each
page with msgspec and drops it; prints the number of pets. Only the route differs:

* ``httpx``: ``httpx.Client.get`` (httpx's own transport, h11 and httpcore);
* ``curl-exchange``: petsync's :class:`CurlExchange` (libcurl), as the client sends every
  request: a method, a URL and header pairs prepared once in; status, headers, body out;
* ``pycurl``: a bare pycurl handle, headers split by hand: the floor of the libcurl route.

And the three listings at once, as the export runs them: on three threads (petsync's
exchange, or bare pycurl), or from one thread through libcurl's multi interface.

    PETSYNC_BASE_URL=http://127.0.0.1:8080/v1 PETSYNC_API_KEY=key python wire_loop.py pycurl
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Callable

import httpx
import msgspec
import pycurl

from petsync.client.wire import CurlExchange, WireLimits

BASE = os.environ.get("PETSYNC_BASE_URL", "")
HEADERS = {"Authorization": f"Bearer {os.environ.get('PETSYNC_API_KEY', '')}"}
HEADERS["Accept"] = "application/json"
LIMITS = WireLimits(total=60, connect=5, read=30, max_body_bytes=32 << 20)
NEXT = re.compile(r"<([^<>]*)>")
Fetch = Callable[[str], tuple[str | None, bytes]]


def httpx_route() -> Fetch:
    client = httpx.Client(headers=HEADERS)

    def fetch(url: str) -> tuple[str | None, bytes]:
        response = client.get(url)
        return response.headers.get("link"), response.content

    return fetch


def exchange_route() -> Fetch:
    exchange = CurlExchange(LIMITS)
    headers = [(k.encode(), v.encode()) for k, v in HEADERS.items()]

    def fetch(url: str) -> tuple[str | None, bytes]:
        answer = exchange.send("GET", url, headers, None)
        return answer.headers.get("link"), b"".join(answer.pieces)

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
    "curl-exchange": exchange_route,
    "pycurl": pycurl_route,
}
STATUSES = ("available", "pending", "sold")


def first_url(status: str) -> str:
    return f"{BASE}/pets?limit=100&status={status}"


def next_url(link: str | None) -> str | None:
    found = NEXT.search(link) if link else None
    return BASE.rsplit("/v1", 1)[0] + found.group(1) if found else None


def listing(fetch: Fetch, status: str) -> int:
    """One status's pages, one after another; the number of pets."""
    decoder = msgspec.json.Decoder()
    pets = 0
    url: str | None = first_url(status)
    while url:
        link, body = fetch(url)
        pets += len(decoder.decode(body))
        url = next_url(link)
    return pets


def in_threads(route: Callable[[], Fetch]) -> int:
    """The three listings at once, a thread and a route each (as the export runs them)."""
    counts: list[int] = []
    threads = [
        threading.Thread(target=lambda s=status: counts.append(listing(route(), s)))
        for status in STATUSES
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sum(counts)


def in_one_multi() -> int:
    """The three listings at once from one thread: libcurl's multi interface drives every
    transfer, so no thread waits for another's turn at the interpreter."""
    decoder = msgspec.json.Decoder()
    multi = pycurl.CurlMulti()
    bodies: dict[pycurl.Curl, list[bytes]] = {}
    lines: dict[pycurl.Curl, list[bytes]] = {}

    def start(handle: pycurl.Curl, url: str) -> None:
        bodies[handle], lines[handle] = [], []
        handle.setopt(pycurl.URL, url)
        handle.setopt(pycurl.WRITEFUNCTION, bodies[handle].append)
        handle.setopt(pycurl.HEADERFUNCTION, lines[handle].append)
        multi.add_handle(handle)

    for status in STATUSES:
        handle = pycurl.Curl()
        handle.setopt(pycurl.HTTPHEADER, [f"{k}: {v}" for k, v in HEADERS.items()])
        start(handle, first_url(status))
    pets, active = 0, len(STATUSES)
    while active:
        while multi.perform()[0] == pycurl.E_CALL_MULTI_PERFORM:
            pass
        queued = 1
        while queued:
            queued, done, failed = multi.info_read()
            if failed:
                raise RuntimeError(f"a transfer failed: {failed[0][2]}")
            for handle in done:
                multi.remove_handle(handle)
                pets += len(decoder.decode(b"".join(bodies[handle])))
                link = next(
                    (ln[5:].strip() for ln in lines[handle] if ln[:5].lower() == b"link:"), None
                )
                url = next_url(link.decode() if link else None)
                if url:
                    start(handle, url)
                else:
                    active -= 1
        if active:
            multi.select(1.0)
    return pets


CONCURRENT: dict[str, Callable[[], int]] = {
    "curl-exchange, 3 threads": lambda: in_threads(exchange_route),
    "pycurl, 3 threads": lambda: in_threads(pycurl_route),
    "pycurl multi, 1 thread": in_one_multi,
}


def main() -> None:
    name = sys.argv[1]
    if name in CONCURRENT:
        print(CONCURRENT[name]())
        return
    fetch = ROUTES[name]()
    print(sum(listing(fetch, status) for status in STATUSES))


if __name__ == "__main__":
    main()
