"""The HTTP client of the Petstore API.

``client`` (PetstoreClient: requests, retries, errors translated from httpx), ``listing``
(the one paging loop), ``pagination`` (the strategies it drives), ``retry``, ``auth`` (the
only place the key goes on the wire), ``seen_ids`` (the exact record of ids a listing sent),
``config`` (ClientConfig, RetryPolicy, the base URL rules) and ``api`` (the protocol the
jobs depend on, so tests can pass doubles).
"""
