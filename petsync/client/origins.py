"""Which URLs are on the API's own origin: a next link may only lead there (the key goes
with every request), and the usual one, a plain path, is resolved without parsing a URL:
the origin's text and the path, which is the URL as httpx would write it."""

from __future__ import annotations

import re

import httpx

_DEFAULT_PORTS = {"http": 80, "https": 443}


def origin(url: httpx.URL) -> tuple[str, str, int | None]:
    """Scheme, host and port (default ports made explicit) of a URL."""
    return (url.scheme, url.host.lower(), url.port or _DEFAULT_PORTS.get(url.scheme))


# A path-absolute reference that resolves by concatenation: a path without "." or ".."
# segments and an optional non-empty query, only characters that httpx keeps as written.
_PLAIN = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})"
_PLAIN_TARGET = re.compile(rf"/(?!/)(?:{_PLAIN}|/)*(?:\?(?:{_PLAIN}|[/?])+)?")
_DOT_SEGMENT = re.compile(r"(?:^|/)\.\.?(?:/|\?|$)")


def same_origin_target(target: str) -> bool:
    """True when ``target`` resolves against any URL as its origin followed by ``target``.

    >>> same_origin_target("/v1/pets?limit=100&after=7"), same_origin_target("//evil/x")
    (True, False)
    """
    if not _PLAIN_TARGET.fullmatch(target):
        return False
    return not _DOT_SEGMENT.search(target.partition("?")[0])


def origin_text(url: httpx.URL) -> str:
    """``scheme://host[:port]`` as httpx writes a URL joined against ``url``."""
    return str(url.join("/"))[:-1]
