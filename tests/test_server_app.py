"""The reference server over real HTTP: validation, auth, errors, getPet, faults."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from conftest import FakeClock, StartServer
from petsync.models import INT64_MAX, INT64_MIN, Pet
from petsync.server.runner import RunningServer


@pytest.fixture
def srv(petstore_server: StartServer) -> RunningServer:
    return petstore_server(seed_pets=30)


@pytest.fixture
def http(srv: RunningServer) -> Iterator[httpx.Client]:
    headers = {"Authorization": f"Bearer {srv.api_key.reveal()}"}
    with httpx.Client(base_url=srv.base_url, headers=headers, timeout=10) as client:
        yield client


def error(status: int, code: str, message: str) -> dict[str, object]:
    return {"code": code, "message": message, "status": status}


def test_fixture_serves_under_v1_on_loopback(srv: RunningServer) -> None:
    assert srv.base_url == f"http://127.0.0.1:{srv.port}/v1"
    assert srv.store.count() == 30
