"""One listPets sweep: the paging loop that drives a pagination strategy, and the pages.

:class:`Listing` is the one paging loop of petsync. It asks its strategy (see
:mod:`petsync.client.pagination`) for the first request and, after each page, for the next;
on top of every strategy it enforces the page cap, refuses a request already made (a loop)
and drops records this listing already sent (see :mod:`petsync.client.seen_ids`), failing
on a page that holds nothing else. The HTTP side comes from a :class:`PageSource` (the
client), so the loop itself never touches httpx errors.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Callable, Generator
from typing import Protocol

import httpx

from petsync.client.exchange import AnswerHeaders
from petsync.client.pagination import FetchedPage, PageRequest, Strategy, make_strategy
from petsync.client.read_ahead import ReadAhead, RequestSlots
from petsync.client.records import InvalidRecord, PetColumns, Records
from petsync.client.seen_ids import SeenBudget, SeenIds
from petsync.core.errors import PaginationError
from petsync.core.models import Pet, PetStatus
from petsync.core.text import shown_text

logger = logging.getLogger(__name__)

__all__ = ["InvalidRecord", "Listing", "Page", "PageReader", "PageSource", "Tally"]


class Tally(Protocol):
    """Where request and retry counts go besides the client's totals (a Listing)."""

    requests: int
    retries: int


class Page:
    """One page of listPets: the valid pets as columns, the invalid records, in server order.

    ``columns`` holds the new valid pets (:class:`~petsync.client.records.PetColumns`);
    ``pets`` builds them as :class:`~petsync.core.models.Pet` objects on request. ``url`` is
    the page's URL as shown to people (redacted, computed when first read). ``body`` is the
    page's JSON as received when ``columns`` holds every record of it, decoded by the typed
    decoder (so decoding it again gives the same columns); otherwise None.
    """

    __slots__ = ("_shown", "_url", "body", "columns", "invalid")

    def __init__(
        self,
        columns: PetColumns,
        invalid: list[InvalidRecord],
        url: str | Callable[[], str],
        body: bytes | bytearray | None = None,
    ) -> None:
        self.columns = columns
        self.invalid = invalid
        self.body = body
        self._url: str | None = url if isinstance(url, str) else None
        self._shown = url if not isinstance(url, str) else None

    @property
    def url(self) -> str:
        if self._url is None:
            assert self._shown is not None
            self._url = self._shown()
        return self._url

    @property
    def pets(self) -> list[Pet]:
        return self.columns.pets()

    def __repr__(self) -> str:
        return f"Page({len(self.columns)} pets, {len(self.invalid)} invalid, {self.url!r})"


class PageReader(Protocol):
    """Fetches the pages of one listing, closed when the listing ends.

    ``abandoned`` (a page read ahead) says when the answer is no longer wanted: the reader
    then stops retrying it (:class:`~petsync.client.read_ahead.PageAbandoned`).
    """

    def fetch(
        self, request: PageRequest, tally: Tally, abandoned: Callable[[], bool] | None = None
    ) -> tuple[AnswerHeaders, Records]: ...

    def close(self) -> None: ...


class PageSource(Protocol):
    """What a listing needs from the client: a page reader, and URLs as shown to people."""

    def page_reader(self) -> PageReader: ...

    def shown(self, url: httpx.URL | str) -> str: ...


class Listing:
    """Iterates the pages of one listPets sweep (one status, or unfiltered).

    Attributes, readable during and after iteration:
    ``status``; ``style`` (the pagination style in use, e.g. "link", resolved by auto);
    ``pages``; ``requests`` (including probes, retries and pages read ahead, used or not);
    ``retries``;
    ``complete`` (None while iterating, True when the end was proven, False when flagged);
    ``incomplete_reason`` (why it could not be proven complete, and what to do);
    ``duplicates`` (records dropped because their id was already listed in this sweep).

    Iterating again starts a new sweep. Fatal paging problems raise
    :class:`~petsync.core.errors.PaginationError`: a repeated next link or cursor, a page holding
    only records already listed (a loop), a next link to another origin, the page cap.
    """

    status: PetStatus | None
    style: str
    pages: int
    requests: int
    retries: int
    complete: bool | None
    incomplete_reason: str | None
    duplicates: int

    def __init__(
        self,
        source: PageSource,
        *,
        status: PetStatus | None,
        limit: int,
        style: str,
        list_url: httpx.URL,
        max_pages: int,
        seen_budget: SeenBudget | None = None,
        read_ahead: RequestSlots | None = None,
    ) -> None:
        self.status = status
        self._seen_budget = seen_budget
        self._slots = read_ahead
        self.spilled_bytes = 0
        self._source = source
        self._limit = limit
        self._style_setting = style
        self._list_url = list_url
        self._max_pages = max_pages
        self._reset()

    def _reset(self) -> None:
        self.style = self._style_setting
        self.pages = 0
        self.requests = 0
        self.retries = 0
        self.complete = None
        self.incomplete_reason = None
        self.duplicates = 0
        self.server_date: str | None = None  # the last answer's Date header, as sent

    def __iter__(self) -> Generator[Page, None, None]:
        self._reset()
        strategy = make_strategy(self._style_setting, self._list_url, self._limit)
        # A digest per URL fetched, not the URL: a server sending ever-new long next links
        # (each at most LINK_LENGTH_LIMIT characters) grows this by 16 bytes a page.
        requested: set[bytes] = set()
        budget = self._seen_budget
        seen = SeenIds() if budget is None else SeenIds(budget=budget.bytes, scratch=budget.scratch)
        fetched = 0
        debug = logger.isEnabledFor(logging.DEBUG)
        request: PageRequest | None = strategy.first()
        reader = self._source.page_reader()
        ahead = None if self._slots is None else ReadAhead(self._slots, reader, self)
        try:
            while request is not None:
                if fetched >= self._max_pages:
                    raise PaginationError(
                        f"stopped paging before {self._shown(request)}: the page cap of "
                        f"{self._max_pages} pages was reached; if the catalogue really is that "
                        "large, raise max_pages"
                    )
                digest = hashlib.blake2b(request.text.encode(), digest_size=16).digest()
                if digest in requested:
                    raise PaginationError(
                        f"the server sent {request.via} again ({self._shown(request)}), a page "
                        "already fetched in this listing: paging would loop forever. The "
                        "server's pagination is broken; report it to the API owner"
                    )
                requested.add(digest)
                if ahead is None:
                    headers, records = reader.fetch(request, self)
                else:
                    headers, records = ahead.fetch(request)
                self.server_date = headers.get("date") or self.server_date
                fetched += 1
                step = strategy.next(FetchedPage(request, headers, records.keys))
                self.style = strategy.name
                if ahead is not None:  # before the page is handed on: it overlaps the work
                    ahead.plan(self._expected(strategy, step.next, self._max_pages - fetched))
                page = None
                if step.keep:
                    page = self._fresh_page(records, seen, request)
                if step.next is None:  # set before the last page is yielded: the end is known
                    self.complete = step.complete
                    self.incomplete_reason = step.reason
                if page is not None:
                    self.pages += 1
                    if debug:
                        logger.debug(
                            "page",
                            extra={
                                "fields": {
                                    "url": page.url,
                                    "pets": len(page.columns),
                                    "invalid": len(page.invalid),
                                    "style": self.style,
                                }
                            },
                        )
                    yield page
                request = step.next
        finally:
            if ahead is not None:
                ahead.close()
            reader.close()
            self.spilled_bytes = seen.spilled_bytes
            seen.close()
        if self.complete is False:
            logger.info(
                "listing_incomplete",
                extra={"fields": {"style": self.style, "reason": self.incomplete_reason}},
            )

    def _expected(
        self, strategy: Strategy, following: PageRequest | None, room: int
    ) -> list[PageRequest]:
        """The requests the strategy expects next (``following`` first), within the page cap:
        the pages a :class:`ReadAhead` may ask for before the loop reaches them."""
        assert self._slots is not None
        if following is None or room < 1:  # (throttled: pages in flight kept, none added)
            return []
        ahead = getattr(strategy, "ahead", None)  # offset and page paging know their way on
        known = [] if ahead is None else ahead(min(room, self._slots.window) - 1)
        return [following, *known] if known else []  # link, cursor: one page at a time

    def _shown(self, request: PageRequest) -> str:
        return shown_text(self._source.shown(request.text))

    def _fresh_page(self, records: Records, seen: SeenIds, request: PageRequest) -> Page:
        def shown() -> str:
            return self._source.shown(request.text)

        fresh = seen.add_page(records.keys, ints=records.typed)
        if False not in fresh:  # the usual page: all new
            body = records.body if records.typed else None
            return Page(records.columns, [r for _, r in records.invalid], shown, body)
        keep_valid: list[bool] = []
        invalid: list[InvalidRecord] = []
        bad = dict(records.invalid)
        for position, is_fresh in enumerate(fresh):
            record = bad.get(position)
            if record is None:
                keep_valid.append(is_fresh)
            elif is_fresh:
                invalid.append(record)
            if not is_fresh:
                self.duplicates += 1
        columns = records.columns.where(keep_valid)
        if records.keys and not len(columns) and not invalid:
            url = shown()
            raise PaginationError(
                f"the page at {shown_text(url)} (reached by {request.via}) holds only "
                "records already listed: the server is sending the same records again (a "
                "loop). Report it to the API owner, or try another pagination style"
            )
        return Page(columns, invalid, shown)
