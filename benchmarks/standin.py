"""A stand-in Petstore for client benchmarks: listPets answered from pre-rendered responses.

``petsync serve`` is a real ASGI stack and spends about 2.5 ms per page; against it the server
sets the pace and hides what a client costs. This server renders every listPets page of a
catalogue of N pets once, at start-up, as the complete HTTP response (status line, headers,
body), keyed by request target. Serving a page is then a blocking ``recv``, a few byte
searches, one dictionary look-up and one ``sendall``, on a thread per connection; the
benchmarks read its measured cost per request from ``GET /_stats`` and print it beside the
client's time per page.

    PETSYNC_API_KEY=bench-key python benchmarks/standin.py --pets 100000 --port 0
    # prints: Stand-in Petstore at http://127.0.0.1:PORT/v1 (...)

``--latency-ms MS`` sleeps that long before each response, on the connection's own thread
(the latency scenarios: a far API whose catalogue is large, each connection waiting alone).

What it speaks (as ``petsync serve --pagination link`` does, on loopback only):

* ``GET /v1/pets?limit=100[&status=S]``: Pets arrays in id order, per status or unfiltered,
  with an RFC 8288 ``Link: </v1/pets?limit=100[&status=S]&after=ID>; rel="next"`` header
  on every full page (keyset paging; the end is a short or empty page without one). Other
  ``limit``, ``after`` or parameter orders are answered too, rendered on demand (slower);
  ``limit`` outside 1..100, an unknown ``status`` or a bad ``after`` answer 400.
* ``POST /v1/pets``: a NewPet body checked like the reference server does (``name`` a
  non-empty string, ``categoryId`` an int64, ``status`` absent or a PetStatus; a duplicated
  key is not refused), answered 201 with the created Pet and the next id (N+1, N+2, ...).
  Created pets are kept for ``GET /v1/pets/{id}`` but not added to the pre-rendered listings.
* ``GET /v1/pets/{id}`` (deprecated getPet), with ``Deprecation`` and ``Sunset`` headers.
* Every ``/v1`` request needs ``Authorization: Bearer <key>`` (the key from
  ``PETSYNC_API_KEY``); otherwise 401 with the interface's Error body. Errors are Error
  bodies with ``status`` equal to the HTTP status. HTTP/1.1 keep-alive, pipelining, and
  ``Connection: close``; request bodies need ``Content-Length`` (no chunked uploads).
* ``GET /_stats`` (no key): requests served, pages, posts, the process's CPU seconds
  (user + system) and wall seconds since start, as JSON. The benchmark reads it before and
  after a run: CPU delta over request delta is the stand-in's cost per request. The same
  totals go to stderr at exit (SIGTERM or Ctrl-C).

What it costs (2-core AMD EPYC VM, CPython 3.11, user + system CPU per request while a
client runs; the benchmarks print it on every run): about 35-45 us per pre-rendered page,
4-7% of the bare httpx loop's 600-900 us per page; about 55-70 us per createPet, near 10% of
a sequential httpx POST loop's ~550-650 us per request. httpx writes a POST's head and body
separately, so a server usually wakes twice per request; this one raises the socket's
low-water mark (``SO_RCVLOWAT``) while createPets keep coming, so it wakes once per
request (see :meth:`RequestStream.low_water`). The rest is mostly the machine's price of a
wake-up: its Python work is about 10 us per POST and 2 us per page when warm.

The catalogue mirrors the reference server's seed (``petsync serve --seed-pets N``): pet ``i``
(id ``i``) is a pure function of ``i`` (:func:`petsync.server.seed.seed_row`, imported, not
copied); every tenth pet has no status (it is listed only unfiltered), every seventh has an
awkward name (commas, quotes, newlines, non-ASCII, emoji, a leading ``=``), and every
fiftieth a categoryId beyond 2**53.
"""

from __future__ import annotations

import argparse
import hmac
import json
import os
import re
import resource
import secrets
import signal
import socket
import struct
import sys
import threading
import time
from array import array
from bisect import bisect_right
from collections.abc import Callable
from typing import NamedTuple
from urllib.parse import parse_qs, urlsplit

from petsync.server.seed import STATUSES, seed_row, seed_rows
from petsync.server.store import Row

API_PREFIX = "/v1"
PAGE_LIMIT = 100  # the limit the benchmarks page with: these pages are pre-rendered
LIMIT_MIN, LIMIT_MAX, LIMIT_DEFAULT = 1, 100, 20  # interface, Limits
INT64_MIN, INT64_MAX = -(2**63), 2**63 - 1
MAX_HEAD_BYTES = 16 * 1024
MAX_BODY_BYTES = 1024 * 1024
STATS_TARGET = b"/_stats"
PETS_TARGET = b"/v1/pets"
QUICK_POST = b"POST /v1/pets HTTP/1.1\r\n"
RECV_BYTES = 65536
IDLE_SECONDS = 600
LOW_WATER_WAIT_US = 20_000  # the longest a raised low-water mark may delay a short request
READY_LINE = "Stand-in Petstore at "
DEPRECATION = "@1735689600"  # as the reference server says it for getPet
SUNSET = "Thu, 05 Dec 2030 00:00:00 GMT"  # interface, Versioning 3


# -- rendering ------------------------------------------------------------------------------

_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), check_circular=False).encode

REASONS = {
    200: "OK",
    201: "Created",
    400: "Bad Request",
    401: "Unauthorized",
    404: "Not Found",
    405: "Method Not Allowed",
    413: "Content Too Large",
    431: "Request Header Fields Too Large",
    501: "Not Implemented",
}
ERROR_CODES = {
    400: "invalid_request",
    401: "unauthorized",
    404: "not_found",
    405: "method_not_allowed",
    413: "payload_too_large",
    431: "headers_too_large",
    501: "not_implemented",
}


def pet_json(row: Row) -> bytes:
    """A Pet, keys in the reference server's order; ``status`` left out when it has none."""
    pet_id, name, category, status = row
    obj: dict[str, object] = {"id": pet_id, "name": name, "categoryId": category}
    if status is not None:
        obj["status"] = status
    return _encode(obj).encode("utf-8")


def response(status: int, body: bytes, headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """A whole HTTP/1.1 response with a JSON body (keep-alive is HTTP/1.1's default)."""
    head = [
        f"HTTP/1.1 {status} {REASONS[status]}",
        "Content-Type: application/json",
        f"Content-Length: {len(body)}",
    ]
    head += [f"{name}: {value}" for name, value in headers]
    return ("\r\n".join(head) + "\r\n\r\n").encode("latin-1") + body


def error(status: int, message: str, headers: tuple[tuple[str, str], ...] = ()) -> bytes:
    """The interface's Error body, ``status`` equal to the HTTP status."""
    body = {"code": ERROR_CODES[status], "message": message, "status": status}
    return response(status, _encode(body).encode("utf-8"), headers)


def list_query(status: str | None, limit: int) -> str:
    """The query of a listing's first page, as the next links repeat it."""
    return f"limit={limit}" + (f"&status={status}" if status else "")


def page_response(rendered: list[bytes], query: str, limit: int, last_id: int | None) -> bytes:
    """A Pets page; a full page carries the next link (keyset: after the last id sent)."""
    body = b"[" + b",".join(rendered) + b"]"
    headers: tuple[tuple[str, str], ...] = ()
    if len(rendered) == limit and last_id is not None:
        headers = (("Link", f'<{API_PREFIX}/pets?{query}&after={last_id}>; rel="next"'),)
    return response(200, body, headers)


CREATED_HEAD = b"HTTP/1.1 201 Created\r\nContent-Type: application/json\r\nContent-Length: "
UNAUTHORIZED_MISSING = error(
    401,
    "missing API key: send the header Authorization: Bearer <API_KEY>",
    (("WWW-Authenticate", 'Bearer realm="petstore"'),),
)
UNAUTHORIZED_WRONG = error(
    401,
    "the API key is not valid for this server",
    (("WWW-Authenticate", 'Bearer realm="petstore"'),),
)


# -- the catalogue, pre-rendered ------------------------------------------------------------


class Catalogue:
    """Every listPets page at ``limit=100`` as response bytes, keyed by request target.

    The ids of each listing (unfiltered and per status) are kept in ``array('q')`` for the
    pages asked for any other way, which are rendered on demand from :func:`seed_row`.
    """

    def __init__(self, pets: int) -> None:
        self.pets = pets
        self.pages: dict[bytes, bytes] = {}
        self.ids: dict[str | None, array[int]] = {key: array("q") for key in (None, *STATUSES)}
        self.created: dict[int, bytes] = {}
        self.next_id = pets + 1
        pending: dict[str | None, list[bytes]] = {key: [] for key in self.ids}
        after: dict[str | None, int | None] = dict.fromkeys(self.ids)
        for row in seed_rows(pets):
            rendered = pet_json(row)
            for key in (None, row[3]) if row[3] is not None else (None,):
                self.ids[key].append(row[0])
                chunk = pending[key]
                chunk.append(rendered)
                if len(chunk) == PAGE_LIMIT:
                    self._add_page(key, chunk, after[key], row[0])
                    after[key] = row[0]
                    pending[key] = []
        for key, chunk in pending.items():  # the last page: short, maybe empty, no link
            self._add_page(key, chunk, after[key], None)

    def _add_page(
        self, status: str | None, chunk: list[bytes], after: int | None, last_id: int | None
    ) -> None:
        query = list_query(status, PAGE_LIMIT)
        target = f"{API_PREFIX}/pets?{query}" + ("" if after is None else f"&after={after}")
        self.pages[target.encode("ascii")] = page_response(chunk, query, PAGE_LIMIT, last_id)

    def render_page(self, status: str | None, limit: int, after: int | None) -> bytes:
        """A page asked for other than the pre-rendered way (any limit, order or ``after``)."""
        ids = self.ids[status]
        start = 0 if after is None else bisect_right(ids, after)
        chosen = ids[start : start + limit]
        rendered = [pet_json(seed_row(pet_id)) for pet_id in chosen]
        last = chosen[-1] if len(chosen) else None
        return page_response(rendered, list_query(status, limit), limit, last)

    def get_pet(self, pet_id: int) -> bytes | None:
        if 1 <= pet_id <= self.pets:
            return pet_json(seed_row(pet_id))
        return self.created.get(pet_id)


# -- requests -------------------------------------------------------------------------------

_INTEGER = re.compile(r"-?[0-9]{1,19}")


class BadRequest(Exception):
    """Answered 400 invalid_request with this message."""


def _single(query: dict[str, list[str]], name: str) -> str | None:
    values = query.get(name)
    if not values:
        return None
    if len(values) > 1:
        raise BadRequest(f"query parameter {name!r} given {len(values)} times; give it once")
    return values[0]


def _int_param(query: dict[str, list[str]], name: str, low: int, high: int) -> int | None:
    raw = _single(query, name)
    if raw is None:
        return None
    if not _INTEGER.fullmatch(raw) or not low <= int(raw) <= high:
        raise BadRequest(f"query parameter {name!r} must be an integer {low}..{high}, got {raw!r}")
    return int(raw)


def parse_list_query(query_text: str) -> tuple[str | None, int, int | None]:
    """``status``, ``limit`` and ``after`` of a listPets request, checked like the reference."""
    query = parse_qs(query_text, keep_blank_values=True)
    limit = _int_param(query, "limit", LIMIT_MIN, LIMIT_MAX)
    status = _single(query, "status")
    if status is not None and status not in STATUSES:
        raise BadRequest(f"query parameter 'status' must be one of {', '.join(STATUSES)}")
    after = _int_param(query, "after", INT64_MIN, INT64_MAX)
    return status, LIMIT_DEFAULT if limit is None else limit, after


def parse_new_pet(body: bytes) -> tuple[str, int, str | None]:
    """A NewPet body as ``(name, categoryId, status)``, or :class:`BadRequest` saying why."""
    try:
        obj = json.loads(body)  # a duplicated key is not refused here: the last one wins
    except (UnicodeDecodeError, ValueError, RecursionError) as exc:
        raise BadRequest(f"request body is not valid JSON: {str(exc)[:120]}") from exc
    if not isinstance(obj, dict):
        raise BadRequest("request body must be a JSON object (NewPet)")
    name, category, status = obj.get("name"), obj.get("categoryId"), obj.get("status")
    if not isinstance(name, str) or not name:
        raise BadRequest("'name' is required and must be a non-empty string")
    if type(category) is not int or not INT64_MIN <= category <= INT64_MAX:
        raise BadRequest("'categoryId' is required and must be an int64 integer")
    if "status" in obj and status not in STATUSES:
        raise BadRequest(f"'status' must be one of {', '.join(STATUSES)}")
    return name, category, status if isinstance(status, str) else None


def header(head: bytes, lowered: bytes, name: bytes) -> bytes | None:
    """The value of header ``name`` (lower case) in a request head, stripped; None if absent."""
    start = lowered.find(b"\r\n" + name + b":")
    if start < 0:
        return None
    start += len(name) + 3
    end = head.find(b"\r\n", start)
    return head[start : end if end >= 0 else len(head)].strip()


class StandIn:
    """The server's state: the catalogue, the key, and what it has served."""

    def __init__(self, catalogue: Catalogue, api_key: str) -> None:
        self.catalogue = catalogue
        self.pages = catalogue.pages
        self._bearer = b"bearer " + api_key.encode("utf-8")
        self._auth_line = b"\r\nAuthorization: Bearer " + api_key.encode("utf-8") + b"\r\n"
        # Counters and ids are shared by the connection threads: one lock guards them.
        self._lock = threading.Lock()
        self.requests = 0  # /v1 requests answered (stats requests excluded)
        self.list_pages = 0
        self.posts = 0
        self.started = time.monotonic()

    def authorized(self, head: bytes, lowered: bytes) -> bytes | None:
        """None when the bearer key is right, else the 401 response to send."""
        value = header(head, lowered, b"authorization")
        if value is None:
            return UNAUTHORIZED_MISSING
        # The scheme is case-insensitive, the token is not.
        given = value[:7].lower() + value[7:].strip() if len(value) > 7 else value.lower()
        if not hmac.compare_digest(given, self._bearer):
            return UNAUTHORIZED_WRONG
        return None

    def quick(self, data: bytes) -> bytes | int | None:
        """The hot paths, for one whole request sent as httpx sends it.

        A GET of a pre-rendered page: the page. A createPet: the response when its body came
        too, else the body's length (the caller waits for exactly that many bytes). None sends
        the request the general way: several requests at once, another method or target, the
        key missing or written another way, ``Connection: close``, ``Transfer-Encoding``.
        """
        end = data.find(b"\r\n\r\n")
        if end < 0 or self._auth_line not in data[: end + 2]:
            return None
        lowered = data[:end].lower()
        if b"\r\nconnection: close" in lowered:
            return None
        if data.startswith(b"GET "):
            if end != len(data) - 4:
                return None
            page = self.pages.get(data[4 : data.find(b" ", 4)])
            if page is not None:
                with self._lock:
                    self.requests += 1
                    self.list_pages += 1
            return page
        if not data.startswith(QUICK_POST) or b"\r\ntransfer-encoding:" in lowered:
            return None
        at = lowered.find(b"\r\ncontent-length:")
        length_text = data[at + 17 : data.find(b"\r\n", at + 2)].strip() if at > 0 else b""
        if not length_text.isdigit() or not 0 < int(length_text) <= MAX_BODY_BYTES:
            return None
        length, body = int(length_text), data[end + 4 :]
        if len(body) == length:
            return self.create_pet(body, quick=True)
        return length if not body else None

    def answer(self, head: Head, body: bytes) -> bytes:
        """The response to one request."""
        method, target = head.method, head.target
        if target == STATS_TARGET:
            return response(200, json.dumps(self.stats()).encode("ascii"))
        with self._lock:
            self.requests += 1
        refusal = self.authorized(head.raw, head.lowered)
        if refusal is not None:
            return refusal
        if method == b"GET":
            page = self.pages.get(target)
            if page is not None:
                with self._lock:
                    self.list_pages += 1
                return page
        elif method == b"POST" and target == PETS_TARGET:
            return self.create_pet(body)
        try:
            return self.route(method, target.decode("latin-1"), body)
        except BadRequest as exc:
            return error(400, str(exc))

    def route(self, method: bytes, target: str, body: bytes) -> bytes:
        parts = urlsplit(target)
        if parts.path == f"{API_PREFIX}/pets":
            if method == b"POST":
                return self.create_pet(body)
            if method != b"GET":
                return self.not_allowed(method, target)
            status, limit, after = parse_list_query(parts.query)
            with self._lock:
                self.list_pages += 1
            return self.catalogue.render_page(status, limit, after)
        if parts.path.startswith(f"{API_PREFIX}/pets/"):
            if method != b"GET":
                return self.not_allowed(method, target)
            raw = parts.path.rsplit("/", 1)[1]
            pet = self.catalogue.get_pet(int(raw)) if _INTEGER.fullmatch(raw) else None
            headers = (("Deprecation", DEPRECATION), ("Sunset", SUNSET))
            if pet is None:
                return error(404, f"no pet with id {raw[:40]!r}", headers)
            return response(200, pet, headers)
        return error(
            404,
            f"no such resource {parts.path[:80]!r}; the operations are GET and POST "
            f"{API_PREFIX}/pets and GET {API_PREFIX}/pets/{{petId}}",
        )

    def create_pet(self, body: bytes, *, quick: bool = False) -> bytes:
        """createPet; ``quick`` when the request came the hot way (not counted yet)."""
        try:
            name, category, status = parse_new_pet(body)
        except BadRequest as exc:
            if quick:
                with self._lock:
                    self.requests += 1
            return error(400, str(exc))
        with self._lock:
            self.requests += quick
            pet_id = self.catalogue.next_id
            self.catalogue.next_id += 1
            self.posts += 1
        rendered = pet_json((pet_id, name, category, status))
        self.catalogue.created[pet_id] = rendered
        return CREATED_HEAD + b"%d\r\n\r\n" % len(rendered) + rendered

    def not_allowed(self, method: bytes, target: bytes | str) -> bytes:
        path = target if isinstance(target, str) else target.decode("latin-1")
        allowed = "GET, POST" if urlsplit(path).path == f"{API_PREFIX}/pets" else "GET"
        return error(
            405,
            f"method {method.decode('latin-1')[:20]} is not allowed here; use {allowed}",
            (("Allow", allowed),),
        )

    def stats(self) -> dict[str, float | int]:
        usage = resource.getrusage(resource.RUSAGE_SELF)
        return {
            "pets": self.catalogue.pets,
            "requests": self.requests,
            "list_pages": self.list_pages,
            "posts": self.posts,
            "cpu_seconds": usage.ru_utime + usage.ru_stime,
            "user_seconds": usage.ru_utime,
            "system_seconds": usage.ru_stime,
            "wall_seconds": time.monotonic() - self.started,
            "max_rss_mib": usage.ru_maxrss / 1024,
        }


class Head(NamedTuple):
    """A parsed request head: what answering needs, and how long the body is."""

    method: bytes
    target: bytes
    raw: bytes
    lowered: bytes  # ``raw`` in lower case, for header look-ups
    length: int  # of the body (Content-Length)
    close: bool  # Connection: close


def parse_head(raw: bytes) -> Head | bytes:
    """A request head (without its blank line), or the error response that ends the connection."""
    line_end = raw.find(b"\r\n")
    parts = (raw if line_end < 0 else raw[:line_end]).split(b" ")
    if len(parts) != 3 or not parts[2].startswith(b"HTTP/1."):
        return error(400, "malformed request line")
    lowered = raw.lower()
    if header(raw, lowered, b"transfer-encoding") is not None:
        return error(501, "send the body with Content-Length")
    length_text = header(raw, lowered, b"content-length") or b"0"
    if not length_text.isdigit():
        return error(400, "bad Content-Length")
    length = int(length_text)
    if length > MAX_BODY_BYTES:
        return error(413, f"request body over {MAX_BODY_BYTES} bytes")
    close = header(raw, lowered, b"connection") == b"close"
    return Head(parts[0], parts[1], raw, lowered, length, close)


class RequestStream:
    """One connection's bytes: split into requests, each answered in order.

    A head whose body has not all come yet is kept parsed (httpx sends a POST's head and body
    in two writes, which often arrive in two reads).
    """

    def __init__(self, server: StandIn) -> None:
        self._server = server
        self._buffer = b""
        self._head: Head | None = None
        self._body_due = 0  # body bytes due after the head of a quick createPet
        self._quick_head = b""
        self._post_head = 0  # head size of the last quick createPet that came in two reads

    def low_water(self) -> int:
        """The bytes the next read should wait for (the socket's ``SO_RCVLOWAT``).

        1 in general. While createPets come with head and body in two writes (httpx), one
        byte more than the last head: the next read then wakes for head and body together,
        not twice. While a quick createPet's body is due: its length.
        """
        if self._body_due:
            return self._body_due
        return self._post_head + 1 if self._post_head else 1

    def idle(self) -> None:
        """Nothing came for a while: the next read wakes for any byte again."""
        self._post_head = 0

    def feed(self, data: bytes, write: Callable[[bytes], object]) -> bool:
        """Answer every request complete so far; False when the connection must close."""
        if self._body_due:  # a quick createPet's head came alone; httpx writes the body next
            if len(data) == self._body_due:
                self._body_due, self._post_head = 0, len(self._quick_head)
                write(self._server.create_pet(data, quick=True))
                return True
            data, self._body_due = self._quick_head + data, 0  # else the general way
        elif not self._buffer and self._head is None:
            quick = self._server.quick(data)
            if isinstance(quick, bytes):
                write(quick)
                if data[0] != 80:  # not a POST ("P")
                    self._post_head = 0
                return True
            if quick:  # the head of a createPet: its body is due
                self._body_due, self._quick_head = quick, data
                return True
        self._post_head = 0
        buffer = self._buffer + data if self._buffer else data
        while True:  # bounded: every pass consumes one request or stops
            head = self._head
            if head is None:
                end = buffer.find(b"\r\n\r\n")
                if end < 0:
                    if len(buffer) > MAX_HEAD_BYTES:
                        write(error(431, "request head too large"))
                        return False
                    break
                parsed = parse_head(buffer[:end])
                if isinstance(parsed, bytes):
                    write(parsed)
                    return False
                head = parsed
                buffer = buffer[end + 4 :]
            if len(buffer) < head.length:
                self._head = head  # wait for the rest of the body
                break
            self._head = None
            body, buffer = buffer[: head.length], buffer[head.length :]
            write(self._server.answer(head, body))
            if head.close:
                return False
            if not buffer:
                break
        self._buffer = buffer
        return True


def serve_connection(
    server: StandIn,
    sock: socket.socket,
    latency: float = 0.0,
    sleep: Callable[[float], object] = time.sleep,
) -> None:
    """One connection on its own thread: blocking reads and writes, until the client closes.

    Threads measured cheaper here than an asyncio Protocol (about 40 against 57 us of CPU
    per page on the 2-core benchmark machine): a blocking ``recv`` and ``sendall`` are the
    only system calls per request, with no event loop between them. While createPets come
    in two writes, reads wait for head and body together (``SO_RCVLOWAT``), bounded by
    ``LOW_WATER_WAIT_US``: a shorter request (or none) then ends the wait, and reads go
    back to waking for any byte. ``latency`` (seconds) is slept before each response, on
    this connection's thread only: concurrent clients wait side by side, as on a far API.
    """
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    # An idle client is dropped after IDLE_SECONDS, without a Python timeout (that would
    # add a poll() call before every read).
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", IDLE_SECONDS, 0))
    stream = RequestStream(server)
    recv, sendall, feed = sock.recv, sock.sendall, stream.feed
    if latency > 0:

        def sendall(data: bytes) -> None:
            sleep(latency)
            sock.sendall(data)

    low_water = 1
    try:
        while True:  # bounded by the client: it ends when the client closes or goes idle
            try:
                data = recv(RECV_BYTES)
            except BlockingIOError:
                if low_water == 1:
                    break  # idle for IDLE_SECONDS
                stream.idle()  # the raised mark was not reached in time: wake for any byte
                wanted = 1
            else:
                if not data or not feed(data, sendall):
                    break
                wanted = stream.low_water()
            if wanted != low_water:
                # Wake for a whole createPet, not for its head alone (see RequestStream).
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVLOWAT, wanted)
                wait = (0, LOW_WATER_WAIT_US) if wanted > 1 else (IDLE_SECONDS, 0)
                sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", *wait))
                low_water = wanted
    except OSError:
        pass  # reset, or idle too long: the connection is over either way
    finally:
        sock.close()


def serve(server: StandIn, port: int, latency: float = 0.0) -> None:
    """Accept loopback connections until SIGTERM or Ctrl-C; a thread per connection."""
    listener = socket.create_server(("127.0.0.1", port), backlog=128)
    bound = listener.getsockname()[1]
    catalogue = server.catalogue
    print(
        f"{READY_LINE}http://127.0.0.1:{bound}{API_PREFIX} ({catalogue.pets} pets, "
        f"{len(catalogue.pages)} pages pre-rendered, {latency * 1000:g} ms latency)",
        flush=True,
    )

    def stop(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:  # until a signal
            sock, _ = listener.accept()
            threading.Thread(
                target=serve_connection, args=(server, sock, latency), daemon=True
            ).start()
    except KeyboardInterrupt:
        pass
    finally:
        listener.close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pets", type=int, required=True, help="catalogue size (ids 1..N)")
    parser.add_argument("--port", type=int, default=0, help="loopback port; 0 picks a free one")
    parser.add_argument(
        "--latency-ms",
        type=float,
        default=0.0,
        help="milliseconds slept before each response (a far API); default 0",
    )
    options = parser.parse_args(argv)
    if options.pets < 0 or options.latency_ms < 0:
        parser.error("--pets and --latency-ms must be 0 or more")
    api_key = os.environ.get("PETSYNC_API_KEY") or ""
    if not api_key:
        api_key = "standin-" + secrets.token_hex(8)
        print(f"PETSYNC_API_KEY not set; clients must send this key: {api_key}", flush=True)
    began = time.monotonic()
    catalogue = Catalogue(options.pets)
    size = sum(map(len, catalogue.pages.values())) / 2**20
    print(
        f"built {len(catalogue.pages)} pages ({size:.0f} MiB) in {time.monotonic() - began:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    server = StandIn(catalogue, api_key)
    before = server.stats()
    serve(server, options.port, options.latency_ms / 1000)
    after = server.stats()
    served = max(after["requests"] - before["requests"], 1)
    cpu = after["cpu_seconds"] - before["cpu_seconds"]
    print(
        f"stand-in served {after['requests']} requests ({after['list_pages']} pages, "
        f"{after['posts']} posts) in {cpu:.2f} s CPU: {cpu / served * 1e6:.1f} us per request",
        file=sys.stderr,
        flush=True,
    )


if __name__ == "__main__":
    main()
