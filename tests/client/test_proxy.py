"""The key never crosses in clear: loopback is reached directly, proxies only where allowed.

Live tests put a recording "proxy" on 127.0.0.1 in the real environment (as a user's shell
would) and check who got what; no traffic leaves loopback (an https target behind the proxy
is only named in the CONNECT line, never resolved or reached).
"""

from __future__ import annotations

import pytest

from petsync.client.client import PetstoreClient
from petsync.client.config import ClientConfig
from petsync.client.proxy import ProxyRoute, choose_proxy
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, TransportError
from tests.client.loopback import Harness, answer

KEY = "sk-proxy-test-7d3e"
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def no_proxies(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    """The developer's own proxy settings out of the way; tests set their own."""
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    monkeypatch.delenv("REQUEST_METHOD", raising=False)
    return monkeypatch


def _client(live: Harness, config: ClientConfig) -> PetstoreClient:
    return live.client(config, environ=None)  # os.environ, as for users


@pytest.mark.parametrize("variable", ["HTTP_PROXY", "http_proxy", "ALL_PROXY"])
@pytest.mark.parametrize("host", ["127.0.0.1", "localhost"])
def test_a_loopback_base_url_never_goes_through_a_proxy(
    variable: str, host: str, live: Harness, no_proxies: pytest.MonkeyPatch
) -> None:
    proxy = live.serve(answer())
    server = live.serve(answer())
    no_proxies.setenv(variable, proxy.origin)
    no_proxies.setenv("NO_PROXY", "")  # whatever NO_PROXY says
    config = ClientConfig(f"http://{host}:{server.port}/v1", ApiKey(KEY), pagination="none")
    assert list(_client(live, config).list_pets())[0].pets == []
    assert proxy.connections == 0 and proxy.requests == []
    assert f"Authorization: Bearer {KEY}".encode() in server.requests[0]


def test_https_goes_through_the_proxy_only_as_a_connect_tunnel(
    live: Harness, no_proxies: pytest.MonkeyPatch
) -> None:
    proxy = live.serve(answer("403 Forbidden", b""))
    no_proxies.setenv("HTTPS_PROXY", proxy.origin)
    config = ClientConfig("https://petstore.test/v1", ApiKey(KEY), pagination="none")
    with pytest.raises(TransportError) as caught:
        list(_client(live, config).list_pets())
    assert str(caught.value) == (
        f"the proxy {proxy.origin} (from HTTPS_PROXY) refused to open a tunnel for GET "
        "https://petstore.test/v1/pets?limit=100 (ProxyError: 403 CONNECT tunnel failed, response "
        "403 (libcurl error 7)); check the proxy settings (HTTPS_PROXY, ALL_PROXY, NO_PROXY)"
    )
    assert proxy.requests[0].startswith(b"CONNECT petstore.test:443 HTTP/1.1\r\n")
    assert KEY.encode() not in proxy.requests[0] and b"Authorization" not in proxy.requests[0]


def test_plain_http_with_the_override_may_use_the_proxy(
    live: Harness, no_proxies: pytest.MonkeyPatch
) -> None:
    proxy = live.serve(answer())
    no_proxies.setenv("HTTP_PROXY", proxy.origin)
    config = ClientConfig(
        "http://petstore.test/v1", ApiKey(KEY), pagination="none", allow_insecure_http=True
    )
    assert list(_client(live, config).list_pets())[0].pets == []
    assert proxy.requests[0].startswith(b"GET http://petstore.test/v1/pets?limit=100 HTTP/1.1")


def test_refusals_come_before_any_connection(live: Harness, no_proxies: pytest.MonkeyPatch) -> None:
    proxy = live.serve(answer())
    for variable in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY"):
        no_proxies.setenv(variable, proxy.origin)
    with pytest.raises(ConfigError, match="uses plain http to a host that is not loopback"):
        ClientConfig("http://petstore.test/v1", ApiKey(KEY))
    with pytest.raises(ConfigError, match="carries a user name or password"):
        ClientConfig("https://me:pw@petstore.test/v1", ApiKey(KEY))
    no_proxies.setenv("HTTPS_PROXY", "ftp://me:s3cret@127.0.0.1:21")
    with pytest.raises(ConfigError) as caught:
        _client(live, ClientConfig("https://petstore.test/v1", ApiKey(KEY)))
    assert str(caught.value) == (
        "HTTPS_PROXY names a proxy petsync cannot use ('ftp://***@127.0.0.1:21'); give an "
        "http://, https:// or socks5:// proxy URL with a host, or unset HTTPS_PROXY"
    )
    assert proxy.connections == 0


def test_the_route_rule_holds_even_for_a_config_that_skipped_its_checks() -> None:
    config = ClientConfig("http://petstore.test/v1", None, allow_insecure_http=True)
    object.__setattr__(config, "allow_insecure_http", False)
    with pytest.raises(ConfigError, match="uses plain http to a host that is not loopback"):
        choose_proxy(config, {"HTTP_PROXY": "http://127.0.0.1:3128"})


# -- how the environment is read -------------------------------------------------------------

HTTPS = "https://api.petstore.test/v1"


@pytest.mark.parametrize(
    ("base", "environ", "expected"),
    [
        (HTTPS, {}, None),
        (HTTPS, {"HTTPS_PROXY": "http://p:3128"}, ("http://p:3128", "HTTPS_PROXY")),
        (
            HTTPS,
            {"https_proxy": "http://low:1", "HTTPS_PROXY": "http://up:2"},
            ("http://low:1", "https_proxy"),
        ),
        (HTTPS, {"HTTP_PROXY": "http://p:3128"}, None),
        (HTTPS, {"ALL_PROXY": "http://all:1"}, ("http://all:1", "ALL_PROXY")),
        (HTTPS, {"HTTPS_PROXY": "p:3128"}, ("http://p:3128", "HTTPS_PROXY")),
        (HTTPS, {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "petstore.test"}, None),
        (HTTPS, {"HTTPS_PROXY": "http://p:1", "no_proxy": ".petstore.test"}, None),
        (HTTPS, {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "other.test, *"}, None),
        (HTTPS, {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "api.petstore.test:443"}, None),
        (
            HTTPS,
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "api.petstore.test:8443"},
            ("http://p:1", "HTTPS_PROXY"),
        ),
        (
            HTTPS,
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "test-petstore.test"},
            ("http://p:1", "HTTPS_PROXY"),
        ),
        ("https://10.1.2.3/v1", {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "10.0.0.0/8"}, None),
        (
            "https://[2001:db8::5]/v1",
            {"HTTPS_PROXY": "http://p:1", "NO_PROXY": "2001:db8::5"},
            None,
        ),
        ("http://[::1]:8080/v1", {"ALL_PROXY": "http://p:1"}, None),
        ("https://127.0.0.5/v1", {"HTTPS_PROXY": "http://p:1"}, None),
    ],
    ids=[
        "none",
        "https-proxy",
        "lower-case-first",
        "http-proxy-is-not-for-https",
        "all-proxy",
        "no-scheme-means-http",
        "no-proxy-domain",
        "no-proxy-leading-dot",
        "no-proxy-star",
        "no-proxy-port",
        "no-proxy-other-port",
        "no-proxy-is-not-a-substring",
        "no-proxy-cidr",
        "no-proxy-ipv6",
        "loopback-ipv6",
        "loopback-https",
    ],
)
def test_the_environment_is_read_as_curl_reads_it(
    base: str, environ: dict[str, str], expected: tuple[str, str] | None
) -> None:
    route = choose_proxy(ClientConfig(base, None), environ)
    if expected is None:
        assert route is None
    else:
        assert isinstance(route, ProxyRoute)
        assert (str(route.url), route.variable) == expected


def test_http_proxy_is_ignored_inside_a_cgi_request() -> None:
    config = ClientConfig("http://petstore.test/v1", None, allow_insecure_http=True)
    environ = {"HTTP_PROXY": "http://attacker:1", "REQUEST_METHOD": "GET"}
    assert choose_proxy(config, environ) is None


@pytest.mark.parametrize(
    ("value", "message"),
    [
        (
            "ftp://me:pw@proxy:21",
            "ALL_PROXY names a proxy petsync cannot use ('ftp://***@proxy:21'); give an "
            "http://, https:// or socks5:// proxy URL with a host, or unset ALL_PROXY",
        ),
        (
            "socks4://proxy:1080",
            "ALL_PROXY names a proxy petsync cannot use ('socks4://proxy:1080'); give an "
            "http://, https:// or socks5:// proxy URL with a host, or unset ALL_PROXY",
        ),
        (
            "http://p:notaport",
            "ALL_PROXY names a proxy that is not a valid URL ('http://p:notaport': Invalid "
            "port: 'notaport'); fix or unset ALL_PROXY",
        ),
    ],
    ids=["not-a-proxy-scheme", "socks4", "bad-port"],
)
def test_an_unusable_proxy_setting_is_a_config_error(value: str, message: str) -> None:
    with pytest.raises(ConfigError) as caught:
        choose_proxy(ClientConfig("https://h/v1", None), {"ALL_PROXY": value})
    assert str(caught.value) == message


def test_a_socks5_proxy_needs_no_extra_package() -> None:
    route = choose_proxy(
        ClientConfig("https://h/v1", None), {"ALL_PROXY": "socks5h://me:pw@127.0.0.1:1080"}
    )
    assert route is not None and (route.shown, route.variable) == (
        "socks5h://***@127.0.0.1:1080",
        "ALL_PROXY",
    )


def test_the_route_comes_from_the_environment_the_client_was_given(
    live: Harness, no_proxies: pytest.MonkeyPatch
) -> None:
    # The process's own NO_PROXY must not undo the route chosen from the mapping given.
    no_proxies.setenv("NO_PROXY", "*")
    proxy = live.serve(answer("403 Forbidden", b""))
    config = ClientConfig("https://petstore.test/v1", ApiKey(KEY), pagination="none")
    client = live.client(config, environ={"HTTPS_PROXY": proxy.origin})
    with pytest.raises(TransportError, match="refused to open a tunnel"):
        list(client.list_pets())
    assert proxy.requests[0].startswith(b"CONNECT petstore.test:443 HTTP/1.1\r\n")
