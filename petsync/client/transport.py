"""The client's own httpx transport: the request deadline under it, the proxy rule over it.

httpx's :class:`~httpx.HTTPTransport` offers no way to pass an httpcore network backend, so
:class:`DeadlineTransport` builds the httpcore pool itself (a ``ConnectionPool``, or an
``HTTPProxy``/``SOCKSProxy`` for the route :func:`~petsync.client.proxy.choose_proxy` chose)
on a :class:`~petsync.client.deadline.DeadlineBackend`, with the arguments httpx would use,
and lets httpx's own ``handle_request`` drive it, keeping httpx's mapping of httpcore errors.
The one httpx internal relied on is the name of the pool attribute, ``_pool``;
``tests/client/test_deadline.py`` fails if that stops working.
"""

from __future__ import annotations

import httpcore
import httpx

from petsync.client.deadline import DeadlineBackend, RequestDeadline
from petsync.client.proxy import ProxyRoute

# httpx's defaults, stated: one client is shared by the import's sending threads.
MAX_CONNECTIONS = 100
MAX_KEEPALIVE_CONNECTIONS = 20
KEEPALIVE_EXPIRY = 5.0


class DeadlineTransport(httpx.HTTPTransport):
    """httpx's HTTP transport whose connections keep to the current request's deadline.

    ``proxy`` is the route to use (None: connect directly). Certificates are verified with
    httpx's defaults (certifi, or ``SSL_CERT_FILE``/``SSL_CERT_DIR``).
    """

    def __init__(self, deadline: RequestDeadline, proxy: ProxyRoute | None = None) -> None:
        ssl_context = httpx.create_ssl_context(trust_env=True)
        super().__init__(verify=ssl_context)  # its pool is replaced below; it opened nothing
        backend = DeadlineBackend(deadline)
        pool: httpcore.ConnectionPool
        if proxy is None:
            pool = httpcore.ConnectionPool(
                ssl_context=ssl_context,
                max_connections=MAX_CONNECTIONS,
                max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                keepalive_expiry=KEEPALIVE_EXPIRY,
                network_backend=backend,
            )
        else:
            settings = httpx.Proxy(url=proxy.url)  # splits the proxy's credentials off
            proxy_url = httpcore.URL(
                scheme=settings.url.raw_scheme,
                host=settings.url.raw_host,
                port=settings.url.port,
                target=settings.url.raw_path,
            )
            if settings.url.scheme in ("http", "https"):
                pool = httpcore.HTTPProxy(
                    proxy_url=proxy_url,
                    proxy_auth=settings.raw_auth,
                    proxy_headers=settings.headers.raw,
                    ssl_context=ssl_context,
                    proxy_ssl_context=settings.ssl_context,
                    max_connections=MAX_CONNECTIONS,
                    max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                    keepalive_expiry=KEEPALIVE_EXPIRY,
                    network_backend=backend,
                )
            else:
                pool = httpcore.SOCKSProxy(
                    proxy_url=proxy_url,
                    proxy_auth=settings.raw_auth,
                    ssl_context=ssl_context,
                    max_connections=MAX_CONNECTIONS,
                    max_keepalive_connections=MAX_KEEPALIVE_CONNECTIONS,
                    keepalive_expiry=KEEPALIVE_EXPIRY,
                    network_backend=backend,
                )
        self._pool = pool
