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
run (the export's ``--concurrency``): a listing's own request waits for a slot and goes
first; pages read ahead queue for the slots, and each request that ends passes its slot to
the next of them at once, so the slots stay busy while the listings handle their pages.
After the first retry anywhere (a refused, throttled or failed request) nothing more is
read ahead in the run and pages still queued are not asked for: a server that pushes back
gets one request per listing at a time, each under the usual retry rules.
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import CancelledError, Future, ThreadPoolExecutor
from contextlib import AbstractContextManager
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


class _Job:
    """One page read ahead for a listing (``owner``), waiting for a slot or running in one."""

    __slots__ = ("future", "owner", "work")

    def __init__(self, work: Callable[[], Fetched], owner: object) -> None:
        self.work = work
        self.owner = owner
        self.future: Future[Fetched] = Future()


class RequestSlots:
    """The requests a run may have in flight at once, shared by its listings' threads.

    A listing's own request waits for a slot and goes first (:meth:`held`); then a page read
    ahead that its listing already waits for (:meth:`hurry`). Other pages read ahead queue
    per listing (:meth:`ask`), and a slot that a request frees passes at once, on the
    thread that sent it, to the next page of the listing with the fewest in flight: the
    slots stay busy whether or not a listing has come back for its pages yet, and no
    listing runs far ahead of the others into pages past its end. ``window`` bounds the
    pages one listing reads ahead, sent or queued. Close it (or use it as a context
    manager) once every listing has ended, to end its threads.
    """

    def __init__(self, slots: int, *, window: int | None = None) -> None:
        if slots < 1:
            raise ValueError(f"slots must be at least 1, got {slots}")
        self.window = _window(slots) if window is None else window
        self._free = slots
        self._lock = threading.Lock()
        self._freed = threading.Condition(self._lock)
        self._waiting = 0  # listings waiting for a slot for their own request
        self._hurried: deque[_Job] = deque()  # pages their listings wait for
        self._queues: dict[object, deque[_Job]] = {}  # each listing's other pages, in order
        self._sent: dict[object, int] = {}  # each listing's pages read ahead in flight
        self._pool = ThreadPoolExecutor(
            max_workers=min(slots, MAX_THREADS), thread_name_prefix="petsync-ahead"
        )
        self._throttled = threading.Event()
        self._own = _OwnSlot(self)

    @property
    def throttled(self) -> bool:
        return self._throttled.is_set()

    def throttle(self) -> None:
        """Read nothing more ahead in this run (a request needed a retry): pages still
        queued are not asked for (their futures cancelled); pages in flight are kept."""
        self._throttled.set()
        self._cancel_queued()

    def _cancel_queued(self) -> None:
        with self._lock:
            dropped = [*self._hurried, *(job for q in self._queues.values() for job in q)]
            self._hurried.clear()
            self._queues.clear()
        for job in dropped:
            job.future.cancel()

    def held(self) -> AbstractContextManager[object]:
        """One slot, waited for ahead of any page read ahead, held while the ``with`` block
        runs (a listing's own request); one object for every request, not one per page."""
        return self._own

    def _take(self) -> None:
        with self._lock:
            self._waiting += 1
            while not self._free:
                self._freed.wait()
            self._waiting -= 1
            self._free -= 1

    def ask(self, work: Callable[[], Fetched], owner: object) -> Future[Fetched] | None:
        """Run ``work`` (a page read ahead for the listing ``owner``) in a slot, after the
        pages that listing asked for before it; None when the run is throttled. Cancel the
        future to take it back while it waits."""
        if self.throttled:
            return None
        job = _Job(work, owner)
        with self._lock:
            queue = self._queues.setdefault(owner, deque())
            start = self._free > 0 and not self._waiting and not self._hurried and not queue
            if start:
                self._free -= 1
                self._sent[owner] = self._sent.get(owner, 0) + 1
            else:
                queue.append(job)
        if start:
            self._start(job)
        return job.future

    def hurry(self, future: Future[Fetched], owner: object) -> None:
        """Send the page of ``future`` (read ahead for ``owner``) before any other page read
        ahead, if it still waits for a slot: its listing is waiting for it."""
        with self._lock:
            queue = self._queues.get(owner)
            job = None if queue is None else next((j for j in queue if j.future is future), None)
            if queue is None or job is None:  # sent already, or dropped
                return
            queue.remove(job)
            self._hurried.append(job)
            if not self._free or self._waiting:
                return
            job = self._next()
        if job is not None:
            self._start(job)

    def _next(self) -> _Job | None:
        """The page read ahead that takes a free slot (held by the caller), under the lock;
        None when a listing waits for one of its own, or nothing is queued."""
        while not self._waiting:
            if self._hurried:
                job = self._hurried.popleft()
            else:
                queued = [owner for owner, queue in self._queues.items() if queue]
                if not queued:
                    return None
                owner = min(queued, key=lambda owner: self._sent.get(owner, 0))
                job = self._queues[owner].popleft()
            if not job.future.cancelled():
                self._free -= 1
                self._sent[job.owner] = self._sent.get(job.owner, 0) + 1
                return job
        return None

    def _start(self, job: _Job) -> None:
        try:
            self._pool.submit(self._run, job)
        except RuntimeError:  # closed: the run is ending, nothing more is sent
            next_job: _Job | None = job
            while next_job is not None:
                next_job.future.cancel()
                next_job = self._release(next_job.owner)

    def _run(self, job: _Job) -> None:
        """Run ``job`` and then, in the same slot and thread, the next page queued."""
        next_job: _Job | None = job
        while next_job is not None:
            if next_job.future.set_running_or_notify_cancel():
                try:
                    fetched = next_job.work()
                except BaseException as exc:  # the listing reads it from the future
                    next_job.future.set_exception(exc)
                else:
                    next_job.future.set_result(fetched)
            next_job = self._release(next_job.owner)

    def _release(self, owner: object = None) -> _Job | None:
        """Free a slot (of a page read ahead for ``owner``, if given), or hand it to the
        next page queued (returned)."""
        with self._lock:
            if owner is not None:
                self._sent[owner] -= 1
            self._free += 1
            job = self._next()
            if job is None:
                self._freed.notify()
        return job

    def close(self) -> None:
        """Send nothing more, and wait for the requests in flight."""
        self._cancel_queued()
        self._pool.shutdown(wait=True)

    def __enter__(self) -> RequestSlots:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()


class _OwnSlot:
    """The ``with`` block of a listing's own request (:meth:`RequestSlots.held`)."""

    __slots__ = ("_slots",)

    def __init__(self, slots: RequestSlots) -> None:
        self._slots = slots

    def __enter__(self) -> None:
        self._slots._take()

    def __exit__(self, *exc_info: object) -> None:
        job = self._slots._release()
        if job is not None:
            self._slots._start(job)


def _window(slots: int) -> int:
    """Pages one listing reads ahead: twice the slots (the pages still to be sent keep the
    slots busy while it handles those that came), within MAX_WINDOW; one slot reads
    nothing ahead."""
    return 1 if slots == 1 else min(2 * slots, MAX_WINDOW)


class _Ahead:
    """One page asked for ahead of the paging loop."""

    __slots__ = ("abandoned", "counts", "future", "request")

    def __init__(self, request: PageRequest, slots: RequestSlots) -> None:
        self.request = request
        self.counts = Counts(slots)
        self.abandoned = threading.Event()
        self.future: Future[Fetched] | None = None


class ReadAhead:
    """One listing's pages asked for before the paging loop reached them, in order.

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
        own fetch would have raised it), else fetched now in the next free slot. A page
        still queued for a slot goes to the head of the queue."""
        while self._pending:
            ahead = self._pending.popleft()
            if ahead.request.text == request.text and ahead.future is not None:
                self._slots.hurry(ahead.future, self)  # the listing waits for it now
                try:
                    return self._measured(ahead.future.result())
                except CancelledError:  # the run was throttled before it was sent
                    break
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
        """Read ahead ``requests`` (the pages expected next, in order) within the window;
        pages read ahead that are not among them are dropped."""
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
            ahead.future = self._slots.ask(self._work(ahead), self)
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
        if ahead.future is not None:
            ahead.future.cancel()  # never sent, if it still waited for a slot
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
            if ahead.future is not None and not ahead.future.cancelled():
                ahead.future.exception()  # waits; whatever it was, nobody reads it
            self._settle(ahead)
        self._dropped.clear()
