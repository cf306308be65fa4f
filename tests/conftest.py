"""Shared fixtures: a fake clock for retries and rate limits, and the live reference server."""

from __future__ import annotations

import os
import secrets
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from petsync.core.apikey import ApiKey
from petsync.server.app import ServerConfig
from petsync.server.runner import RunningServer, start_server

if TYPE_CHECKING:
    from tests.client.loopback import Harness


class FakeClock:
    """A monotonic clock that only moves when something sleeps on it: no test waits for real."""

    def __init__(self, start: float = 1_000.0) -> None:
        self.now = start
        self.sleeps: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += max(0.0, seconds)


@pytest.fixture
def fake_clock() -> FakeClock:
    return FakeClock()


StartServer = Callable[..., RunningServer]


@pytest.fixture
def petstore_server() -> Iterator[StartServer]:
    """Factory of live reference servers on 127.0.0.1, port 0, each with a random key.

    ``srv = petstore_server(seed_pets=250, pagination="offset", clock=fake_clock)`` takes
    the fields of :class:`ServerConfig` (``api_key`` optional) plus ``clock``; every server
    started is stopped at teardown. Start-up is bounded by the runner's own timeout.
    """
    started: list[RunningServer] = []

    def start(*, clock: Callable[[], float] | None = None, **fields: Any) -> RunningServer:
        fields.setdefault("api_key", ApiKey("test-key-" + secrets.token_hex(8)))
        config = ServerConfig(**fields)
        srv = start_server(config, clock=clock) if clock is not None else start_server(config)
        started.append(srv)
        return srv

    yield start
    for srv in started:
        srv.stop()


@pytest.fixture
def live(fake_clock: FakeClock) -> Iterator[Harness]:
    """Loopback socket servers and clients for one test, closed at teardown.

    See :class:`tests.client.loopback.Harness`: raw-socket servers on 127.0.0.1 that drip,
    inflate or proxy, for the client's deadline, size and proxy tests.
    """
    from tests.client.loopback import Harness  # it builds on FakeClock, defined here

    harness = Harness(fake_clock)
    yield harness
    harness.close()


@pytest.fixture
def isolated(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """Work in tmp_path with no config file or key from the developer's machine."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / ".config"))
    for name in list(os.environ):
        if name.startswith("PETSYNC_"):
            monkeypatch.delenv(name)
    return tmp_path
