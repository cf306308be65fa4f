"""SIGTERM and Ctrl-C around a job: the first asks it to stop cleanly, the second stops at once.

Schedulers stop jobs with SIGTERM (systemd, ``docker stop``, Kubernetes, ``timeout``), people
with Ctrl-C (SIGINT). :func:`stop_on_signals` wraps one job run: the first of those signals
becomes :meth:`~petsync.core.stop.StopRequest.request` (the job stops taking new work, lets
requests already sent finish within the grace period, writes its outputs and summary, and
exits 128 + the signal), announced by one line on stderr. A second signal exits at once
with 128 + its number after one more line: nothing more is written (an import's rows still
in flight stay ``sending`` in its journal, which the next run counts as uncertain).

Python runs signal handlers on the main thread between bytecodes, so the jobs keep their
main thread in waits with a timeout. The previous handlers come back when the block ends.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any, TextIO

from petsync.core.stop import DEFAULT_GRACE_SECONDS, StopRequest
from petsync.ops.logs import json_event_line

HANDLED_SIGNALS: tuple[signal.Signals, ...] = (signal.SIGTERM, signal.SIGINT)


def first_signal_line(name: str, grace_seconds: float) -> str:
    """The line shown when the first signal arrives.

    >>> print(first_signal_line("SIGTERM", 10))
    petsync: SIGTERM received: stopping after requests in flight (up to 10 s); again: stop now
    """
    return (
        f"petsync: {name} received: stopping after requests in flight (up to "
        f"{grace_seconds:g} s); again: stop now"
    )


def second_signal_line(name: str) -> str:
    """The line shown when a second signal stops the process at once.

    >>> print(second_signal_line("SIGINT"))
    petsync: SIGINT received again: stopping now
    """
    return f"petsync: {name} received again: stopping now"


def _said(line: str, name: str, json_logs: bool) -> str:
    """The line as stderr wants it: as it is, or one JSON log event when stderr is JSON lines.

    >>> import json
    >>> json.loads(_said("stopping", "SIGTERM", True))["fields"]
    {'signal': 'SIGTERM', 'message': 'stopping'}
    """
    if not json_logs:
        return line

    return json_event_line(__name__, "warning", "signal", {"signal": name, "message": line})


def _say(out: TextIO, line: str) -> None:
    """Write one line from a signal handler, never raising.

    The handler may interrupt a write to the same stream (the first signal's own line, or
    the import's progress): a buffered write would then fail as a reentrant call, so a
    real file is written through its descriptor, in one ``os.write``.
    """
    data = line + "\n"
    try:
        fd = out.fileno()
    except (AttributeError, OSError, ValueError):
        fd = -1
    with contextlib.suppress(Exception):
        if fd >= 0:
            os.write(fd, data.encode(errors="replace"))
        else:
            out.write(data)
            out.flush()


@contextlib.contextmanager
def stop_on_signals(
    grace_seconds: float = DEFAULT_GRACE_SECONDS,
    *,
    stream: TextIO | None = None,
    exit_now: Callable[[int], Any] = os._exit,
    json_logs: bool = False,
) -> Iterator[StopRequest]:
    """Turn SIGTERM/SIGINT into a :class:`StopRequest` for the block's job (see module doc).

    ``stream`` (default stderr) gets the one line per signal (a JSON log event with
    ``json_logs``, so a JSON-only log stays JSON); ``exit_now`` ends the process
    on the second signal (``os._exit``: no cleanup that could block on threads in flight).
    Outside the main thread (where Python cannot install handlers) the request is returned
    without handlers.
    """
    stop = StopRequest(grace_seconds=grace_seconds)
    out = stream if stream is not None else sys.stderr

    def handle(signal_number: int, frame: FrameType | None) -> None:
        name = signal.Signals(signal_number).name
        if stop.requested:
            try:
                _say(out, _said(second_signal_line(name), name, json_logs))
            finally:
                exit_now(128 + signal_number)
            return
        stop.request(f"{name} received", signal_number=signal_number)
        _say(out, _said(first_signal_line(name, grace_seconds), name, json_logs))

    previous: dict[signal.Signals, Any] = {}
    try:
        for sig in HANDLED_SIGNALS:
            previous[sig] = signal.signal(sig, handle)
    except ValueError:  # not the main thread: the caller polls a request nobody sets
        for sig, handler in previous.items():
            signal.signal(sig, handler)
        previous.clear()
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)
