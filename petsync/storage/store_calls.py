"""Store calls the run can walk away from: a worker thread does them, the main thread waits.

Python runs signal handlers only on the main thread, between bytecodes; a store client's
C++ call (pyarrow's S3, GCS and Azure clients) holds the main thread until it returns,
retries included. So each store step of a run (checking the bucket, the lock, publishing,
pruning) runs in a worker thread, and the main thread waits for it in short waits that a
signal interrupts. When a stop is requested the step gets the grace period to finish (a
publication that is copying its last object completes); past it the run ends with
:class:`~petsync.core.errors.StoppedError` and leaves the thread behind: what it leaves
half-done under the staging prefix is rolled back by the next run, which the lock's
expiry lets in. A step that outlives its ``limit`` ends the run the same way, as a store
that does not answer.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import TypeVar

from petsync.core.errors import ConfigError, PetsyncError
from petsync.core.settings_table import OUT
from petsync.core.stop import StopRequest

T = TypeVar("T")

POLL_SECONDS = 0.1  # how soon a wait notices a stop (a signal also wakes it at once)
# Opening the store, checking it and taking the lock, before the first API request: past
# this the run stops (exit 2) whatever a store client is still waiting for.
SETUP_LIMIT_SECONDS = 60.0
# Releasing the lock and removing the staging after a failure: best effort, never longer.
CLEANUP_LIMIT_SECONDS = 5.0
# Any other store step of a run (publishing, pruning, listing): far beyond an upload of the
# largest catalogue, yet a call the store never answers cannot hold the run for ever (GCS
# and Azure clients in pyarrow have no timeout of a single request).
STEP_LIMIT_SECONDS = 2 * 3600.0


class StoreCalls:
    """Runs store steps in worker threads, each stoppable by ``stop`` and bounded by a limit.

    >>> calls = StoreCalls(None)
    >>> calls.run(lambda: 6 * 7, doing="answering", limit=5.0)
    42
    """

    def __init__(
        self,
        stop: StopRequest | None,
        *,
        location: str = "the store",
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        self.stop = stop
        self.location = location
        self._monotonic = monotonic
        self.abandoned: str | None = None  # the step left running in a worker, if any

    def run(
        self,
        step: Callable[[], T],
        *,
        doing: str,
        limit: float | None,
        before_fetch: bool = False,
        stoppable: bool = True,
    ) -> T:
        """``step()`` in a worker thread; its result, or its exception re-raised here.

        Raises :class:`StoppedError` when a stop is requested and the step does not end
        within the grace period, and :class:`ConfigError` (before the first API request)
        or :class:`PetsyncError` when it does not end within ``limit`` seconds. A clean-up
        step (``stoppable=False``) is bounded by its limit only. Either way the step is left
        running and :attr:`abandoned` names it: what it writes must not be undone by
        another thread (the next run, under the lock, rolls it back).
        """
        done = threading.Event()
        outcome: list[T] = []
        failure: list[BaseException] = []

        def work() -> None:
            try:
                outcome.append(step())
            except BaseException as exc:  # handed to the waiting thread as it is
                failure.append(exc)
            finally:
                done.set()

        worker = threading.Thread(target=work, name=f"petsync-store: {doing}", daemon=True)
        worker.start()
        started = self._monotonic()
        stopped_at: float | None = None
        while not done.wait(POLL_SECONDS):
            waited = self._monotonic() - started
            if stoppable and self.stop is not None and self.stop.requested:
                stopped_at = waited if stopped_at is None else stopped_at
                if waited - stopped_at >= self.stop.grace_seconds:
                    self.abandoned = doing
                    raise self.stop.error(
                        f"the export was stopped by {self.stop.description} while "
                        f"{doing} on {self.location}, which did not finish within the "
                        f"grace period ({self.stop.grace_seconds:g} s). Nothing new was "
                        "published; the next run rolls back what this one staged."
                    )
            elif limit is not None and waited >= limit:
                self.abandoned = doing
                raise _too_slow(self.location, doing, limit, before_fetch=before_fetch)
        if failure:
            raise failure[0]
        return outcome[0]


def _too_slow(location: str, doing: str, limit: float, *, before_fetch: bool) -> PetsyncError:
    what = (
        f"the store of {location} did not answer within {limit:g} s while {doing}; check "
        "the network and the endpoint"
    )
    if before_fetch:
        return ConfigError("cannot use " + OUT.given(location) + f": {what}. Nothing was fetched.")
    return PetsyncError(
        f"cannot write the snapshot to {location}: {what}. Nothing new was published; the "
        "next run rolls back what this one staged."
    )
