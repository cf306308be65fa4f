"""The client's one way onto the network: libcurl (through pycurl), the production exchange.

libcurl frames HTTP/1.0, 1.1 and 2, keeps connections alive, verifies TLS, speaks to HTTP
and SOCKS proxies (``CONNECT`` included) and bounds a transfer in time and size; petsync
writes none of that. :class:`CurlExchange` is the production side of the client's seam
(:mod:`petsync.client.exchange`): a method, a URL, header pairs and a body in; a status, the
header fields and the body's pieces as received out. No httpx request or response is built;
a test that needs a fake server gives the client an httpx transport, carried by
:class:`~petsync.client.exchange.HttpxExchange` below the same client code.

What the exchange keeps, per request:

* the total deadline (``CURLOPT_TIMEOUT_MS``: connect, send, headers and body), the connect
  timeout, and the read timeout as "no byte for that long" (``CURLOPT_LOW_SPEED_*``);
* the size cap on the bytes received (``CURLOPT_MAXFILESIZE_LARGE``: a larger
  ``Content-Length`` is refused before the body is read, a longer body as soon as it passes);
  the cap on the *decoded* body is the client's (:mod:`petsync.client.body`), which decodes
  ``gzip``/``deflate`` itself: libcurl hands the body over as sent;
* the route: directly, or through the proxy :mod:`petsync.client.proxy` chose (libcurl
  reads no proxy variable of its own); redirects are never followed; only http and https.

Each thread that sends gets a libcurl handle of its own (a handle serves one thread), and so
a kept-alive connection of its own: a listing or an import's sending thread reuses it.
libcurl's failures become httpx's exceptions here, the seam's contract; the few that
decide what petsync tells the user (a name that does not resolve, a certificate refused, the
deadline passed, an answer too large) are subclasses the translator
(:mod:`petsync.client.failures`) recognises.
"""

from __future__ import annotations

import io
import math
import os
import threading
from collections.abc import Mapping
from dataclasses import dataclass

import certifi
import httpx
import pycurl

from petsync.client.exchange import Answer, AnswerHeaders, RequestHeaders
from petsync.client.proxy import ProxyRoute


class HostNotFound(httpx.ConnectError):
    """The host name does not resolve (trying again will not mend it)."""


class CertificateRefused(httpx.ConnectError):
    """The server's TLS certificate did not verify."""


class ProxyCertificateRefused(CertificateRefused):
    """An ``https://`` proxy's own certificate did not verify (no tunnel was opened)."""


class ProxyUnreachable(httpx.ConnectError):
    """The proxy itself could not be reached: its name does not resolve, or it refused."""


class CaFileUnusable(httpx.ConnectError):
    """libcurl could not use the certificates it was told to trust (libcurl error 77)."""


class TlsFailed(httpx.ConnectError):
    """The TLS handshake failed (often: https spoken to a plain-http port)."""


class DeadlinePassed(httpx.ReadTimeout):
    """The request's total deadline passed before the whole answer came."""


class AnswerTooLarge(httpx.RemoteProtocolError):
    """The answer's body passed the size cap; ``announced`` is its Content-Length, if any."""

    def __init__(self, message: str, *, announced: int | None = None) -> None:
        super().__init__(message)
        self.announced = announced


@dataclass(frozen=True)
class WireLimits:
    """The bounds of one request: seconds (total, connect, silence) and received bytes."""

    total: float
    connect: float
    read: float
    max_body_bytes: int


# Headers libcurl writes itself from the request it is given (or must not get twice).
_SKIPPED = frozenset({b"host", b"content-length", b"transfer-encoding", b"connection"})


class CurlExchange:
    """Sends each request with libcurl, within ``limits``, directly or through ``proxy``.

    ``environ`` is read for ``SSL_CERT_FILE`` and ``SSL_CERT_DIR`` (the certificates to
    trust; default: certifi's bundle, as httpx uses), never for proxies.
    """

    def __init__(
        self,
        limits: WireLimits,
        proxy: ProxyRoute | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        self._limits = limits
        self.proxy = proxy
        self._cafile = env.get("SSL_CERT_FILE") or certifi.where()
        self._capath = env.get("SSL_CERT_DIR") or None
        self._local = threading.local()
        self._lock = threading.Lock()
        self._handles: list[pycurl.Curl] = []
        self._closed = False

    def close(self) -> None:
        with self._lock:
            handles, self._handles = self._handles, []
            self._closed = True
        for handle in handles:
            handle.close()

    def send(self, method: str, url: str, headers: RequestHeaders, body: bytes | None) -> Answer:
        handle = self._handle()
        self.prepare(handle, method, url, headers, body)
        try:
            handle.curl.perform()
        except pycurl.error as exc:
            raise self.translated(handle, exc, method, url) from None
        finally:
            handle.done(method)
        return handle.answered()

    def prepare(
        self, handle: CurlHandle, method: str, url: str, headers: RequestHeaders, body: bytes | None
    ) -> None:
        """Set ``handle`` up for one request (what changed since its last one only)."""
        curl = handle.curl
        handle.answer.clear()  # anything a failed transfer left
        if url != handle.url:  # an import's POSTs all go to one URL
            curl.setopt(pycurl.URL, url)
            handle.url = url
        get = method == "GET"
        if not get:
            content = body or b""
            if method != "POST":  # POST is what pycurl.POST sends
                curl.setopt(pycurl.CUSTOMREQUEST, method)
            curl.setopt(pycurl.POST, 1)
            curl.setopt(pycurl.POSTFIELDSIZE_LARGE, len(content))
            # A body libcurl can read but not rewind: when a kept-alive connection dies
            # after the request went out and before any answer, libcurl re-sends on a new
            # connection if it can rewind the body. For a POST that could create the pet
            # twice; unable to rewind, it fails instead (outcome unknown, never re-sent).
            curl.setopt(pycurl.READFUNCTION, io.BytesIO(content).read)
        elif not handle.got:  # the last request was not a GET
            curl.setopt(pycurl.HTTPGET, 1)
        if headers is not handle.headers or get != handle.got:  # a listing's are all the same
            sent = [name + b": " + value for name, value in headers if name.lower() not in _SKIPPED]
            if not get:
                sent.append(b"Expect:")  # no 100-continue round trip for a small body
            if sent != handle.header_lines:  # nor do an import's POSTs differ
                curl.setopt(pycurl.HTTPHEADER, sent)
                handle.header_lines = sent
            handle.headers = headers
        handle.got = get

    def _handle(self) -> CurlHandle:
        """This thread's libcurl handle (its connection kept alive between requests)."""
        handle: CurlHandle | None = getattr(self._local, "handle", None)
        if handle is None:
            handle = self.new_handle()
            with self._lock:
                if self._closed:
                    handle.curl.close()
                    raise httpx.ConnectError("the client is closed")
                self._handles.append(handle.curl)
            self._local.handle = handle
        return handle

    def new_handle(self) -> CurlHandle:
        """A libcurl handle set up with this exchange's bounds, route and certificates."""
        limits = self._limits
        curl = pycurl.Curl()
        curl.setopt(pycurl.NOSIGNAL, 1)  # threads: no SIGALRM for DNS timeouts
        curl.setopt(pycurl.PROTOCOLS, pycurl.PROTO_HTTP | pycurl.PROTO_HTTPS)
        curl.setopt(pycurl.FOLLOWLOCATION, 0)  # a redirect could carry the key elsewhere
        curl.setopt(pycurl.TIMEOUT_MS, max(1, math.ceil(limits.total * 1000)))
        curl.setopt(pycurl.CONNECTTIMEOUT_MS, max(1, math.ceil(limits.connect * 1000)))
        curl.setopt(pycurl.LOW_SPEED_LIMIT, 1)  # below one byte a second ...
        curl.setopt(pycurl.LOW_SPEED_TIME, max(1, math.ceil(limits.read)))  # ... this long
        curl.setopt(pycurl.MAXFILESIZE_LARGE, limits.max_body_bytes)
        curl.setopt(pycurl.CAINFO, self._cafile)
        curl.setopt(pycurl.PROXY_CAINFO, self._cafile)  # an https:// proxy is verified too
        if self._capath is not None:
            curl.setopt(pycurl.CAPATH, self._capath)
            curl.setopt(pycurl.PROXY_CAPATH, self._capath)
        # "" turns libcurl's own reading of http_proxy, no_proxy & co off: the route is
        # petsync's, chosen from the environment the client was given.
        curl.setopt(pycurl.PROXY, str(self.proxy.url) if self.proxy is not None else "")
        curl.setopt(pycurl.NOPROXY, "")
        return CurlHandle(curl)

    def translated(
        self, handle: CurlHandle, exc: pycurl.error, method: str, url: str
    ) -> httpx.RequestError:
        """libcurl's failure of ``handle``'s transfer as the seam's (httpx's) exception."""
        curl, answer = handle.curl, handle.answer
        code, text = exc.args[0], str(exc.args[1]) if len(exc.args) > 1 else ""
        request = httpx.Request(method, url)  # what httpx's exceptions carry (a failure only)
        message = f"{text} (libcurl error {code})"
        if code == pycurl.E_FILESIZE_EXCEEDED:
            return AnswerTooLarge(message, announced=answer.announced())
        connected = bool(curl.getinfo(pycurl.CONNECT_TIME))
        connect_code = int(curl.getinfo(pycurl.HTTP_CONNECTCODE) or 0)
        if code == pycurl.E_SSL_CACERT_BADFILE:
            return CaFileUnusable(message, request=request)
        if self.proxy is not None:  # with a proxy, libcurl connects to the proxy
            unanswered = not connect_code  # a CONNECT refused comes as error 7 too
            if code in (pycurl.E_COULDNT_RESOLVE_PROXY, pycurl.E_COULDNT_CONNECT) and unanswered:
                return ProxyUnreachable(message, request=request)
            https_proxy = self.proxy.url.scheme == "https"
            if code == pycurl.E_PEER_FAILED_VERIFICATION and https_proxy and unanswered:
                return ProxyCertificateRefused(message, request=request)  # no tunnel yet
        if self.proxy is not None and (code == _E_PROXY or connect_code >= 300):
            shown = f"{connect_code} {message}" if connect_code else message
            return httpx.ProxyError(shown)
        if code == pycurl.E_COULDNT_RESOLVE_HOST:
            return HostNotFound(message, request=request)
        if code == pycurl.E_PEER_FAILED_VERIFICATION:
            return CertificateRefused(message, request=request)
        if code == pycurl.E_SSL_CONNECT_ERROR:
            return TlsFailed(message, request=request)
        if code == pycurl.E_COULDNT_CONNECT:
            return httpx.ConnectError(message, request=request)
        if code == pycurl.E_OPERATION_TIMEDOUT:
            if not connected:
                return httpx.ConnectTimeout(message, request=request)
            if curl.getinfo(pycurl.TOTAL_TIME) >= self._limits.total * 0.99:
                return DeadlinePassed(message, request=request)
            return httpx.ReadTimeout(message, request=request)
        if code in (pycurl.E_UNSUPPORTED_PROTOCOL, pycurl.E_URL_MALFORMAT) and not connected:
            return httpx.UnsupportedProtocol(message, request=request)
        if code == pycurl.E_SEND_ERROR:
            return httpx.WriteError(message, request=request)
        if code == pycurl.E_RECV_ERROR:
            return httpx.ReadError(message, request=request)
        return httpx.RemoteProtocolError(message, request=request)


_E_PROXY = 97  # CURLE_PROXY: a SOCKS proxy's refusal (libcurl 7.73+)


class _Answer:
    """What libcurl hands over of one answer: its header lines and its body's pieces.

    libcurl calls back once per header line and body piece; each call takes the
    interpreter's lock, which the other sending threads contend for. So the callbacks are
    the lists' own ``append`` (no Python frame), set once per handle, and the lines are
    split into names and values after the transfer, in one pass.
    """

    __slots__ = ("body", "lines")

    def __init__(self) -> None:
        self.lines: list[bytes] = []
        self.body: list[bytes] = []

    def take(self) -> tuple[list[tuple[bytes, bytes]], list[bytes]]:
        """The headers (of the last answer: after a 1xx or a proxy's CONNECT reply) and the
        body's pieces; the lists are emptied for the next answer."""
        headers: list[tuple[bytes, bytes]] = []
        for line in self.lines:
            name, colon, value = line.partition(b":")
            if colon:
                headers.append((name, value.strip()))
            elif line[:5] == b"HTTP/":  # a status line: a new answer begins
                headers = []
            elif line[:1] in (b" ", b"\t") and headers:  # obs-fold: one value, joined by SP
                last, previous = headers[-1]
                headers[-1] = (last, previous + b" " + line.strip())
        body = self.body[:]
        self.clear()
        return headers, body

    def clear(self) -> None:
        self.lines.clear()
        self.body.clear()

    def announced(self) -> int | None:
        """The answer's Content-Length, when it announced a single number."""
        headers, _ = self.take()
        values = {v for k, v in headers if k.lower() == b"content-length"}
        if len(values) == 1:
            (value,) = values
            if value.isdigit():
                return int(value)
        return None


class CurlHandle:
    """One thread's libcurl handle, its answer collector, and the headers it was last given."""

    __slots__ = ("answer", "curl", "got", "header_lines", "headers", "url")

    def __init__(self, curl: pycurl.Curl) -> None:
        self.curl = curl
        self.answer = _Answer()
        self.headers: RequestHeaders | None = None  # the pairs last given, as given
        self.got = True  # the last request was a GET (libcurl's default)
        self.header_lines: list[bytes] | None = None  # as last given to libcurl
        self.url: str | None = None  # as last given to libcurl
        curl.setopt(pycurl.HEADERFUNCTION, self.answer.lines.append)
        curl.setopt(pycurl.WRITEFUNCTION, self.answer.body.append)

    def done(self, method: str) -> None:
        """After a transfer, ended or failed: a custom method is not kept for the next."""
        if method not in ("GET", "POST"):
            self.curl.setopt(pycurl.CUSTOMREQUEST, None)

    def answered(self) -> Answer:
        """The answer of the transfer that just ended."""
        fields, pieces = self.answer.take()
        return Answer(self.curl.getinfo(pycurl.RESPONSE_CODE), AnswerHeaders(fields), pieces)
