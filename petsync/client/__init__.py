"""The HTTP client of the Petstore API.

``client`` (PetstoreClient: requests, retries, errors translated from httpx), ``exchange``
(the seam below it: one request, one answer; an httpx transport carried for tests),
``wire`` (the production exchange: libcurl through pycurl; the request deadline, the size
cap on what is received, proxies, TLS), ``failures`` (the one translation of failures
into petsync's errors), ``listing`` (the one paging loop), ``pagination`` (the strategies it
drives), ``retry`` (what may be retried, and how long to wait), ``auth`` (the only place the
key goes on the wire), ``proxy`` (the route: loopback directly, proxies only where the key
stays safe), ``body`` (a response body decoded within its size limit, JSON nesting bounds),
``records`` (a page's records as typed columns), ``seen_ids`` (the exact record of ids a
listing sent), ``config`` (ClientConfig, RetryPolicy, the base URL rules) and ``api`` (the
protocol the jobs depend on, so tests can pass doubles).
"""
