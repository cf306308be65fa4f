"""The Petstore client: typed models and petsync errors over one exchange.

Every request takes one path: :meth:`PetstoreClient._send` hands a method, a URL, the
client's header fields prepared once (the key put on by
:class:`~petsync.client.auth.BearerAuth`) and a body to the client's exchange
(:mod:`petsync.client.exchange`), reads the answer's body within
``ClientConfig.max_response_bytes`` (:mod:`petsync.client.body`) and applies the retry
rules of :mod:`petsync.client.retry`. The exchange is
:class:`~petsync.client.wire.CurlExchange` (libcurl: the wire, the total deadline, proxies,
TLS), or, in a test, an httpx transport carried by
:class:`~petsync.client.exchange.HttpxExchange` at the same seam. Failures are translated
once, by :mod:`petsync.client.failures`; httpx exceptions never leave this module.
listPets pages through :class:`Listing`, the one paging loop driving the strategies of
:mod:`petsync.client.pagination`. Text the server sent reaches a message only through
:func:`~petsync.core.text.shown_text`.
"""

from __future__ import annotations

import logging
import os
import random
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from petsync._version import USER_AGENT
from petsync.client.auth import BearerAuth
from petsync.client.body import ACCEPTED_ENCODINGS, Shown, parse_json, read_body, shown_of
from petsync.client.config import DEFAULT_PAGE_LIMIT, ClientConfig, check_trust_settings
from petsync.client.creations import Attempts, Creations, created_pet, post_body
from petsync.client.exchange import AnswerHeaders, Exchange, HttpxExchange
from petsync.client.failures import FailureTranslator
from petsync.client.listing import Listing, PageReader, Tally
from petsync.client.multi import transfers_over
from petsync.client.pagination import PageRequest
from petsync.client.proxy import choose_proxy
from petsync.client.read_ahead import PageAbandoned, RequestSlots
from petsync.client.records import Records, decode_page, reason_of
from petsync.client.retry import RetrySchedule
from petsync.client.seen_ids import SeenBudget
from petsync.client.wire import CurlExchange, DeadlinePassed, WireLimits
from petsync.core.apikey import redact
from petsync.core.errors import ProtocolError, UsageError
from petsync.core.interface import GET_PET_SUNSET_TEXT, LIMIT_MAX, LIMIT_MIN, limit_in_range
from petsync.core.models import (
    NewPet,
    Pet,
    PetStatus,
    is_int64,
    parse_pet,
)

logger = logging.getLogger(__name__)

CHECK_LIMIT = 1  # check asks for one pet per page: enough to see how the server pages
EXCERPT_CHARS = 200
CODE_CHARS = 100  # an Error code is a short identifier
GET_PET_DEPRECATION = (
    "getPet (GET /pets/{petId}) is deprecated and scheduled for removal on "
    f"{GET_PET_SUNSET_TEXT}; "
    "use listPets (GET /pets) with the status filter instead"
)


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


class PetstoreClient:
    """A thread-safe client for one Petstore environment (share one across threads).

    >>> with PetstoreClient(config) as client:                      # doctest: +SKIP
    ...     for page in client.list_pets(PetStatus.AVAILABLE):
    ...         print(len(page.pets))

    ``wall_clock`` (seconds since the epoch) is only used to read a ``Retry-After``
    HTTP-date from a response that has no ``Date`` header. ``environ`` (default
    ``os.environ``) is where proxy and certificate settings are read, under the rule of
    :mod:`petsync.client.proxy`; a bad proxy setting raises
    :class:`~petsync.core.errors.ConfigError` here, before any connection.

    Without ``transport`` the client sends through its own
    :class:`~petsync.client.wire.CurlExchange`, which keeps ``request_timeout`` and the
    proxy route; an httpx transport passed in (a test's mock) takes its place on the same
    path, carried by :class:`~petsync.client.exchange.HttpxExchange`.
    ``on_response`` is called with the headers of every answer, error answers too (the export
    checks its clock on the first ``Date``); what it raises ends the request.
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
        environ: Mapping[str, str] | None = None,
        on_response: Callable[[AnswerHeaders], None] | None = None,
    ) -> None:
        self._config = config
        self._on_response = on_response  # sees every answer's headers; may raise to stop
        self._sleep = sleep
        self._clock = clock
        self._rng = rng if rng is not None else random.Random()
        self._pets_url = f"{config.base_url}/pets"
        self._keys = [config.api_key]
        # createPet's URL, written as httpx writes it and redacted once: an import sends
        # thousands of POSTs to it.
        self._pets_target = str(httpx.URL(self._pets_url))
        self._pets_shown = self.shown(self._pets_url)
        self._lock = threading.Lock()
        self._requests = 0
        self._retries = 0
        proxy = None
        exchange: Exchange
        if transport is None:
            env = os.environ if environ is None else environ
            check_trust_settings(env)  # a missing CA file: exit 2 now, not retried as "down"
            proxy = choose_proxy(config, env)
            limits = WireLimits(
                total=config.request_timeout,
                connect=config.connect_timeout,
                read=config.read_timeout,
                max_body_bytes=config.max_response_bytes,
            )
            exchange = CurlExchange(limits, proxy, env)
        else:
            exchange = HttpxExchange(transport, {"timeout": config.timeout.as_dict()})
        self._exchange = exchange
        self._failures = FailureTranslator(config, proxy=proxy, wall_clock=wall_clock)
        self._auth = BearerAuth(config.api_key) if config.api_key is not None else None
        # Every request's header fields, one object each for a GET and for a POST of JSON:
        # the wire tells them unchanged at a glance (Host and Content-Length are its own).
        self._get_headers = self._request_headers()
        self._post_headers = [*self._get_headers, (b"Content-Type", b"application/json")]

    def _request_headers(self) -> list[tuple[bytes, bytes]]:
        """The headers of every request, the key put on by :class:`BearerAuth` (once)."""
        template = httpx.Request(
            "GET",
            self._pets_url,
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Accept-Encoding": ACCEPTED_ENCODINGS,
            },
        )
        if self._auth is not None:
            template = next(self._auth.sync_auth_flow(template))
        # Host comes from each request's URL (the wire writes it).
        return [(k, v) for k, v in template.headers.raw if k.lower() != b"host"]

    def __enter__(self) -> PetstoreClient:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"PetstoreClient(base_url={self._config.base_url!r})"

    def close(self) -> None:
        self._exchange.close()

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
        self,
        status: PetStatus | None = None,
        *,
        limit: int = DEFAULT_PAGE_LIMIT,
        seen_budget: SeenBudget | None = None,
        read_ahead: RequestSlots | None = None,
    ) -> Listing:
        """listPets as a :class:`Listing` of pages; nothing is sent until it is iterated.

        ``seen_budget`` bounds the memory of the listing's record of ids (loop detection);
        beyond it the record goes to its scratch directory (default: all in memory).
        ``read_ahead``: the run's request slots, in which offset and page listings read ahead
        (:mod:`petsync.client.read_ahead`); without, one page at a time.
        """
        style = self._config.pagination
        return self._listing(status, limit, style, seen_budget=seen_budget, read_ahead=read_ahead)

    def create_pet(self, pet: NewPet) -> Pet:
        """createPet. Retried only when surely not sent, or refused with 429.

        A failure after the request was sent (read timeout, dropped connection, 5xx) raises
        :class:`~petsync.core.errors.OutcomeUnknownError`: the pet may exist; it is never re-sent.
        """
        shown = self._pets_shown
        status, _, body = self._send("POST", self._pets_target, content=post_body(pet), shown=shown)
        return created_pet(status, body, shown)

    def creations(self) -> Creations:
        """createPet for many pets at once, driven from the calling thread (the import's):
        each POST under :meth:`create_pet`'s rules, all carried by libcurl's multi interface
        (with a test's transport: the exchange, one after another). Close it when done."""
        target = ("POST", self._pets_target, self._post_headers)
        shown = self._pets_shown
        return Creations(
            transfers_over(self._exchange),
            lambda body: self._attempts("POST", self._pets_target, body, shown=shown),
            target,
            shown,
            clock=self._clock,
            sleep=self._sleep,
        )

    def get_pet(self, pet_id: int) -> FetchedPet:
        """getPet (deprecated: removal 5 December 2030). Emits a DeprecationWarning."""
        warnings.warn(GET_PET_DEPRECATION, DeprecationWarning, stacklevel=2)
        if not is_int64(pet_id):
            raise UsageError(f"pet id {pet_id!r} is not an int64 integer")
        url = str(httpx.URL(f"{self._pets_url}/{pet_id}"))
        _, headers, body = self._send("GET", url)
        try:
            pet = _pet(parse_json(body))
        except (ProtocolError, ValueError) as exc:
            raise ProtocolError(
                f"GET {self.shown(url)} answered a body that is not a Pet: {reason_of(exc)}"
            ) from exc
        return FetchedPet(
            pet=pet,
            deprecation=headers.get("Deprecation"),
            sunset=headers.get("Sunset"),
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

    def _listing(
        self,
        status: PetStatus | None,
        limit: int,
        style: str,
        *,
        seen_budget: SeenBudget | None = None,
        read_ahead: RequestSlots | None = None,
    ) -> Listing:
        if not limit_in_range(limit):
            raise UsageError(
                f"listPets limit must be an integer from {LIMIT_MIN} to {LIMIT_MAX} "
                f"(the API's bounds), got {limit!r}"
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
            seen_budget=seen_budget,
            read_ahead=read_ahead,
        )

    def page_reader(self) -> PageReader:
        """What one listing fetches its pages with (for :class:`Listing`): this client.

        The exchange gives each sending thread a kept-alive connection of its own, so a
        listing running in its own thread pages over its own connection.
        """
        return _Pages(self)

    def fetch_page(
        self, url: str, tally: Tally, abandoned: Callable[[], bool] | None = None
    ) -> tuple[AnswerHeaders, Records]:
        """GET one listPets page (``url`` as httpx writes it); a page read ahead stops
        retrying once ``abandoned()``."""

        def shown() -> str:  # redacted only if a message needs it
            return self.shown(url)

        status, headers, body = self._send(
            "GET", url, tally=tally, shown=shown, abandoned=abandoned
        )
        return headers, decode_page(body, status, shown)

    # -- sending, retrying, translating httpx --------------------------------------------------

    def shown(self, url: httpx.URL | str) -> str:
        """A URL as it may appear in messages and logs: redacted."""
        return redact(str(url), self._keys)

    def _count(self, tally: Tally | None, *, retry: bool) -> None:
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
        url: str,
        *,
        content: bytes | None = None,
        tally: Tally | None = None,
        shown: Shown | None = None,
        abandoned: Callable[[], bool] | None = None,
    ) -> tuple[int, AnswerHeaders, bytes | bytearray]:
        """Send with retries (:meth:`_attempts`, driven over the exchange in this thread);
        return a 2xx answer's status, headers and decoded body, or raise the translated error.
        """
        headers = self._get_headers if content is None else self._post_headers
        run = self._attempts(method, url, content, tally=tally, shown=shown, abandoned=abandoned)
        try:
            step = next(run)
            while True:
                if step is not None:  # a wait before the next attempt
                    self._sleep(step)
                    step = run.send(None)
                    continue
                try:
                    answer = self._exchange.send(method, url, headers, content)
                except (httpx.RequestError, httpx.InvalidURL) as exc:
                    step = run.throw(exc)
                else:
                    step = run.send(answer)
        except StopIteration as ended:
            result: tuple[int, AnswerHeaders, bytes | bytearray] = ended.value
            return result

    def _attempts(
        self,
        method: str,
        url: str,
        content: bytes | None,
        *,
        tally: Tally | None = None,
        shown: Shown | None = None,
        abandoned: Callable[[], bool] | None = None,
    ) -> Attempts:
        """One request's attempts, with no I/O of its own: it yields None for "send now" (the
        exchange's answer is sent back, its httpx failure thrown in) or seconds to wait; it
        returns a 2xx answer's status, headers and decoded body, or raises the translated
        error. :meth:`_send` drives one; :class:`~petsync.client.creations.Creations` many.

        ``url`` is written as httpx writes it (the wire parses nothing of its own);
        ``content`` is a JSON body, encoded as httpx encodes ``json=``. Each body is read
        within the size limit; one over it raises :class:`ProtocolError` at once (the server
        would send it again). ``shown`` (the URL redacted, or how to make it) and the retry
        schedule are made only when a message or a retry needs them.
        """
        label: Shown = shown if shown is not None else (lambda: self.shown(url))
        started = self._clock()
        schedule: RetrySchedule | None = None
        while True:
            if schedule is not None:
                if abandoned is not None and abandoned():  # dropped while it waited
                    raise PageAbandoned(shown_of(label))
                schedule.attempt()
            self._count(tally, retry=False)
            try:
                answer = yield None
                assert answer is not None  # the driver sends the answer back
                try:
                    body = read_body(answer, self._config.max_response_bytes, method, label)
                finally:
                    answer.close()
                status = answer.status
                if self._on_response is not None:
                    self._on_response(answer.headers)
                if 200 <= status < 300:
                    return status, answer.headers, body
                text = shown_of(label)
                failure = self._failures.status_failure(method, text, url, answer, body)
            except httpx.RequestError as exc:
                late = isinstance(exc, DeadlinePassed)
                text = shown_of(label)
                failure = self._failures.transport_failure(method, text, exc, late=late)
            except httpx.InvalidURL as exc:  # not a RequestError: nothing was sent
                text = shown_of(label)
                failure = self._failures.invalid_url(method, text, exc)
            if schedule is None:  # the first try failed
                schedule = RetrySchedule(
                    self._config.retry,
                    method,
                    text,
                    clock=self._clock,
                    rng=self._rng,
                    started=started,
                )
                schedule.attempt()
            delay = schedule.wait_after(failure)
            if abandoned is not None and abandoned():
                raise PageAbandoned(text)
            self._count(tally, retry=True)
            yield delay


class _Pages:
    """A listing's pages, fetched through the client (see ``PetstoreClient.page_reader``)."""

    def __init__(self, client: PetstoreClient) -> None:
        self._client = client

    def fetch(
        self, request: PageRequest, tally: Tally, abandoned: Callable[[], bool] | None = None
    ) -> tuple[AnswerHeaders, Records]:
        return self._client.fetch_page(request.text, tally, abandoned)

    def close(self) -> None:
        pass


def _pet(value: object) -> Pet:
    """parse_pet, with a record nested too deep to describe reported as such."""
    try:
        return parse_pet(value)
    except RecursionError:
        raise ProtocolError("the body is JSON nested too deeply to be a Pet") from None
