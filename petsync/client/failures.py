"""Turning a failed attempt into what the user reads: httpx errors and error statuses.

This is the one place httpx exceptions become petsync errors. Each failure says what
happened (with the server's own text escaped and cut by
:func:`~petsync.core.text.shown_text`, the key redacted), whether the request may have
reached the server, and whether trying again can mend it; :mod:`petsync.client.retry`
decides from that.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx

from petsync.client.body import parse_json, too_large
from petsync.client.config import ClientConfig
from petsync.client.exchange import Answer
from petsync.client.proxy import ProxyRoute
from petsync.client.retry import Failure, parse_retry_after
from petsync.client.wire import (
    AnswerTooLarge,
    CaFileUnusable,
    CertificateRefused,
    HostNotFound,
    ProxyCertificateRefused,
    ProxyUnreachable,
    TlsFailed,
)
from petsync.core.apikey import ApiKey, redact
from petsync.core.errors import (
    ApiError,
    AuthenticationError,
    ConfigError,
    NotFoundError,
    OutcomeUnknownError,
    PetsyncError,
    TransportError,
)
from petsync.core.models import parse_error_body
from petsync.core.settings_table import TIMEOUT
from petsync.core.text import shown_text
from petsync.core.wording import Said

EXCERPT_CHARS = 200
CODE_CHARS = 100  # an Error code is a short identifier


class FailureTranslator:
    """Builds the :class:`~petsync.client.retry.Failure` of one failed attempt.

    ``wall_clock`` (seconds since the epoch) reads a ``Retry-After`` HTTP-date from a
    response without a ``Date`` header; ``proxy`` names the proxy in its refusals.
    """

    def __init__(
        self,
        config: ClientConfig,
        *,
        proxy: ProxyRoute | None,
        wall_clock: Callable[[], float],
    ) -> None:
        self._config = config
        self._keys: list[ApiKey | None] = [config.api_key]
        self._proxy = proxy
        self._wall_clock = wall_clock

    def _shown(self, url: httpx.URL | str) -> str:
        return redact(str(url), self._keys)

    def transport_failure(
        self, method: str, shown: str, exc: httpx.RequestError, *, late: bool
    ) -> Failure:
        """Translate an httpx error: what happened, whether it was sent, whether to retry."""
        if isinstance(exc, AnswerTooLarge):  # the same answer would come again
            limit = self._config.max_response_bytes
            if exc.announced is not None and exc.announced > limit:
                subject = f"{method} {shown} announced a body of {exc.announced} bytes, more than"
                refusal = too_large(subject, limit, started=False)
            else:
                refusal = too_large(f"{method} {shown} answered a body larger than", limit)
            return Failure(refusal, sent=True, recoverable=False)
        name = _public_name(exc)
        detail = shown_text(f"{name}: {redact(str(exc), self._keys) or 'no detail'}")
        if isinstance(exc, httpx.ConnectError):  # DNS and TLS fail while connecting
            final = self._connect_failure(method, shown, detail, exc)
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
        when: Said = f"({detail})"
        if late:
            when = (
                f"within the request timeout of {self._config.request_timeout:g} s; raise it "
                "with " + TIMEOUT + " if the server is slow but working"
            )
        if method == "POST":
            error: TransportError = OutcomeUnknownError(
                f"POST {shown} was sent but no answer came "
                + when
                + "; the pet may or may not have been created. petsync does not re-send it "
                "(that could create it twice): list the pets to check before sending it again",
                url=shown,
            )
        else:
            error = TransportError(f"no answer to {method} {shown} " + when, url=shown)
        return Failure(error, sent=True)

    def _connect_failure(
        self, method: str, shown: str, detail: str, cause: httpx.ConnectError
    ) -> Failure | None:
        """A connect failure that trying again cannot mend (nothing was sent), or None."""
        host = httpx.URL(self._config.base_url).host
        proxy = self._proxy
        if isinstance(cause, CaFileUnusable):
            return _setting(
                f"libcurl could not use the certificates to trust for {method} {shown} "
                f"({detail}); check that SSL_CERT_FILE names a readable PEM file and "
                "SSL_CERT_DIR a directory, or unset them",
                shown,
            )
        if proxy is not None and isinstance(cause, ProxyUnreachable):
            return _setting(
                f"could not reach the proxy {proxy.shown} (from {proxy.variable}) for "
                f"{method} {shown} ({detail}); check that the proxy is up and that "
                f"{proxy.variable} names it rightly, or unset {proxy.variable} (NO_PROXY "
                "exempts a host)",
                shown,
            )
        if proxy is not None and isinstance(cause, ProxyCertificateRefused):
            return _setting(
                f"the TLS certificate of the proxy {proxy.shown} (from {proxy.variable}) was "
                f"refused for {method} {shown} ({detail}); the API was not reached. If the "
                "proxy uses a private certificate authority, point SSL_CERT_FILE at its "
                f"certificate, or name the proxy with http:// in {proxy.variable}",
                shown,
            )
        if isinstance(cause, HostNotFound):
            return _final(
                f"could not find the host {host} for {method} {shown} ({detail}): the name "
                "does not resolve. Check the host name in the base URL (and this machine's DNS)",
                shown,
            )
        if isinstance(cause, CertificateRefused):
            return _final(
                f"the TLS certificate of {host} was refused for {method} {shown} ({detail}). "
                "Check that the base URL names the API's own host; if the API uses a private "
                "certificate authority, point SSL_CERT_FILE at its certificate",
                shown,
            )
        if isinstance(cause, TlsFailed):
            return _final(
                f"TLS with {host} failed for {method} {shown} ({detail}): the server does not "
                "speak TLS as expected. Check the base URL's scheme and port (https to a port "
                "that serves plain http?)",
                shown,
            )
        return None

    def invalid_url(self, method: str, shown: str, exc: httpx.InvalidURL) -> Failure:
        """A URL httpx cannot send: nothing left, and trying again cannot mend it."""
        return _final(
            f"cannot send {method} {shown}: the URL is not valid ({exc}); check the base URL",
            shown,
        )

    def status_failure(
        self, method: str, shown: str, url: str, answer: Answer, body: bytes | bytearray
    ) -> Failure:
        """An answer with an error status (``url`` the request's, ``body`` decoded)."""
        status = answer.status
        retry_after = parse_retry_after(
            answer.headers.get("Retry-After"),
            date_header=answer.headers.get("Date"),
            wall_clock=self._wall_clock,
        )
        error: PetsyncError = self._api_error(method, shown, url, answer, body)
        if method == "POST" and status >= 500:
            error = OutcomeUnknownError(
                error.words + ", after the request was sent; the pet may or may not have been "
                "created. petsync does not re-send it (that could create it twice): list the "
                "pets to check before sending it again",
                url=shown,
                http_status=status,
            )
        return Failure(error, sent=True, http_status=status, retry_after=retry_after)

    def _api_error(
        self, method: str, shown: str, url: str, answer: Answer, content: bytes | bytearray
    ) -> ApiError:
        status = answer.status
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
            excerpt = self._excerpt(answer, content)
            fields["excerpt"] = excerpt
            kind = shown_text(answer.headers.get("Content-Type", "no Content-Type"), 100)
            said = (
                f"not the interface's Error body ({kind}): {excerpt!r}"
                if excerpt
                else "an empty body"
            )
        if status == 401:
            return AuthenticationError(
                f"the API at {self._config.base_url} refused the API key (HTTP 401, {said}); "
                + _key_fix(self._config.api_key),
                **fields,
            )
        if 300 <= status < 400:
            where = shown_text(self._shown(answer.headers.get("Location", "nowhere")))
            return ApiError(
                f"{method} {shown} answered HTTP {status}, a redirect to {where}; petsync does "
                "not follow redirects (the key must stay on the API's host): fix the base URL",
                **fields,
            )
        cls = NotFoundError if status == 404 else ApiError
        fix = _refusal_fix(status, httpx.URL(url).path.endswith("/pets"))
        return cls(f"{method} {shown} answered HTTP {status}, {said}{fix}", **fields)

    def _excerpt(self, answer: Answer, content: bytes | bytearray) -> str:
        """The start of a body, whitespace runs made one space, redacted, escaped and cut."""
        try:
            text = content.decode(answer.headers.charset() or "utf-8", errors="replace")
        except LookupError:
            text = content.decode("latin-1")
        # Whitespace is collapsed in a head long enough for the excerpt, not in the whole.
        head = text[: EXCERPT_CHARS * 8]
        start = redact(" ".join(head.split()), self._keys)
        whole = len(text) if len(head) < len(text) else len(start)
        return shown_text(start, EXCERPT_CHARS, length=whole)


def _key_fix(key: ApiKey | None) -> str:
    """What to check about a refused key: the place it was read from, when known."""
    if key is None:
        return "no key was sent: set one (`petsync config show` says where petsync looks)"
    if key.source:
        return f"check the key in {key.source}: that is where this one was read"
    return "check the key this client was given"


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


def _public_name(exc: BaseException) -> str:
    """The name of the httpx class an error is (the transport's subclasses are details)."""
    for cls in type(exc).__mro__:
        if cls.__module__.startswith("httpx"):
            return cls.__name__
    return type(exc).__name__


def _setting(message: str, shown: str) -> Failure:
    """A setting of this machine is wrong (a proxy, a CA file): exit 2 at once, not retried."""
    return Failure(ConfigError(message), sent=False, recoverable=False)


def _final(message: str, shown: str) -> Failure:
    """A transport failure that trying again cannot mend: raised at once, for any method."""
    return Failure(TransportError(message, url=shown), sent=False, recoverable=False)
