"""Client configuration: the one base-URL check, retry policy bounds, split timeouts."""

from __future__ import annotations

import pytest

from petsync.client.config import ClientConfig, RetryPolicy, is_loopback, normalise_base_url
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError


@pytest.mark.parametrize(
    ("url", "expected"),
    [
        ("https://petstore.example.com/v1", "https://petstore.example.com/v1"),
        ("https://petstore.example.com/v1/", "https://petstore.example.com/v1"),
        (" http://127.0.0.1:8080/v1 ", "http://127.0.0.1:8080/v1"),
        ("http://localhost/api/v1", "http://localhost/api/v1"),
        ("http://[::1]:9/v1", "http://[::1]:9/v1"),
    ],
    ids=["https", "trailing-slash", "spaces", "prefix", "ipv6-loopback"],
)
def test_base_url_is_normalised(url: str, expected: str) -> None:
    assert normalise_base_url(url) == expected


def test_a_base_url_without_v1_is_refused_with_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig(base_url="https://petstore.example.com/", api_key=ApiKey("k"))
    assert str(caught.value) == (
        "base URL 'https://petstore.example.com' does not end with /v1; the interface's base "
        "addresses all do (Versioning 2). Did you mean https://petstore.example.com/v1 ?"
    )


@pytest.mark.parametrize(
    ("url", "fragment"),
    [
        ("ftp://h/v1", "must be an http(s) URL with a host"),
        ("petstore/v1", "must be an http(s) URL with a host"),
        ("https://h/v1?x=1", "must not carry a query or fragment"),
        ("http://petstore.example.com/v1", "uses plain http to a host that is not loopback"),
    ],
    ids=["ftp", "no-scheme", "query", "plain-http"],
)
def test_bad_base_urls_are_refused(url: str, fragment: str) -> None:
    with pytest.raises(ConfigError, match=fragment.replace("(", r"\(").replace(")", r"\)")):
        normalise_base_url(url)


def test_plain_http_is_allowed_when_asked() -> None:
    url = "http://petstore.example.com/v1"
    assert normalise_base_url(url, allow_insecure_http=True) == url


@pytest.mark.parametrize(
    ("host", "expected"),
    [("localhost", True), ("127.0.0.2", True), ("[::1]", True), ("10.0.0.1", False), ("h", False)],
    ids=str,
)
def test_is_loopback(host: str, expected: bool) -> None:
    assert is_loopback(host) is expected


def test_timeouts_split_connect_and_read() -> None:
    timeout = ClientConfig("https://h/v1", None, connect_timeout=3, read_timeout=11).timeout
    assert (timeout.connect, timeout.read, timeout.write, timeout.pool) == (3, 11, 11, 3)


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"max_attempts": 0}, "retry max_attempts must be at least 1"),
        ({"budget_seconds": -1.0}, "retry backoff and budget must not be negative"),
    ],
    ids=["attempts", "budget"],
)
def test_retry_policy_bounds(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        RetryPolicy(**fields)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pagination": "keyset"}, "unknown pagination style 'keyset'; use one of: auto, link"),
        ({"max_pages": 0}, "max_pages must be at least 1"),
    ],
    ids=["style", "max-pages"],
)
def test_client_config_bounds(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ClientConfig("https://h/v1", None, **fields)  # type: ignore[arg-type]
