"""The Petstore client: httpx underneath, typed models and petsync errors on top.

This is the one place httpx exceptions are translated into petsync errors. Every request
goes through :meth:`PetstoreClient._send`, which applies the retry rules of
:mod:`petsync.client.retry`; listPets pages through :class:`Listing`, the one paging loop driving
the strategies of :mod:`petsync.client.pagination`.
"""

from __future__ import annotations

import logging
import random
import threading
import time
import warnings
from collections.abc import Callable, Generator, Hashable
from dataclasses import dataclass
from typing import Any, Protocol, cast

import httpx

from petsync._version import USER_AGENT
from petsync.client.auth import BearerAuth
from petsync.client.config import DEFAULT_PAGE_LIMIT, ClientConfig
from petsync.client.pagination import FetchedPage, PageRequest, make_strategy
from petsync.client.retry import Failure, RetrySchedule, parse_retry_after
from petsync.client.seen_ids import SeenIds
from petsync.core.apikey import redact
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    NotFoundError,
    OutcomeUnknownError,
    PaginationError,
    PetsyncError,
    ProtocolError,
    TransportError,
    UsageError,
)
from petsync.core.models import (
    INT64_MAX,
    INT64_MIN,
    NewPet,
    Pet,
    PetStatus,
    is_int64,
    parse_error_body,
    parse_pet,
)

logger = logging.getLogger(__name__)

LIMIT_MIN, LIMIT_MAX = 1, 100  # interface, Limits
CHECK_LIMIT = 1  # check asks for one pet per page: enough to see how the server pages
EXCERPT_CHARS = 200
GET_PET_DEPRECATION = (
    "getPet (GET /pets/{petId}) is deprecated and scheduled for removal on 5 December 2030; "
    "use listPets (GET /pets) with the status filter instead"
)


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
class _Records:
    """A fetched page's records in server order: identity keys, and each record parsed.

    ``all_valid`` is True when every item is a :class:`Pet` (no :class:`InvalidRecord`).
    """

    keys: list[Hashable]
    items: list[Pet | InvalidRecord]
    all_valid: bool


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
        client: PetstoreClient,
        *,
        status: PetStatus | None,
        limit: int,
        style: str,
        list_url: httpx.URL,
        max_pages: int,
    ) -> None:
        self.status = status
        self._client = client
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
            shown = self._client._shown(request.url)
            if fetched >= self._max_pages:
                raise PaginationError(
                    f"stopped paging before {shown}: the page cap of {self._max_pages} pages "
                    "was reached; if the catalogue really is that large, raise max_pages"
                )
            if str(request.url) in requested:
                raise PaginationError(
                    f"the server sent {request.via} again ({shown}), a page already fetched "
                    "in this listing: paging would loop forever. The server's pagination is "
                    "broken; report it to the API owner"
                )
            requested.add(str(request.url))
            response_url, headers, records = self._client._fetch_page(request.url, self)
            fetched += 1
            view = FetchedPage(request, response_url, headers, records.keys)
            step = strategy.next(view)
            self.style = strategy.name
            page = None
            if step.keep:
                page = self._fresh_page(records, seen, self._client._shown(response_url), request)
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

    def _fresh_page(self, records: _Records, seen: SeenIds, url: str, request: PageRequest) -> Page:
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
                f"the page at {url} (reached by {request.via}) holds only records already "
                "listed: the server is sending the same records again (a loop). Report it to "
                "the API owner, or try another pagination style"
            )
        return Page(pets=pets, invalid=invalid, url=url)


@dataclass(frozen=True)
class FetchedPet:
    """Result of the deprecated getPet: the pet and the server's deprecation headers."""

    pet: Pet
    deprecation: str | None
    sunset: str | None


@dataclass(frozen=True)
class CheckReport:
    """What ``petsync check`` reports.

    ``pagination_style`` is the detected style, "none" when the catalogue fits in what
    was fetched, or "unknown" when no way onwards could be proven (``pagination_note`` says
    why). ``complete_first_page`` is True when the whole catalogue came in the check's pages.
    """

    base_url: str
    key_accepted: bool
    pagination_style: str
    round_trip_seconds: float
    complete_first_page: bool
    pagination_note: str | None = None


class _Tally(Protocol):
    """Where request and retry counts go besides the client's totals (a Listing)."""

    requests: int
    retries: int


class PetstoreClient:
    """A thread-safe client for one Petstore environment (share one across threads).

    >>> with PetstoreClient(config) as client:                      # doctest: +SKIP
    ...     for page in client.list_pets(PetStatus.AVAILABLE):
    ...         print(len(page.pets))

    ``wall_clock`` (seconds since the epoch) is only used to read a ``Retry-After``
    HTTP-date from a response that has no ``Date`` header.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        transport: httpx.BaseTransport | None = None,
        sleep: Callable[[float], None] = time.sleep,
        clock: Callable[[], float] = time.monotonic,
        rng: random.Random | None = None,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self._config = config
        self._sleep = sleep
        self._clock = clock
        self._wall_clock = wall_clock
        self._rng = rng if rng is not None else random.Random()
        self._pets_url = f"{config.base_url}/pets"
        self._keys = [config.api_key]
        self._lock = threading.Lock()
        self._requests = 0
        self._retries = 0
        self._http = httpx.Client(
            auth=BearerAuth(config.api_key) if config.api_key is not None else None,
            timeout=config.timeout,
            headers={"User-Agent": USER_AGENT, "Accept": "application/json"},
            transport=transport,
            follow_redirects=False,  # a redirect could carry the key elsewhere; report it
        )

    def __enter__(self) -> PetstoreClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PetstoreClient(base_url={self._config.base_url!r})"

    def close(self) -> None:
        self._http.close()

    @property
    def base_url(self) -> str:
        return self._config.base_url

    @property
    def requests(self) -> int:
        """HTTP requests sent so far by this client (all threads)."""
        with self._lock:
            return self._requests

    @property
    def retries(self) -> int:
        """Retries made so far by this client (all threads)."""
        with self._lock:
            return self._retries

    # -- operations ------------------------------------------------------------------------

    def list_pets(
        self, status: PetStatus | None = None, *, limit: int = DEFAULT_PAGE_LIMIT
    ) -> Listing:
        """listPets as a :class:`Listing` of pages; nothing is sent until it is iterated."""
        return self._listing(status, limit, self._config.pagination)

    def create_pet(self, pet: NewPet) -> Pet:
        """createPet. Retried only when surely not sent, or refused with 429.

        A failure after the request was sent (read timeout, dropped connection, 5xx) raises
        :class:`~petsync.core.errors.OutcomeUnknownError`: the pet may exist; it is never re-sent.
        """
        url = httpx.URL(self._pets_url)
        response = self._send("POST", url, json=pet.to_json())
        try:
            return parse_pet(_json(response))
        except (ProtocolError, ValueError) as exc:
            raise ProtocolError(
                f"POST {self._shown(url)} answered {response.status_code} but its body is not "
                f"a Pet ({_reason(exc)}); the pet was probably created: list the pets to check "
                "before sending it again"
            ) from exc

    def get_pet(self, pet_id: int) -> FetchedPet:
        """getPet (deprecated: removal 5 December 2030). Emits a DeprecationWarning."""
        warnings.warn(GET_PET_DEPRECATION, DeprecationWarning, stacklevel=2)
        if not is_int64(pet_id):
            raise UsageError(f"pet id {pet_id!r} is not an int64 integer")
        url = httpx.URL(f"{self._pets_url}/{pet_id}")
        response = self._send("GET", url)
        try:
            pet = parse_pet(_json(response))
        except (ProtocolError, ValueError) as exc:
            raise ProtocolError(
                f"GET {self._shown(url)} answered a body that is not a Pet: {_reason(exc)}"
            ) from exc
        return FetchedPet(
            pet=pet,
            deprecation=response.headers.get("Deprecation"),
            sunset=response.headers.get("Sunset"),
        )

    def check(self) -> CheckReport:
        """Reach the API with the key, time one round trip and name the pagination style.

        Pages of one pet are fetched only as far as the style is known (auto detection may
        probe once or twice). A refused key raises
        :class:`~petsync.core.errors.AuthenticationError`.
        """
        listing = self._listing(None, CHECK_LIMIT, self._config.pagination)
        pages = iter(listing)
        started = self._clock()
        try:
            next(pages, None)
            round_trip = self._clock() - started
            while listing.style == "auto" and listing.complete is None:
                if next(pages, None) is None:
                    break
        finally:
            pages.close()
        style = listing.style
        note = listing.incomplete_reason
        if listing.complete is False:
            style = "unknown"
        elif style == "auto":
            style = "none"
        return CheckReport(
            base_url=self._config.base_url,
            key_accepted=True,
            pagination_style=style,
            round_trip_seconds=round_trip,
            complete_first_page=listing.complete is True,
            pagination_note=note,
        )

    # -- the paging loop's fetch --------------------------------------------------------------

    def _listing(self, status: PetStatus | None, limit: int, style: str) -> Listing:
        if type(limit) is not int or not LIMIT_MIN <= limit <= LIMIT_MAX:
            raise UsageError(
                f"listPets limit must be an integer from {LIMIT_MIN} to {LIMIT_MAX} "
                f"(interface, Limits), got {limit!r}"
            )
        params: dict[str, Any] = {"limit": limit}
        if status is not None:
            params["status"] = PetStatus(status).value
        return Listing(
            self,
            status=status,
            limit=limit,
            style=style,
            list_url=httpx.URL(self._pets_url, params=params),
            max_pages=self._config.max_pages,
        )

    def _fetch_page(
        self, url: httpx.URL, tally: _Tally
    ) -> tuple[httpx.URL, httpx.Headers, _Records]:
        response = self._send("GET", url, tally=tally)
        shown = self._shown(response.url)
        try:
            data = _json(response)
        except ValueError as exc:
            raise ProtocolError(
                f"GET {shown} answered {response.status_code} with a body that is not JSON "
                f"({_reason(exc)}); listPets must return a JSON array of Pet"
            ) from exc
        if not isinstance(data, list):
            raise ProtocolError(
                f"GET {shown} answered a JSON {type(data).__name__} where listPets must "
                "return a JSON array of Pet (interface, listPets)"
            )
        return response.url, response.headers, _parse_records(data, shown)

    # -- sending, retrying, translating httpx --------------------------------------------------

    def _shown(self, url: httpx.URL | str) -> str:
        """A URL as it may appear in messages and logs: redacted."""
        return redact(str(url), self._keys)

    def _count(self, tally: _Tally | None, *, retry: bool) -> None:
        with self._lock:
            if retry:
                self._retries += 1
            else:
                self._requests += 1
        if tally is not None:
            if retry:
                tally.retries += 1
            else:
                tally.requests += 1

    def _send(
        self,
        method: str,
        url: httpx.URL,
        *,
        json: dict[str, Any] | None = None,
        tally: _Tally | None = None,
    ) -> httpx.Response:
        """Send with retries; return a 2xx response or raise the translated error."""
        shown = self._shown(url)
        schedule = RetrySchedule(
            self._config.retry, method, shown, clock=self._clock, rng=self._rng
        )
        while True:
            schedule.attempt()
            self._count(tally, retry=False)
            try:
                response = self._http.request(method, url, json=json)
            except httpx.RequestError as exc:
                failure = self._transport_failure(method, shown, exc)
            else:
                if response.is_success:
                    return response
                failure = self._status_failure(method, shown, response)
            delay = schedule.wait_after(failure)
            self._count(tally, retry=True)
            self._sleep(delay)

    def _transport_failure(self, method: str, shown: str, exc: httpx.RequestError) -> Failure:
        detail = f"{type(exc).__name__}: {redact(str(exc), self._keys) or 'no detail'}"
        # Before a connection exists nothing can have reached the server.
        if isinstance(exc, httpx.ConnectError | httpx.ConnectTimeout | httpx.PoolTimeout):
            return Failure(
                TransportError(
                    f"could not connect for {method} {shown} ({detail}); check the base URL "
                    "and that the server is up",
                    url=shown,
                ),
                sent=False,
            )
        if method == "POST":
            error: TransportError = OutcomeUnknownError(
                f"POST {shown} was sent but no answer came ({detail}); the pet may or may not "
                "have been created. petsync does not re-send it (that could create it twice): "
                "list the pets to check before sending it again",
                url=shown,
            )
        else:
            error = TransportError(f"no answer to {method} {shown} ({detail})", url=shown)
        return Failure(error, sent=True)

    def _status_failure(self, method: str, shown: str, response: httpx.Response) -> Failure:
        retry_after = parse_retry_after(
            response.headers.get("Retry-After"),
            date_header=response.headers.get("Date"),
            wall_clock=self._wall_clock,
        )
        error: PetsyncError = self._api_error(method, shown, response)
        if method == "POST" and response.status_code >= 500:
            error = OutcomeUnknownError(
                f"{error.message}, after the request was sent; the pet may or may not have been "
                "created. petsync does not re-send it (that could create it twice): list the "
                "pets to check before sending it again",
                url=shown,
            )
        return Failure(error, sent=True, http_status=response.status_code, retry_after=retry_after)

    def _api_error(self, method: str, shown: str, response: httpx.Response) -> ApiError:
        status = response.status_code
        try:
            body = parse_error_body(_json(response))
        except ValueError:
            body = None
        fields: dict[str, Any] = {"http_status": status, "url": shown}
        if body is not None:
            fields.update(
                code=redact(body.code, self._keys),
                api_message=redact(body.message, self._keys),
                api_status=body.status,
            )
            said = f"{fields['code']}: {fields['api_message']}"
            if body.status != status:
                said += f" (its Error body says status {body.status})"
        else:
            excerpt = self._excerpt(response)
            fields["excerpt"] = excerpt
            kind = response.headers.get("Content-Type", "no Content-Type")
            said = (
                f"not the interface's Error body ({kind}): {excerpt!r}"
                if excerpt
                else "an empty body"
            )
        if status == 401:
            return AuthenticationError(
                f"the API at {self._config.base_url} refused the API key (HTTP 401, {said}); "
                "check the key set for this environment (PETSYNC_API_KEY or --api-key-file)",
                **fields,
            )
        if 300 <= status < 400:
            where = self._shown(response.headers.get("Location", "nowhere"))
            return ApiError(
                f"{method} {shown} answered HTTP {status}, a redirect to {where}; petsync does "
                "not follow redirects (the key must stay on the API's host): fix the base URL",
                **fields,
            )
        cls = NotFoundError if status == 404 else ApiError
        return cls(f"{method} {shown} answered HTTP {status}, {said}", **fields)

    def _excerpt(self, response: httpx.Response) -> str:
        try:
            text = response.text
        except (UnicodeDecodeError, LookupError):
            text = response.content.decode("latin-1")
        text = redact(" ".join(text.split()), self._keys)
        if len(text) > EXCERPT_CHARS:
            text = text[: EXCERPT_CHARS - 3] + "..."
        return text


def _parse_records(data: list[Any], shown: str) -> _Records:
    """Parse a listPets page; records that break the interface become InvalidRecords.

    A record that is an object with exactly the expected types is built into a Pet inline
    (the checks of :func:`~petsync.core.models.parse_pet`, without its per-field loop and calls:
    this runs once per pet); anything else goes through ``parse_pet``, which gives the same
    Pet or the reason the record is invalid.
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
        try:
            pet = parse_pet(record)
        except ProtocolError as exc:
            keys.append(_record_key(record))
            items.append(InvalidRecord(record=record, reason=exc.message, url=shown))
            all_valid = False
        else:
            keys.append(pet.id)
            items.append(pet)
    return _Records(keys, items, all_valid)


def _json(response: httpx.Response) -> object:
    """The decoded JSON body; ValueError when it is not JSON."""
    result: object = response.json()
    return result


def _reason(exc: Exception) -> str:
    return exc.message if isinstance(exc, PetsyncError) else f"{type(exc).__name__}: {exc}"


def _record_key(record: object) -> Hashable:
    """A record's identity for loop and overlap checks: its id when that is an int64."""
    if isinstance(record, dict) and is_int64(record.get("id")):
        key: Hashable = record["id"]
        return key
    return ("raw", repr(record))
