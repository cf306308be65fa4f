"""Which proxy carries the client's requests: the environment's, under the plain-HTTP rule.

The bearer key goes in a header of every request, so it may cross the network in clear
text only to a loopback host, directly. httpx would send a plain-http request for
``http://127.0.0.1:8080/v1`` through ``HTTP_PROXY`` and hand the proxy the key; petsync
decides the route itself, once per client (it talks to one origin):

* a loopback base URL is reached directly, always, whatever ``NO_PROXY`` says (a proxy
  would see the key in clear, and its loopback is not ours anyway);
* an ``https`` base URL may go through the environment's proxy: the proxy only relays a
  ``CONNECT`` tunnel and sees the host and port, never the key; that holds for an
  ``http://`` proxy too;
* a plain ``http`` base URL to another host exists only with ``allow_insecure_http``, the
  one override, which accepts the key in clear: its proxy may be used as well.

The environment is read as curl and Python's ``urllib`` read it: ``<scheme>_proxy`` then
``all_proxy``, lower case before upper case, ``HTTP_PROXY`` ignored when ``REQUEST_METHOD``
is set (a CGI request can set it: "httpoxy"); ``NO_PROXY`` as curl reads it. The route is
handed to :class:`~petsync.client.wire.CurlExchange`, which reads no proxy variable itself.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Mapping
from dataclasses import dataclass

import httpx

from petsync.client.config import (
    ClientConfig,
    is_loopback,
    plain_http_refused,
    without_userinfo,
)
from petsync.core.errors import ConfigError

PROXY_SCHEMES = ("http", "https", "socks5", "socks5h")


@dataclass(frozen=True)
class ProxyRoute:
    """A proxy to use: its URL (credentials included) and the variable that named it."""

    url: httpx.URL
    variable: str

    @property
    def shown(self) -> str:
        """The proxy URL for messages: any user and password hidden."""
        return without_userinfo(str(self.url))


def choose_proxy(config: ClientConfig, environ: Mapping[str, str]) -> ProxyRoute | None:
    """The proxy for ``config.base_url`` under the rule above, or None to connect directly.

    Raises :class:`ConfigError` (before any connection) for a proxy setting petsync cannot
    use, naming the variable, and for a plain-http route to a host that is not loopback
    without ``allow_insecure_http`` (``ClientConfig`` refuses that first; this is the same
    rule, checked again where the route is chosen).
    """
    url = httpx.URL(config.base_url)
    if is_loopback(url.host):
        return None
    if url.scheme == "http" and not config.allow_insecure_http:
        raise plain_http_refused(config.base_url)
    found = _proxy_variable(environ, url.scheme)
    if found is None or _bypassed(url, environ):
        return None
    variable, value = found
    return ProxyRoute(_proxy_url(variable, value), variable)


def _proxy_variable(environ: Mapping[str, str], scheme: str) -> tuple[str, str] | None:
    for name in (f"{scheme}_proxy", f"{scheme.upper()}_PROXY", "all_proxy", "ALL_PROXY"):
        if name == "HTTP_PROXY" and "REQUEST_METHOD" in environ:
            continue
        value = environ.get(name, "").strip()
        if value:
            return name, value
    return None


def _bypassed(url: httpx.URL, environ: Mapping[str, str]) -> bool:
    """Whether ``NO_PROXY`` exempts the URL's host (curl's reading: ``*``, a host or domain
    suffix with an optional leading dot and ``:port``, an IP address or CIDR block)."""
    no_proxy = environ.get("no_proxy", "").strip() or environ.get("NO_PROXY", "").strip()
    host = url.host.lower()
    port = str(url.port or _DEFAULT_PORTS[url.scheme])
    for raw in no_proxy.split(","):
        entry = raw.strip().lower()
        if entry == "*":
            return True
        name, entry_port = _split_port(entry)
        name = name.lstrip(".")
        if not name or (entry_port and entry_port != port):
            continue
        if host == name or host.endswith("." + name) or _in_block(host, name):
            return True
    return False


_DEFAULT_PORTS = {"http": 80, "https": 443}


def _split_port(entry: str) -> tuple[str, str]:
    if entry.startswith("["):  # [::1]:8080
        name, _, rest = entry[1:].partition("]")
        return name, rest.removeprefix(":")
    if entry.count(":") == 1:  # host:port (a bare IPv6 address has more colons)
        name, _, port = entry.partition(":")
        return name, port
    return entry, ""


def _in_block(host: str, name: str) -> bool:
    if "/" not in name:
        return False
    try:
        return ipaddress.ip_address(host) in ipaddress.ip_network(name, strict=False)
    except ValueError:
        return False


def _proxy_url(variable: str, value: str) -> httpx.URL:
    shown = without_userinfo(value)
    text = value if "://" in value else f"http://{value}"  # as curl and httpx read it
    try:
        url = httpx.URL(text)
    except httpx.InvalidURL as exc:
        reason = f": {exc}" if shown == value else ""  # the reason might repeat a password
        raise ConfigError(
            f"{variable} names a proxy that is not a valid URL ({shown!r}{reason}); fix or "
            f"unset {variable}"
        ) from None
    if url.scheme not in PROXY_SCHEMES or not url.host:
        raise ConfigError(
            f"{variable} names a proxy petsync cannot use ({shown!r}); give an http://, "
            f"https:// or socks5:// proxy URL with a host, or unset {variable}"
        )
    return url
