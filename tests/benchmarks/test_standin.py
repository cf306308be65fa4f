"""The benchmarks' stand-in Petstore still speaks the interface as petsync reads it.

A smoke test, so the stand-in cannot rot while nobody runs the benchmarks: it starts
``benchmarks/standin.py`` as the benchmarks do (a subprocess on port 0), pages listings by
their Link headers, creates a pet, and is refused without the key. No timing is asserted.
"""

from __future__ import annotations

import os
import re
import secrets
import selectors
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

STANDIN = Path(__file__).resolve().parents[2] / "benchmarks" / "standin.py"
PETS = 300
STATUSES = ("available", "pending", "sold")
START_SECONDS = 30.0


def expected_ids(status: str | None) -> list[int]:
    """The seed's rule: every tenth pet (3, 13, ...) has no status, the rest cycle."""
    return [
        i
        for i in range(1, PETS + 1)
        if status is None or (i % 10 != 3 and STATUSES[(i - 1) % 3] == status)
    ]


@pytest.fixture(scope="module")
def standin() -> Iterator[tuple[str, str]]:
    """A running stand-in with PETS pets: its base URL and key."""
    key = "smoke-" + secrets.token_hex(8)
    proc = subprocess.Popen(
        [sys.executable, str(STANDIN), "--pets", str(PETS), "--port", "0"],
        env=dict(os.environ, PETSYNC_API_KEY=key),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdout is not None
    try:
        with selectors.DefaultSelector() as selector:
            selector.register(proc.stdout, selectors.EVENT_READ)
            deadline = time.monotonic() + START_SECONDS
            line = ""
            while "http://" not in line and time.monotonic() < deadline:
                if selector.select(timeout=deadline - time.monotonic()):
                    line = proc.stdout.readline()
                    if not line:
                        break
        url = re.search(r"http://\S+", line)
        assert url is not None, f"the stand-in did not start (exit {proc.poll()})"
        yield url.group(0), key
    finally:
        proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()


def page_all(client: httpx.Client, url: str, max_pages: int = 100) -> tuple[list[int], int]:
    """Follow rel="next" links from ``url``; every pet's id in order, and the pages fetched."""
    ids: list[int] = []
    pages = 0
    next_url: str | None = url
    while next_url is not None:
        pages += 1
        assert pages <= max_pages, "the stand-in's next links never end"
        response = client.get(next_url)
        assert response.status_code == 200
        assert response.headers["content-type"] == "application/json"
        pets = response.json()
        ids += [pet["id"] for pet in pets]
        link = response.links.get("next")
        next_url = str(response.url.join(link["url"])) if link else None
    return ids, pages


@pytest.mark.parametrize("status", ["sold", None], ids=["one-status", "unfiltered"])
def test_link_paging_returns_exactly_the_listings_pets(
    standin: tuple[str, str], status: str | None
) -> None:
    base, key = standin
    query = "limit=100" + (f"&status={status}" if status else "")
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        ids, pages = page_all(client, f"{base}/pets?{query}")
        if status is not None:
            pets = client.get(f"{base}/pets?{query}").json()
            assert {pet["status"] for pet in pets} == {status}
    assert ids == expected_ids(status)
    assert pages == len(ids) // 100 + 1  # full pages link on; the last is short or empty


def test_pages_asked_another_way_are_rendered_on_demand(standin: tuple[str, str]) -> None:
    base, key = standin
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        ids, _ = page_all(client, f"{base}/pets?status=pending&limit=7")
    assert ids == expected_ids("pending")


def test_post_creates_a_pet_with_a_new_id(standin: tuple[str, str]) -> None:
    base, key = standin
    body = {"name": 'Zoë "Z", the second', "categoryId": 2**53 + 3, "status": "pending"}
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        response = client.post(f"{base}/pets", json=body)
        again = client.post(f"{base}/pets", json={"name": "Rex", "categoryId": 1})
        refused = client.post(f"{base}/pets", json={"name": "Rex"})
    assert response.status_code == 201
    created = response.json()
    assert created == {**body, "id": created["id"]}
    assert created["id"] > PETS
    assert again.status_code == 201 and again.json()["id"] == created["id"] + 1
    assert "status" not in again.json()
    assert refused.status_code == 400 and refused.json()["status"] == 400


def test_a_short_request_after_many_posts_is_still_answered(standin: tuple[str, str]) -> None:
    # After createPets the stand-in waits for a whole head and body at once; a shorter
    # request on the same connection must still get through (after a short wait).
    base, key = standin
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=30) as client:
        for i in range(20):
            response = client.post(f"{base}/pets", json={"name": f"Rex {i}", "categoryId": 1})
            assert response.status_code == 201
        assert client.get(f"{base}/pets/1").status_code == 200
        assert client.get(f"{base}/pets?limit=100&status=sold").status_code == 200


@pytest.mark.parametrize("auth", [None, "Bearer wrong-key"], ids=["missing", "wrong"])
def test_requests_without_the_key_get_401_error_bodies(
    standin: tuple[str, str], auth: str | None
) -> None:
    base, _ = standin
    headers = {"Authorization": auth} if auth else {}
    response = httpx.get(f"{base}/pets?limit=100&status=sold", headers=headers, timeout=30)
    assert response.status_code == 401
    body = response.json()
    assert body["status"] == 401 and body["code"] and body["message"]


def test_pipelined_requests_are_answered_in_order_until_connection_close(
    standin: tuple[str, str],
) -> None:
    base, key = standin
    host, port = base.split("//")[1].split("/")[0].split(":")
    body = b'{"name":"Pipelined","categoryId":7}'
    auth = f"Authorization: Bearer {key}\r\n".encode()
    requests = (
        b"GET /v1/pets?limit=100&status=sold HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
        b"GET /v1/pets?status=sold&limit=2 HTTP/1.1\r\nHost: x\r\n" + auth + b"\r\n"
        b"POST /v1/pets HTTP/1.1\r\nHost: x\r\n"
        + auth
        + b"Content-Length: "
        + str(len(body)).encode()
        + b"\r\nConnection: close\r\n\r\n"
        + body
    )
    received = b""
    with socket.create_connection((host, int(port)), timeout=30) as sock:
        sock.sendall(requests[:-10])  # the last body arrives in a second write
        sock.sendall(requests[-10:])
        for _ in range(1000):  # bounded; the server closes after the last answer
            chunk = sock.recv(65536)
            if not chunk:
                break
            received += chunk
    statuses = re.findall(rb"HTTP/1\.1 (\d{3}) ", received)
    assert statuses == [b"200", b"200", b"201"]
    assert received.endswith(b',"name":"Pipelined","categoryId":7}')


def test_latency_is_slept_before_each_response_on_the_connections_thread() -> None:
    import importlib.util
    import threading

    spec = importlib.util.spec_from_file_location("standin_module", STANDIN)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    server = module.StandIn(module.Catalogue(PETS), "latency-key")
    slept: list[float] = []
    with socket.create_server(("127.0.0.1", 0)) as listener:
        client = socket.create_connection(listener.getsockname(), timeout=30)
        accepted, _ = listener.accept()
    thread = threading.Thread(
        target=module.serve_connection, args=(server, accepted, 0.02, slept.append)
    )
    thread.start()
    request = (
        b"GET /v1/pets?limit=100 HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer latency-key\r\n\r\n"
    )
    with client:
        for _ in range(2):  # two requests, one after the other, on one connection
            client.sendall(request)
            received = b""
            for _ in range(1000):  # bounded: until the head and its Content-Length came
                received += client.recv(65536)
                head, _, body = received.partition(b"\r\n\r\n")
                length = re.search(rb"Content-Length: (\d+)", head)
                if length and len(body) == int(length.group(1)):
                    break
            assert received.startswith(b"HTTP/1.1 200 OK")
    thread.join(timeout=30)
    assert slept == [0.02, 0.02]


@pytest.mark.parametrize("script", ["baseline_list_loop.py", "baseline_curl_loop.py"])
def test_the_floors_count_every_pet_with_a_status(standin: tuple[str, str], script: str) -> None:
    base, key = standin
    done = subprocess.run(
        [sys.executable, str(STANDIN.parent / script)],
        env=dict(os.environ, PETSYNC_BASE_URL=base, PETSYNC_API_KEY=key),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert int(done.stdout) == sum(len(expected_ids(s)) for s in STATUSES)
