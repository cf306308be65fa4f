"""The HTTP client of the Petstore API.

``client`` (PetstoreClient: requests, retries, errors translated from httpx), ``listing``
(the one paging loop), ``pagination`` (the strategies it drives), ``retry`` (what may be
retried, and how long to wait), ``auth`` (the only place the key goes on the wire),
``transport`` (the client's own httpx transport), ``deadline`` (the total deadline of one
attempt, under httpx), ``proxy`` (the route: loopback directly, proxies only where the key
stays safe), ``body`` (a response body within its size limit and nesting bound),
``seen_ids`` (the exact record of ids a listing sent), ``config`` (ClientConfig,
RetryPolicy, the base URL rules) and ``api`` (the protocol the jobs depend on, so tests can
pass doubles).
"""
