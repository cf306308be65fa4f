"""Client configuration: the one base-URL check, retry policy bounds, split timeouts."""

from __future__ import annotations

import pytest

from petsync.client.config import (
    DEFAULT_MAX_RESPONSE_BYTES,
    DEFAULT_REQUEST_TIMEOUT,
    DEFAULT_RETRIES,
    ClientConfig,
    RetryPolicy,
    is_loopback,
    normalise_base_url,
)
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, ExitCode


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


def test_a_base_url_without_v1_is_refused_with_the_rule_and_the_fix() -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig(base_url="https://petstore.example.com/", api_key=ApiKey("k"))
    assert str(caught.value) == (
        "base URL 'https://petstore.example.com' does not end with /v1: the API's base "
        "addresses end with /v1 (interface version 1.0.0). "
        "Did you mean https://petstore.example.com/v1 ?"
    )


@pytest.mark.parametrize(
    ("url", "suggestion"),
    [
        ("https://h/v2", "https://h/v1"),
        ("https://h/V1/", "https://h/v1"),
        ("https://h/api/v10", "https://h/api/v1"),
        ("https://h/api", "https://h/api/v1"),
        ("https://h/v1/pets", "https://h/v1"),
        ("http://127.0.0.1:8080/v1/pets/", "http://127.0.0.1:8080/v1"),
        ("https://v1.example.com", "https://v1.example.com/v1"),
    ],
    ids=["v2", "upper-case", "v10", "prefix", "pets-url", "pets-url-slash", "v1-host"],
)
def test_the_suggested_base_url_can_be_right(url: str, suggestion: str) -> None:
    with pytest.raises(ConfigError) as caught:
        normalise_base_url(url)
    assert str(caught.value).endswith(f"Did you mean {suggestion} ?")
    assert normalise_base_url(suggestion) == suggestion


@pytest.mark.parametrize(
    "url",
    [
        "https://user:pw-s3cret@petstore.example.com/v1",
        "https://:pw-s3cret@petstore.example.com/v1",
        "https://user:pw-s3cret@petstore.example.com:notaport/v1",
        "HTTPS://user:pw-s3cret@[::1]/v1",
    ],
    ids=["user-and-password", "password-only", "unparsable-rest", "upper-case-scheme"],
)
def test_a_base_url_with_credentials_is_refused_without_repeating_them(url: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig(base_url=url, api_key=ApiKey("k"))
    message = str(caught.value)
    assert "pw-s3cret" not in message and "user" not in message.split("carries")[0]
    assert message.startswith("base URL '")
    assert "***@" in message
    assert message.endswith(
        "carries a user name or password; petsync sends only the API key (from "
        "PETSYNC_API_KEY or api_key_file=) and would copy the password wherever the URL is "
        "shown. Remove the part before '@'"
    )
    assert caught.value.exit_code == ExitCode.USAGE


def test_a_user_name_alone_is_refused_too() -> None:
    with pytest.raises(ConfigError, match=r"^base URL 'https://\*\*\*@h/v1' carries a user"):
        normalise_base_url("https://me@h/v1")


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
        (
            {"max_attempts": 0},
            "retries (max_attempts=) must be a whole number, 0 or more; got -1",
        ),
        (
            {"max_attempts": 2.5},
            "retries (max_attempts=) must be a whole number, 0 or more; got 2.5",
        ),
        (
            {"budget_seconds": -1.0},
            "the retry budget (budget_seconds=) must be a number of seconds, 0 or more; got -1.0",
        ),
        (
            {"budget_seconds": float("nan")},
            "the retry budget (budget_seconds=) must be a number of seconds, 0 or more; got nan",
        ),
        ({"backoff_base": -0.5}, "retry backoff_base must be a number of seconds, 0 or more"),
    ],
    ids=["attempts", "fractional-attempts", "budget", "nan-budget", "backoff"],
)
def test_retry_policy_bounds_name_the_setting(fields: dict[str, float], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        RetryPolicy(**fields)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_retries_count_the_attempts_after_the_first() -> None:
    assert RetryPolicy().retries == DEFAULT_RETRIES == 5
    assert RetryPolicy(max_attempts=1).retries == 0


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pagination": "keyset"}, "unknown pagination style 'keyset'; use one of: auto, link"),
        ({"max_pages": 0}, "max_pages must be at least 1"),
        (
            {"request_timeout": 0},
            "the request timeout (request_timeout=) must be a number of seconds above 0; got 0",
        ),
        (
            {"request_timeout": float("inf")},
            "the request timeout (request_timeout=) must be a number of seconds above 0; got inf",
        ),
        (
            {"max_response_bytes": 0},
            "the response size limit (max_response_bytes=) must be a whole number of bytes "
            "above 0; got 0",
        ),
        ({"read_timeout": -1}, "read_timeout must be a number of seconds above 0; got -1"),
    ],
    ids=["style", "max-pages", "timeout", "infinite-timeout", "response-size", "read-timeout"],
)
def test_client_config_bounds(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        ClientConfig("https://h/v1", None, **fields)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)


def test_new_settings_have_defaults_so_existing_callers_keep_working() -> None:
    config = ClientConfig("https://h/v1", None)
    assert config.request_timeout == DEFAULT_REQUEST_TIMEOUT == 60.0
    assert config.max_response_bytes == DEFAULT_MAX_RESPONSE_BYTES == 32 * 1024 * 1024


def test_waiting_for_a_connection_counts_against_the_request_timeout() -> None:
    timeout = ClientConfig("https://h/v1", None, connect_timeout=5, request_timeout=2).timeout
    assert timeout.pool == 2
