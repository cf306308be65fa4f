"""Pages read ahead: a listing whose next addresses are known asks for several at once.

At a far API's latency a listing's time is its chain of pages, each asked for only when the
one before has come. With ``offset`` and ``page`` paging the next addresses are known in
advance (the next offsets, if pages keep the size they have; the next numbers), so a listing
asks for a window of them at once and takes them in order. ``link`` and ``cursor`` paging
learn each address from the page before, and read nothing ahead.

Reading ahead changes when pages are asked for, never which pages count: the paging loop
(:class:`~petsync.client.listing.Listing`) still takes each next request from its strategy,
after every check, and uses a page read ahead only when its address is that request's. A
page read ahead past the proven end, or after a guess that did not hold (the server changed
its page size), is dropped unseen; a failure of such a page is dropped with it.

:class:`RequestSlots` bounds the requests in flight at once, shared by every listing of a
run (the export's ``--concurrency``): a listing's own request waits for a slot, a page read
ahead takes a free one or is not asked for. After the first retry anywhere (a refused,
throttled or failed request) nothing more is read ahead in the run: a server that pushes
back gets one request per listing at a time, each under the usual retry rules.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Protocol

from petsync.client.exchange import AnswerHeaders
from petsync.client.pagination import PageRequest
from petsync.client.records import Records

Fetched = tuple[AnswerHeaders, Records]
MAX_WINDOW = 16  # pages one listing reads ahead at most, whatever --concurrency says
MAX_THREADS = 32  # threads sending pages read ahead (more slots only queue)
# The bytes of pages one listing may hold read ahead: its window shrinks as pages grow (a
# page of the usual catalogue is about 10 KB; one may reach --max-response-size).
WINDOW_BYTES = 8 << 20


class Tally(Protocol):
    """Where a page's request and retry counts go (a listing, or a page's :class:`Counts`)."""

    requests: int
    retries: int


class PageFetcher(Protocol):
    """What reads one page (a listing's page reader), told when its answer is no longer wanted."""

    def fetch(
        self, request: PageRequest, tally: Tally, abandoned: Callable[[], bool] | None = None
    ) -> Fetched: ...


class Counts:
    """Requests and retries of one page read ahead, added to the listing's when it is settled.

    Its first retry throttles the run at once (``slots``), not when the page is settled.
    """

    __slots__ = ("_retries", "_slots", "requests")

    def __init__(self, slots: RequestSlots) -> None:
        self.requests = 0
        self._retries = 0
        self._slots = slots

    @property
    def retries(self) -> int:
        return self._retries

    @retries.setter
    def retries(self, value: int) -> None:
        self._retries = value
        if value:
            self._slots.throttle()


class PageAbandoned(Exception):
    """A page read ahead is no longer wanted: its retries stop (raised by the client)."""


class RequestSlots:
    """The requests a run may have in flight at once, shared by its listings' threads.

    ``window`` bounds the pages one listing reads ahead. Close it (or use it as a context
    manager) once every listing has ended, to end its threads.
    """

    def __init__(self, slots: int, *, window: int | None = None) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.window = min(slots, MAX_WINDOW) if window is None else window
        self._free = threading.BoundedSemaphore(slots)
        self._pool = ThreadPoolExecutor(
            max_workers=min(slots, MAX_THREADS), thread_name_prefix="petsync-ahead"
        )
        self._throttled = threading.Event()

    @property
    def throttled(self) -> bool:
        return self._throttled.is_set()

    def throttle(self) -> None:
        """Read nothing more ahead in this run (a request needed a retry)."""
        self._throttled.set()

    def held(self) -> threading.BoundedSemaphore:
        """One slot, waited for, held while the ``with`` block runs (a listing's own request):
        the semaphore itself, no generator per page."""
        return self._free

    def try_submit(self, work: Callable[[], Fetched]) -> Future[Fetched] | None:
        """Run ``work`` in a free slot, or None when none is free or the run is throttled."""
        if self.throttled or not self._free.acquire(blocking=False):
            return None

        def run() -> Fetched:
            try:
                return work()
            finally:
                self._free.release()

        try:
            return self._pool.submit(run)
        except RuntimeError:  # closed: the run is ending
            self._free.release()
            return None

    def close(self) -> None:
        self._pool.shutdown(wait=True)

    def __enter__(self) -> RequestSlots:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _Ahead:
    """One page asked for ahead of the paging loop."""

    __slots__ = ("abandoned", "counts", "future", "request")

    def __init__(self, request: PageRequest, slots: RequestSlots) -> None:
        self.request = request
        self.counts = Counts(slots)
        self.abandoned = threading.Event()
        self.future: Future[Fetched] | None = None


class ReadAhead:
    """One listing's pages in flight before the paging loop reached them, in order.

    The listing's thread alone calls it: :meth:`fetch` for each page the loop has decided to
    fetch, :meth:`plan` with the requests the strategy expects next, :meth:`close` at the
    end (which waits for pages still in flight, so no request outlives its listing).
    """

    def __init__(self, slots: RequestSlots, reader: PageFetcher, tally: Tally) -> None:
        self._slots = slots
        self._reader = reader
        self._tally = tally
        self._pending: deque[_Ahead] = deque()
        self._dropped: list[_Ahead] = []
        self._largest = 1  # bytes of the largest page fetched so far

    def fetch(self, request: PageRequest) -> Fetched:
        """The page at ``request``: read ahead if it was (a failure is raised here, as its
        own fetch would have raised it), else fetched now in a slot of the run's."""
        while self._pending:
            ahead = self._pending.popleft()
            if ahead.request.text == request.text and ahead.future is not None:
                try:
                    return self._measured(ahead.future.result())
                finally:
                    self._settle(ahead)
            self._drop(ahead)
        retries = self._tally.retries
        with self._slots.held():
            fetched = self._reader.fetch(request, self._tally)
        if self._tally.retries != retries:
            self._slots.throttle()
        return self._measured(fetched)

    def _measured(self, fetched: Fetched) -> Fetched:
        headers, records = fetched
        body = records.body
        length = headers.get("content-length", "")
        size = len(body) if body is not None else int(length) if length.isdigit() else 0
        self._largest = max(self._largest, size)
        return fetched

    def plan(self, requests: list[PageRequest]) -> None:
        """Read ahead ``requests`` (the pages expected next, in order) as slots allow; pages
        read ahead that are not among them are dropped."""
        kept = 0
        for ahead in self._pending:
            if kept < len(requests) and ahead.request.text == requests[kept].text:
                kept += 1
            else:
                break
        while len(self._pending) > kept:
            self._drop(self._pending.pop())
        window = min(self._slots.window, max(1, WINDOW_BYTES // self._largest))
        for request in requests[kept:window]:
            ahead = _Ahead(request, self._slots)
            ahead.future = self._slots.try_submit(self._work(ahead))
            if ahead.future is None:
                return
            self._pending.append(ahead)

    def _work(self, ahead: _Ahead) -> Callable[[], Fetched]:
        def work() -> Fetched:
            if ahead.abandoned.is_set():
                raise PageAbandoned(ahead.request.text)
            return self._reader.fetch(ahead.request, ahead.counts, ahead.abandoned.is_set)

        return work

    def _drop(self, ahead: _Ahead) -> None:
        ahead.abandoned.set()
        self._dropped.append(ahead)

    def _settle(self, ahead: _Ahead) -> None:
        self._tally.requests += ahead.counts.requests
        self._tally.retries += ahead.counts.retries
        if ahead.counts.retries:
            self._slots.throttle()

    def close(self) -> None:
        """Drop every page still ahead and wait for those in flight (their answers unread)."""
        while self._pending:
            self._drop(self._pending.popleft())
        for ahead in self._dropped:
            if ahead.future is not None:
                ahead.future.exception()  # waits; whatever it was, nobody reads it
            self._settle(ahead)
        self._dropped.clear()
