"""Client configuration: frozen dataclasses with named defaults.

Command-line options, environment variables, config and job files all end up as these
objects; :func:`normalise_base_url` is the one check of a base URL.
"""

from __future__ import annotations

import ipaddress
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.interface import (
    API_VERSION,
    CA_FILE_LIMIT,
    LIMIT_MAX,
    PAGINATION_STYLES,
    VERSION_SEGMENT,
    PaginationStyle,
)
from petsync.core.reading import read_regular
from petsync.core.settings_table import (
    ALLOW_INSECURE_HTTP,
    API_KEY_FILE,
    MAX_RESPONSE_SIZE,
    RETRIES,
    RETRY_BUDGET,
    TIMEOUT,
)

if TYPE_CHECKING:
    import httpx

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0  # the longest silence between two bytes of an answer
DEFAULT_REQUEST_TIMEOUT = 60.0  # one attempt, whole: connect, send, headers and body
DEFAULT_MAX_RESPONSE_BYTES = 32 * 1024 * 1024  # one answer, decompressed; a page is ~10 KB
DEFAULT_PAGE_LIMIT = LIMIT_MAX  # the fewest requests
DEFAULT_MAX_PAGES = 200_000  # 20 million pets at 100 a page: a cap, not an expectation
DEFAULT_MAX_ATTEMPTS = 6
DEFAULT_RETRIES = DEFAULT_MAX_ATTEMPTS - 1  # what --retries N counts: attempts after the first
DEFAULT_BACKOFF_BASE = 0.5
DEFAULT_BACKOFF_MAX = 30.0
DEFAULT_RETRY_BUDGET = 300.0

LOOPBACK_HOSTS = frozenset({"localhost"})


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how long to retry: exponential backoff with full jitter.

    The delay before attempt ``n`` (1-based retries) is uniform in
    ``[0, min(backoff_max, backoff_base * 2**(n-1))]``, never less than a ``Retry-After``
    the server sent. Retrying stops after ``max_attempts`` attempts in all, or when the next
    wait would end past ``budget_seconds`` since the first attempt.

    The command line counts retries, not attempts: ``--retries N`` is
    ``max_attempts = N + 1`` (``--retries 0`` tries once), read back as :attr:`retries`;
    ``--retry-budget SECONDS`` is ``budget_seconds``.

    >>> RetryPolicy(max_attempts=3).retries
    2
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX
    budget_seconds: float = DEFAULT_RETRY_BUDGET

    def __post_init__(self) -> None:
        if type(self.max_attempts) is not int or self.max_attempts < 1:
            retries = self.max_attempts - 1 if type(self.max_attempts) is int else self.max_attempts
            raise ConfigError(
                "retries (" + RETRIES + f") must be a whole number, 0 or more; got {retries!r}"
            )
        if not _is_seconds(self.budget_seconds, allow_zero=True):
            raise ConfigError(
                "the retry budget (" + RETRY_BUDGET + ") must be a number of seconds, 0 or "
                f"more; got {self.budget_seconds!r}"
            )
        for name in ("backoff_base", "backoff_max"):
            if not _is_seconds(getattr(self, name), allow_zero=True):
                raise ConfigError(
                    f"retry {name} must be a number of seconds, 0 or more; "
                    f"got {getattr(self, name)!r}"
                )

    @property
    def retries(self) -> int:
        """Attempts after the first (what ``--retries N`` sets)."""
        return self.max_attempts - 1


@dataclass(frozen=True)
class ClientConfig:
    """Everything the Petstore client needs to talk to one environment.

    >>> ClientConfig(base_url="http://127.0.0.1:8080/v1", api_key=ApiKey("k")).base_url
    'http://127.0.0.1:8080/v1'
    """

    base_url: str
    api_key: ApiKey | None
    connect_timeout: float = DEFAULT_CONNECT_TIMEOUT
    read_timeout: float = DEFAULT_READ_TIMEOUT
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    pagination: PaginationStyle = "auto"
    max_pages: int = DEFAULT_MAX_PAGES
    allow_insecure_http: bool = False
    request_timeout: float = DEFAULT_REQUEST_TIMEOUT
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "base_url", normalise_base_url(self.base_url, self.allow_insecure_http)
        )
        if self.pagination not in PAGINATION_STYLES:
            raise ConfigError(
                f"unknown pagination style {self.pagination!r}; "
                f"use one of: {', '.join(PAGINATION_STYLES)}"
            )
        if self.max_pages < 1:
            raise ConfigError("max_pages must be at least 1")
        if not _is_seconds(self.request_timeout):
            raise ConfigError(
                "the request timeout (" + TIMEOUT + ") must be a number of seconds above 0; "
                f"got {self.request_timeout!r}"
            )
        for name in ("connect_timeout", "read_timeout"):
            if not _is_seconds(getattr(self, name)):
                raise ConfigError(
                    f"{name} must be a number of seconds above 0; got {getattr(self, name)!r}"
                )
        if type(self.max_response_bytes) is not int or self.max_response_bytes < 1:
            raise ConfigError(
                "the response size limit (" + MAX_RESPONSE_SIZE + ") must be a whole number "
                f"of bytes above 0; got {self.max_response_bytes!r}"
            )

    @property
    def timeout(self) -> httpx.Timeout:
        """The per-operation timeouts; :attr:`request_timeout` bounds the whole attempt.

        Waiting for a free connection counts against both the connect timeout and the
        request timeout.
        """
        import httpx  # imported where used: the CLI reads these defaults for --help

        return httpx.Timeout(
            connect=self.connect_timeout,
            read=self.read_timeout,
            write=self.read_timeout,
            pool=min(self.connect_timeout, self.request_timeout),
        )


# The variables naming the certificates to trust (read by the transport, checked here).
CA_FILE_VARIABLE = "SSL_CERT_FILE"
CA_DIR_VARIABLE = "SSL_CERT_DIR"
_PEM_CERTIFICATE = b"CERTIFICATE-----"  # BEGIN CERTIFICATE, or BEGIN TRUSTED CERTIFICATE


def check_trust_settings(environ: Mapping[str, str]) -> None:
    """Fail (:class:`ConfigError`, exit 2) at once when ``SSL_CERT_FILE`` or ``SSL_CERT_DIR``
    names what libcurl cannot use, naming the variable and the path.

    libcurl reads the CA file only when a connection is made, and reports a missing one as
    a TLS failure (``libcurl error 77``) that would be retried like an unreachable API for
    the whole retry budget. Checked here, before the first request: the file must be a
    regular file (never a FIFO: :mod:`petsync.core.reading`) of at most
    :data:`~petsync.core.interface.CA_FILE_LIMIT` bytes holding a PEM certificate; the
    directory must be a directory.
    """
    cafile = environ.get(CA_FILE_VARIABLE, "")
    if cafile:
        path = Path(cafile)
        try:
            data = read_regular(path, "CA file", limit=CA_FILE_LIMIT, error=ConfigError)
        except ConfigError as exc:
            raise ConfigError(
                f"{CA_FILE_VARIABLE} names an unusable CA file: {exc}. Point "
                f"{CA_FILE_VARIABLE} at a PEM file of the certificates to trust, or unset it "
                "to trust the usual public authorities"
            ) from exc
        if _PEM_CERTIFICATE not in data:
            raise ConfigError(
                f"{CA_FILE_VARIABLE} names CA file {path}, which holds no PEM certificate "
                f"(-----BEGIN CERTIFICATE-----); point {CA_FILE_VARIABLE} at a PEM file of "
                "the certificates to trust, or unset it"
            )
    cadir = environ.get(CA_DIR_VARIABLE, "")
    if cadir and not Path(cadir).is_dir():
        raise ConfigError(
            f"{CA_DIR_VARIABLE} names {cadir}, which is not a directory; point it at a "
            "directory of hashed CA certificates, or unset it"
        )


def _is_seconds(value: object, *, allow_zero: bool = False) -> bool:
    """A real, finite number of seconds (not a bool), above 0 or, if allowed, 0."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    if not math.isfinite(value):
        return False
    return value >= 0 if allow_zero else value > 0


def is_loopback(host: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


# scheme://user:password@ : what to hide before a URL is repeated in a message, even when
# the rest of it does not parse.
_USERINFO = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*://)[^/?#]*@")
_VERSION = re.compile(r"v\d+")
# A host as httpx gives it: a DNS name (IDN in its xn-- form), an IPv4 or an IPv6 address.
_HOST = re.compile(r"[A-Za-z0-9_.-]+|[0-9A-Fa-f:.]+")


def without_userinfo(url: str) -> str:
    """``url`` with any ``user:password@`` replaced by ``***@``, for messages.

    >>> without_userinfo("https://me:hunter2@h/v1")
    'https://***@h/v1'
    """
    return _USERINFO.sub(r"\1***@", url)


def normalise_base_url(url: str, allow_insecure_http: bool = False) -> str:
    """Check a base URL and return it without a trailing slash.

    Every base address of the API ends with ``/v1`` (interface, Versioning 1-2). Plain
    ``http`` is accepted only for loopback hosts (or with ``allow_insecure_http``), because
    the bearer key would cross the network in clear text. A user name or password in the
    URL is refused: petsync authenticates with the bearer key alone, and a password in the
    base URL would be copied wherever the URL is shown.
    """
    text = url.strip()
    shown = without_userinfo(text)
    if shown != text:
        raise _credentials_refused(shown)
    import httpx

    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"base URL {text!r} is not a valid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"base URL {text!r} must be an http(s) URL with a host, "
            "e.g. https://petstore.example.com/v1"
        )
    if parsed.userinfo:  # spelled in a way the pattern above did not catch
        raise _credentials_refused(without_userinfo(str(parsed)))
    if parsed.port is not None and not 1 <= parsed.port <= 65535:
        raise ConfigError(
            f"base URL {text!r} names port {parsed.port}; a port is a number from 1 to 65535 "
            "(or leave it out: 443 for https, 80 for http)"
        )
    if not _HOST.fullmatch(parsed.raw_host.decode("ascii", "replace")):
        raise ConfigError(
            f"base URL {text!r} has the host {parsed.host!r}, which no DNS name or IP address "
            "spells (letters, digits, '-' and '.'); check for a space or a stray character"
        )
    if parsed.query or parsed.fragment:
        raise ConfigError(f"base URL {text!r} must not carry a query or fragment")
    text = text.rstrip("/")
    if not text.endswith(VERSION_SEGMENT):
        raise ConfigError(
            f"base URL {text!r} does not end with {VERSION_SEGMENT}: the API's base addresses "
            f"end with {VERSION_SEGMENT} (interface version {API_VERSION}). "
            f"Did you mean {_with_version(text)} ?"
        )
    if parsed.scheme == "http" and not is_loopback(parsed.host) and not allow_insecure_http:
        raise plain_http_refused(text)
    return text


def plain_http_refused(base_url: str) -> ConfigError:
    """The refusal of a plain-http base URL to a host that is not loopback."""
    return ConfigError(
        f"base URL {base_url!r} uses plain http to a host that is not loopback: the API key "
        "would cross the network in clear text. Use https, or pass "
        + ALLOW_INSECURE_HTTP.given(True)
        + " if you really mean it."
    )


def _credentials_refused(shown: str) -> ConfigError:
    return ConfigError(
        f"base URL {shown!r} carries a user name or password; petsync sends only the API key "
        "(from PETSYNC_API_KEY or "
        + API_KEY_FILE
        + ") and would copy the password wherever the URL is shown. Remove the part before '@'"
    )


def _with_version(url: str) -> str:
    """A base URL that can be right: cut after a ``/v1`` inside the path (the pets URL was
    given), else replace a trailing version segment (``/v2``) by ``/v1``, else append ``/v1``.

    >>> _with_version("https://h/v2"), _with_version("https://h/api/v1/pets")
    ('https://h/v1', 'https://h/api/v1')
    """
    scheme, _, rest = url.partition("://")
    host, _, path = rest.partition("/")
    segments = path.split("/") if path else []
    lowered = [segment.lower() for segment in segments]
    version = VERSION_SEGMENT.lstrip("/")
    if version in lowered:
        segments = segments[: lowered.index(version)]
    elif lowered and _VERSION.fullmatch(lowered[-1]):
        segments = segments[:-1]
    return "/".join([f"{scheme}://{host}", *segments, version])
