"""The Petstore client: httpx underneath, typed models and petsync errors on top.

This is the one place httpx exceptions are translated into petsync errors. Every request
goes through :meth:`PetstoreClient._send`, which applies the retry rules of
:mod:`petsync.client.retry`; listPets pages through :class:`Listing`, the one paging loop driving
the strategies of :mod:`petsync.client.pagination`.

Every attempt is bounded: in time by ``ClientConfig.request_timeout`` (enforced under httpx by
:mod:`petsync.client.deadline`), in size by ``ClientConfig.max_response_bytes`` (the body is
read by :mod:`petsync.client.body`), in JSON nesting. Text the server sent reaches a message
only through :func:`~petsync.core.text.shown_text`.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import ssl
import threading
import time
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from petsync._version import USER_AGENT
from petsync.client.auth import BearerAuth
from petsync.client.body import ACCEPTED_ENCODINGS, NestingError, parse_json, read_body
from petsync.client.config import DEFAULT_PAGE_LIMIT, TIMEOUT_OPTION, ClientConfig
from petsync.client.deadline import RequestDeadline
from petsync.client.listing import Listing, Records, Tally, parse_records
from petsync.client.proxy import ProxyRoute, choose_proxy
from petsync.client.retry import Failure, RetrySchedule, parse_retry_after
from petsync.client.transport import DeadlineTransport
from petsync.core.apikey import redact
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    NotFoundError,
    OutcomeUnknownError,
    PetsyncError,
    ProtocolError,
    TransportError,
    UsageError,
)
from petsync.core.interface import GET_PET_SUNSET_TEXT, LIMIT_MAX, LIMIT_MIN, limit_in_range
from petsync.core.models import (
    NewPet,
    Pet,
    PetStatus,
    is_int64,
    parse_error_body,
    parse_pet,
)
from petsync.core.text import shown_text

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
    ``os.environ``) is where proxy settings are read, under the rule of
    :mod:`petsync.client.proxy`; a bad proxy setting raises
    :class:`~petsync.core.errors.ConfigError` here, before any connection.

    Without ``transport`` the client builds its own (:mod:`petsync.client.transport`), which
    enforces ``request_timeout``; a transport passed in (a test's mock) is used as given,
    with no deadline and no proxy.
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
        self._deadline = RequestDeadline()
        self._proxy: ProxyRoute | None = None
        if transport is None:
            self._proxy = choose_proxy(config, os.environ if environ is None else environ)
            transport = DeadlineTransport(self._deadline, self._proxy)
        self._http = httpx.Client(
            auth=BearerAuth(config.api_key) if config.api_key is not None else None,
            timeout=config.timeout,
            headers={
                "User-Agent": USER_AGENT,
                "Accept": "application/json",
                "Accept-Encoding": ACCEPTED_ENCODINGS,
            },
            transport=transport,
            follow_redirects=False,  # a redirect could carry the key elsewhere; report it
            trust_env=False,  # proxies are chosen by petsync's rule, in the transport
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
        response, body = self._send("POST", url, json=pet.to_json())
        try:
            return _pet(parse_json(body))
        except (ProtocolError, ValueError) as exc:
            raise ProtocolError(
                f"POST {self.shown(url)} answered {response.status_code} but its body is not "
                f"a Pet ({_reason(exc)}); the pet was probably created: list the pets to check "
                "before sending it again"
            ) from exc

    def get_pet(self, pet_id: int) -> FetchedPet:
        """getPet (deprecated: removal 5 December 2030). Emits a DeprecationWarning."""
        warnings.warn(GET_PET_DEPRECATION, DeprecationWarning, stacklevel=2)
        if not is_int64(pet_id):
            raise UsageError(f"pet id {pet_id!r} is not an int64 integer")
        url = httpx.URL(f"{self._pets_url}/{pet_id}")
        response, body = self._send("GET", url)
        try:
            pet = _pet(parse_json(body))
        except (ProtocolError, ValueError) as exc:
            raise ProtocolError(
                f"GET {self.shown(url)} answered a body that is not a Pet: {_reason(exc)}"
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
        )

    def fetch_page(self, url: httpx.URL, tally: Tally) -> tuple[httpx.URL, httpx.Headers, Records]:
        """GET one listPets page; its final URL, headers and parsed records (for Listing)."""
        response, body = self._send("GET", url, tally=tally)
        shown = self.shown(response.url)
        try:
            data = parse_json(body)
        except NestingError as exc:
            raise ProtocolError(
                f"GET {shown} answered {exc}; listPets must return a JSON array of flat Pet "
                "objects: report it to the API owner"
            ) from None
        except ValueError as exc:
            raise ProtocolError(
                f"GET {shown} answered {response.status_code} with a body that is not JSON "
                f"({_reason(exc)}); listPets must return a JSON array of Pet"
            ) from exc
        if not isinstance(data, list):
            raise ProtocolError(
                f"GET {shown} answered a JSON {type(data).__name__} where listPets must "
                "return a JSON array of Pet"
            )
        return response.url, response.headers, parse_records(data, shown)

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
        url: httpx.URL,
        *,
        json: dict[str, Any] | None = None,
        tally: Tally | None = None,
    ) -> tuple[httpx.Response, bytes | bytearray]:
        """Send with retries; return a 2xx response and its body, or raise the translated error.

        Each attempt runs under the request deadline and reads the body within the size
        limit; a body over the limit raises :class:`ProtocolError` at once (the server would
        send it again).
        """
        shown = self.shown(url)
        schedule = RetrySchedule(
            self._config.retry, method, shown, clock=self._clock, rng=self._rng
        )
        deadline = self._deadline
        while True:
            schedule.attempt()
            self._count(tally, retry=False)
            deadline.start(self._config.request_timeout)
            try:
                response = self._http.send(
                    self._http.build_request(method, url, json=json), stream=True
                )
                try:
                    body = read_body(response, self._config.max_response_bytes, method, shown)
                finally:
                    response.close()
            except httpx.RequestError as exc:
                late = isinstance(exc, httpx.TimeoutException) and deadline.passed()
                failure = self._transport_failure(method, shown, exc, late=late)
            except httpx.InvalidURL as exc:  # not a RequestError: nothing was sent
                failure = Failure(
                    TransportError(
                        f"cannot send {method} {shown}: the URL is not valid ({exc}); check "
                        "the base URL",
                        url=shown,
                    ),
                    sent=False,
                    recoverable=False,
                )
            else:
                if response.is_success:
                    return response, body
                failure = self._status_failure(method, shown, response, body)
            finally:
                deadline.clear()
            delay = schedule.wait_after(failure)
            self._count(tally, retry=True)
            self._sleep(delay)

    def _transport_failure(
        self, method: str, shown: str, exc: httpx.RequestError, *, late: bool
    ) -> Failure:
        """Translate an httpx error: what happened, whether it was sent, whether to retry."""
        detail = shown_text(f"{type(exc).__name__}: {redact(str(exc), self._keys) or 'no detail'}")
        if isinstance(exc, httpx.ConnectError):  # DNS and TLS fail while connecting
            final = self._connect_failure(method, shown, detail, _cause(exc))
            if final is not None:
                return final
        if isinstance(exc, httpx.UnsupportedProtocol | httpx.LocalProtocolError):
            return _final(
                f"petsync could not send {method} {shown} ({detail}); check the base URL", shown
            )
        if isinstance(exc, httpx.ProxyError):
            proxy = self._proxy
            which = f" {proxy.shown} (from {proxy.variable})" if proxy is not None else ""
            return Failure(
                TransportError(
                    f"the proxy{which} refused to open a tunnel for {method} {shown} "
                    f"({detail}); check the proxy settings (HTTPS_PROXY, ALL_PROXY, NO_PROXY)",
                    url=shown,
                ),
                sent=False,
                recoverable=not str(exc).startswith(("407", "403")),
            )
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
        if late:
            detail = (
                f"within the request timeout of {self._config.request_timeout:g} s; raise it "
                f"with {TIMEOUT_OPTION} if the server is slow but working"
            )
        else:
            detail = f"({detail})"
        if method == "POST":
            error: TransportError = OutcomeUnknownError(
                f"POST {shown} was sent but no answer came {detail}; the pet may or may not "
                "have been created. petsync does not re-send it (that could create it twice): "
                "list the pets to check before sending it again",
                url=shown,
            )
        else:
            error = TransportError(f"no answer to {method} {shown} {detail}", url=shown)
        return Failure(error, sent=True)

    def _connect_failure(
        self, method: str, shown: str, detail: str, cause: BaseException
    ) -> Failure | None:
        """A connect failure that trying again cannot mend (nothing was sent), or None."""
        host = httpx.URL(self._config.base_url).host
        if isinstance(cause, socket.gaierror) and cause.errno != socket.EAI_AGAIN:
            return _final(
                f"could not find the host {host} for {method} {shown} ({detail}): the name "
                "does not resolve. Check the host name in the base URL (and this machine's DNS)",
                shown,
            )
        if isinstance(cause, ssl.SSLCertVerificationError):
            return _final(
                f"the TLS certificate of {host} was refused for {method} {shown} ({detail}). "
                "Check that the base URL names the API's own host; if the API uses a private "
                "certificate authority, point SSL_CERT_FILE at its certificate",
                shown,
            )
        if isinstance(cause, ssl.SSLError) and not isinstance(
            cause, ssl.SSLEOFError | ssl.SSLZeroReturnError
        ):
            return _final(
                f"TLS with {host} failed for {method} {shown} ({detail}): the server does not "
                "speak TLS as expected. Check the base URL's scheme and port (https to a port "
                "that serves plain http?)",
                shown,
            )
        return None

    def _status_failure(
        self, method: str, shown: str, response: httpx.Response, body: bytes | bytearray
    ) -> Failure:
        retry_after = parse_retry_after(
            response.headers.get("Retry-After"),
            date_header=response.headers.get("Date"),
            wall_clock=self._wall_clock,
        )
        error: PetsyncError = self._api_error(method, shown, response, body)
        if method == "POST" and response.status_code >= 500:
            error = OutcomeUnknownError(
                f"{error.message}, after the request was sent; the pet may or may not have been "
                "created. petsync does not re-send it (that could create it twice): list the "
                "pets to check before sending it again",
                url=shown,
            )
        return Failure(error, sent=True, http_status=response.status_code, retry_after=retry_after)

    def _api_error(
        self, method: str, shown: str, response: httpx.Response, content: bytes | bytearray
    ) -> ApiError:
        status = response.status_code
        try:
            body = parse_error_body(parse_json(content))
        except ValueError:
            body = None
        fields: dict[str, Any] = {"http_status": status, "url": shown}
        if body is not None:
            fields.update(
                code=shown_text(redact(body.code, self._keys), CODE_CHARS),
                api_message=shown_text(redact(body.message, self._keys)),
                api_status=body.status,
            )
            said = f"{fields['code']}: {fields['api_message']}"
            if body.status != status:
                said += f" (its Error body says status {body.status})"
        else:
            excerpt = self._excerpt(response, content)
            fields["excerpt"] = excerpt
            kind = shown_text(response.headers.get("Content-Type", "no Content-Type"), 100)
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
            where = shown_text(self.shown(response.headers.get("Location", "nowhere")))
            return ApiError(
                f"{method} {shown} answered HTTP {status}, a redirect to {where}; petsync does "
                "not follow redirects (the key must stay on the API's host): fix the base URL",
                **fields,
            )
        cls = NotFoundError if status == 404 else ApiError
        fix = _refusal_fix(status, response.request.url.path.endswith("/pets"))
        return cls(f"{method} {shown} answered HTTP {status}, {said}{fix}", **fields)

    def _excerpt(self, response: httpx.Response, content: bytes | bytearray) -> str:
        """The start of a body, whitespace runs made one space, redacted, escaped and cut."""
        try:
            text = content.decode(response.encoding or "utf-8", errors="replace")
        except LookupError:
            text = content.decode("latin-1")
        # Whitespace is collapsed in a head long enough for the excerpt, not in the whole.
        head = text[: EXCERPT_CHARS * 8]
        start = redact(" ".join(head.split()), self._keys)
        whole = len(text) if len(head) < len(text) else len(start)
        return shown_text(start, EXCERPT_CHARS, length=whole)


def _refusal_fix(status: int, pets_path: bool) -> str:
    """What to do about a 4xx that is not retried, when the status says it (else nothing)."""
    if status == 403:
        return "; the API refused this key the operation: check the key's rights with the API owner"
    if status in (404, 405, 410) and pets_path:
        return "; the API has no /pets there: check the base URL (it ends with /v1)"
    if status == 407:
        return (
            "; a proxy on the way wants credentials: give them in the proxy URL "
            "(e.g. HTTPS_PROXY=http://user:password@proxy:3128)"
        )
    return ""


def _pet(value: object) -> Pet:
    """parse_pet, with a record nested too deep to describe reported as such."""
    try:
        return parse_pet(value)
    except RecursionError:
        raise ProtocolError("the body is JSON nested too deeply to be a Pet") from None


def _cause(exc: BaseException) -> BaseException:
    """The innermost cause of an httpx error (httpx wraps httpcore, which wraps the OSError)."""
    for _ in range(10):  # httpx and httpcore each add one link
        inner = exc.__cause__ or exc.__context__
        if inner is None:
            break
        exc = inner
    return exc


def _final(message: str, shown: str) -> Failure:
    """A transport failure that trying again cannot mend: raised at once, for any method."""
    return Failure(TransportError(message, url=shown), sent=False, recoverable=False)


def _reason(exc: Exception) -> str:
    return exc.message if isinstance(exc, PetsyncError) else f"{type(exc).__name__}: {exc}"
