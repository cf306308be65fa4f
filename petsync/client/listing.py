"""One listPets sweep: the paging loop that drives a pagination strategy, and the pages.

:class:`Listing` is the one paging loop of petsync. It asks its strategy (see
:mod:`petsync.client.pagination`) for the first request and, after each page, for the next;
on top of every strategy it enforces the page cap, refuses a request already made (a loop)
and drops records this listing already sent (see :mod:`petsync.client.seen_ids`), failing
on a page that holds nothing else. The HTTP side comes from a :class:`PageSource` (the
client), so the loop itself never touches httpx errors.
"""

from __future__ import annotations

import logging
from collections.abc import Generator, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import httpx

from petsync.client.body import MAX_JSON_DEPTH, nested_deeper_than
from petsync.client.pagination import FetchedPage, PageRequest, make_strategy
from petsync.client.seen_ids import SeenIds
from petsync.core.errors import PaginationError, ProtocolError
from petsync.core.models import INT64_MAX, INT64_MIN, Pet, PetStatus, is_int64, parse_pet
from petsync.core.text import shown_text

logger = logging.getLogger(__name__)


class Tally(Protocol):
    """Where request and retry counts go besides the client's totals (a Listing)."""

    requests: int
    retries: int


@dataclass(frozen=True)
class InvalidRecord:
    """A listed record that breaks the interface (no id, float id, no name...), kept as sent."""

    record: object
    reason: str
    url: str


@dataclass(frozen=True)
class Page:
    """One page of listPets: the valid pets and the invalid records, in server order."""

    pets: list[Pet]
    invalid: list[InvalidRecord]
    url: str


@dataclass(frozen=True)
class Records:
    """A fetched page's records in server order: identity keys, and each record parsed.

    ``all_valid`` is True when every item is a :class:`Pet` (no :class:`InvalidRecord`).
    """

    keys: list[Hashable]
    items: list[Pet | InvalidRecord]
    all_valid: bool


class PageSource(Protocol):
    """What a listing needs from the client: one page fetched, and URLs as shown to people."""

    def fetch_page(
        self, url: httpx.URL, tally: Tally
    ) -> tuple[httpx.URL, httpx.Headers, Records]: ...

    def shown(self, url: httpx.URL | str) -> str: ...


class Listing:
    """Iterates the pages of one listPets sweep (one status, or unfiltered).

    Attributes, readable during and after iteration:
    ``status``; ``style`` (the pagination style in use, e.g. "link", resolved by auto);
    ``pages``; ``requests`` (including probes and retries); ``retries``;
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
    ) -> None:
        self.status = status
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

    def __iter__(self) -> Generator[Page, None, None]:
        self._reset()
        strategy = make_strategy(self._style_setting, self._list_url, self._limit)
        requested: set[str] = set()
        seen = SeenIds()
        fetched = 0
        request: PageRequest | None = strategy.first()
        while request is not None:
            shown = self._source.shown(request.url)
            if fetched >= self._max_pages:
                raise PaginationError(
                    f"stopped paging before {shown_text(shown)}: the page cap of "
                    f"{self._max_pages} pages was reached; if the catalogue really is that "
                    "large, raise max_pages"
                )
            if str(request.url) in requested:
                raise PaginationError(
                    f"the server sent {request.via} again ({shown_text(shown)}), a page "
                    "already fetched in this listing: paging would loop forever. The server's "
                    "pagination is broken; report it to the API owner"
                )
            requested.add(str(request.url))
            response_url, headers, records = self._source.fetch_page(request.url, self)
            fetched += 1
            view = FetchedPage(request, response_url, headers, records.keys)
            step = strategy.next(view)
            self.style = strategy.name
            page = None
            if step.keep:
                page = self._fresh_page(records, seen, self._source.shown(response_url), request)
            if step.next is None:  # set before the last page is yielded: the end is known
                self.complete = step.complete
                self.incomplete_reason = step.reason
            if page is not None:
                self.pages += 1
                logger.debug(
                    "page",
                    extra={
                        "fields": {
                            "url": page.url,
                            "pets": len(page.pets),
                            "invalid": len(page.invalid),
                            "style": self.style,
                        }
                    },
                )
                yield page
            request = step.next
        if self.complete is False:
            logger.info(
                "listing_incomplete",
                extra={"fields": {"style": self.style, "reason": self.incomplete_reason}},
            )

    def _fresh_page(self, records: Records, seen: SeenIds, url: str, request: PageRequest) -> Page:
        fresh = seen.add_page(records.keys)
        if records.all_valid and False not in fresh:  # the usual page: all new valid pets
            return Page(pets=cast("list[Pet]", records.items), invalid=[], url=url)
        pets: list[Pet] = []
        invalid: list[InvalidRecord] = []
        for item, is_fresh in zip(records.items, fresh, strict=True):
            if not is_fresh:
                self.duplicates += 1
                continue
            if isinstance(item, Pet):
                pets.append(item)
            else:
                invalid.append(item)
        if records.keys and not pets and not invalid:
            raise PaginationError(
                f"the page at {shown_text(url)} (reached by {request.via}) holds only "
                "records already listed: the server is sending the same records again (a "
                "loop). Report it to the API owner, or try another pagination style"
            )
        return Page(pets=pets, invalid=invalid, url=url)


def parse_records(data: list[Any], shown: str) -> Records:
    """Parse a listPets page; records that break the interface become InvalidRecords.

    A record that is an object with exactly the expected types is built into a Pet inline
    (the checks of :func:`~petsync.core.models.parse_pet`, without its per-field loop and calls:
    this runs once per pet); anything else goes through ``parse_pet``, which gives the same
    Pet or the reason the record is invalid. Only such records are kept as sent, so only they
    are measured: one nested deeper than the page may be (:data:`MAX_JSON_DEPTH` levels,
    the page's array included) fails the page, as it could not be described or written out.
    """
    keys: list[Hashable] = []
    items: list[Pet | InvalidRecord] = []
    all_valid = True
    for record in data:
        if type(record) is dict:
            pet_id = record.get("id")
            category = record.get("categoryId")
            name = record.get("name")
            status = record.get("status")
            if (
                type(pet_id) is int
                and type(category) is int
                and type(name) is str
                and (status is None or type(status) is str)
                and INT64_MIN <= pet_id <= INT64_MAX
                and INT64_MIN <= category <= INT64_MAX
            ):
                keys.append(pet_id)
                items.append(Pet(pet_id, name, category, status))
                continue
        if nested_deeper_than(record, MAX_JSON_DEPTH - 1):
            raise ProtocolError(
                f"GET {shown} answered a record nested deeper than {MAX_JSON_DEPTH} levels "
                "(the page's array included); listPets must return a JSON array of flat Pet "
                "objects: report it to the API owner"
            )
        try:
            pet = parse_pet(record)
        except ProtocolError as exc:
            keys.append(record_key(record))
            items.append(InvalidRecord(record=record, reason=exc.message, url=shown))
            all_valid = False
        else:
            keys.append(pet.id)
            items.append(pet)
    return Records(keys, items, all_valid)


def record_key(record: object) -> Hashable:
    """A record's identity for loop and overlap checks: its id when that is an int64."""
    if isinstance(record, dict) and is_int64(record.get("id")):
        key: Hashable = record["id"]
        return key
    return ("raw", repr(record))
