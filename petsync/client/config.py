"""Client configuration: frozen dataclasses with named defaults.

Command-line options, environment variables, config and job files all end up as these
objects; :func:`normalise_base_url` is the one check of a base URL.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass, field

import httpx

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.interface import LIMIT_MAX, PAGINATION_STYLES, VERSION_SEGMENT, PaginationStyle

DEFAULT_CONNECT_TIMEOUT = 5.0
DEFAULT_READ_TIMEOUT = 30.0
DEFAULT_PAGE_LIMIT = LIMIT_MAX  # the fewest requests
DEFAULT_MAX_PAGES = 200_000  # 20 million pets at 100 a page: a cap, not an expectation
DEFAULT_MAX_ATTEMPTS = 6
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
    """

    max_attempts: int = DEFAULT_MAX_ATTEMPTS
    backoff_base: float = DEFAULT_BACKOFF_BASE
    backoff_max: float = DEFAULT_BACKOFF_MAX
    budget_seconds: float = DEFAULT_RETRY_BUDGET

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise ConfigError("retry max_attempts must be at least 1")
        if self.backoff_base < 0 or self.backoff_max < 0 or self.budget_seconds < 0:
            raise ConfigError("retry backoff and budget must not be negative")


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

    @property
    def timeout(self) -> httpx.Timeout:
        return httpx.Timeout(
            connect=self.connect_timeout,
            read=self.read_timeout,
            write=self.read_timeout,
            pool=self.connect_timeout,
        )


def is_loopback(host: str) -> bool:
    """True for localhost, 127.0.0.0/8 and ::1."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_HOSTS:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def normalise_base_url(url: str, allow_insecure_http: bool = False) -> str:
    """Check a base URL and return it without a trailing slash.

    The interface says every base address ends with ``/v1`` (Versioning 2); plain ``http``
    is accepted only for loopback hosts, because the bearer key would cross the network in
    clear text.
    """
    text = url.strip()
    try:
        parsed = httpx.URL(text)
    except httpx.InvalidURL as exc:
        raise ConfigError(f"base URL {text!r} is not a valid URL: {exc}") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise ConfigError(
            f"base URL {text!r} must be an http(s) URL with a host, "
            "e.g. https://petstore.example.com/v1"
        )
    if parsed.query or parsed.fragment:
        raise ConfigError(f"base URL {text!r} must not carry a query or fragment")
    text = text.rstrip("/")
    if not text.endswith(VERSION_SEGMENT):
        raise ConfigError(
            f"base URL {text!r} does not end with /v1; the interface's base addresses all do "
            f"(Versioning 2). Did you mean {text}/v1 ?"
        )
    if parsed.scheme == "http" and not is_loopback(parsed.host) and not allow_insecure_http:
        raise ConfigError(
            f"base URL {text!r} uses plain http to a host that is not loopback: the API key "
            "would cross the network in clear text. Use https, or pass --allow-insecure-http "
            "if you really mean it."
        )
    return text
