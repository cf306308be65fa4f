"""Shared fixtures: a fake clock for retries and rate limits, and the live reference server."""

from __future__ import annotations

import pytest


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
