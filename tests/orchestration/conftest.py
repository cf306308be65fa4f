"""Dagster's in-process runs install their own SIGINT/SIGTERM handlers and leave them set:
each test here gets the process's handlers back, so a later test's signals mean what they
meant before (the import's own stop handling reads them)."""

from __future__ import annotations

import signal
from collections.abc import Iterator

import pytest


@pytest.fixture(autouse=True)
def restore_signal_handlers() -> Iterator[None]:
    saved = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}
    yield
    for sig, handler in saved.items():
        signal.signal(sig, handler)
