"""Stopping a job early and cleanly: the request to stop that jobs poll.

Schedulers stop jobs with SIGTERM (systemd, ``docker stop``, Kubernetes, ``timeout``) and
people with Ctrl-C (SIGINT). The command line turns the first signal into
:meth:`StopRequest.request`; the jobs poll it where stopping is safe: between pages (an
interrupted export publishes nothing), between rows (the import lets requests already sent
finish, journals their outcomes and writes its outputs). A stopped run ends with
:class:`~petsync.core.errors.StoppedError`, whose exit code is 128 + the signal's number.

Setting the request is safe from a signal handler: it only sets fields and an Event.
"""

from __future__ import annotations

import signal
import threading

from petsync.core.errors import ExitCode, StoppedError

# Seconds that requests already sent may take to finish after a stop (``--grace``).
DEFAULT_GRACE_SECONDS = 10.0


class StopRequest:
    """A request to stop, set once (the first reason wins) and read from any thread.

    ``grace_seconds`` is how long a job may still wait for requests it already sent
    (``--grace``); past it, what is still in flight is recorded as unknown.

    >>> stop = StopRequest()
    >>> stop.requested
    False
    >>> stop.request("SIGTERM received", signal_number=15)
    >>> stop.requested, stop.reason, stop.exit_code
    (True, 'SIGTERM received', 143)
    """

    def __init__(self, *, grace_seconds: float = DEFAULT_GRACE_SECONDS) -> None:
        self.grace_seconds = grace_seconds  # how long requests already sent may still take
        self._event = threading.Event()
        self.reason: str | None = None
        self.signal_number: int | None = None

    @property
    def requested(self) -> bool:
        return self._event.is_set()

    def request(self, reason: str, *, signal_number: int | None = None) -> None:
        """Ask the job to stop; later requests keep the first reason."""
        if not self._event.is_set():
            self.reason = reason
            self.signal_number = signal_number
            self._event.set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until a stop is requested or ``timeout`` passes; True if requested."""
        return self._event.wait(timeout)

    @property
    def exit_code(self) -> int:
        """128 + the signal's number (130 for Ctrl-C, 143 for SIGTERM), 1 without a signal."""
        return 128 + self.signal_number if self.signal_number is not None else 1

    @property
    def description(self) -> str:
        """What stopped the run, for summaries: ``SIGTERM`` or the reason given."""
        if self.signal_number is not None:
            try:
                return signal.Signals(self.signal_number).name
            except ValueError:
                return f"signal {self.signal_number}"
        return self.reason or "a stop request"

    def error(self, message: str) -> StoppedError:
        """The :class:`StoppedError` a job ends with, exiting 128 + the signal (143, 130).

        >>> stop = StopRequest()
        >>> stop.request("SIGINT received", signal_number=2)
        >>> stop.error("import stopped").exit_code
        <ExitCode.INTERRUPTED: 130>
        """
        code = ExitCode.TERMINATED
        if self.signal_number is not None and 128 + self.signal_number in set(ExitCode):
            code = ExitCode(128 + self.signal_number)
        return StoppedError(message, exit_code=code)
