"""The libcurl loop: what a Python client of listPets pays at best on one thread.

One kept-alive pycurl handle follows the ``rel="next"`` Link headers for the three statuses,
one after another; each page is decoded by msgspec into typed records (``id`` and
``categoryId`` int64-checked, ``name`` a string, ``status`` a string or absent) and dropped.
Prints the number of pets seen. The benchmarks' second floor, below the httpx loop
(``baseline_list_loop.py``): no HTTP objects, no checks beyond the types.

    PETSYNC_BASE_URL=http://127.0.0.1:8080/v1 PETSYNC_API_KEY=key python baseline_curl_loop.py
"""

from __future__ import annotations

import os
import re
from typing import Annotated

import msgspec
import pycurl

Int64 = Annotated[int, msgspec.Meta(ge=-(2**63), le=2**63 - 1)]


class Pet(msgspec.Struct, gc=False):
    id: Int64
    name: str
    categoryId: Int64  # noqa: N815 - the API's spelling
    status: str | None = None


base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
origin = re.match(r"https?://[^/]+", base)
assert origin is not None
NEXT = re.compile(rb'<([^<>]*)>\s*;\s*rel="?next"?', re.IGNORECASE)
decode = msgspec.json.Decoder(list[Pet]).decode
curl = pycurl.Curl()
curl.setopt(pycurl.HTTPHEADER, [f"Authorization: Bearer {key}", "Accept: application/json"])
pets = 0
for status in ("available", "pending", "sold"):
    url: str | None = f"{base}/pets?limit=100&status={status}"
    while url:
        body: list[bytes] = []
        lines: list[bytes] = []
        curl.setopt(pycurl.URL, url)
        curl.setopt(pycurl.WRITEFUNCTION, body.append)
        curl.setopt(pycurl.HEADERFUNCTION, lines.append)
        curl.perform()
        if curl.getinfo(pycurl.RESPONSE_CODE) != 200:
            raise SystemExit(f"GET {url} answered {curl.getinfo(pycurl.RESPONSE_CODE)}")
        pets += len(decode(b"".join(body)))
        link = next((line for line in lines if line[:5].lower() == b"link:"), None)
        found = NEXT.search(link) if link else None
        target = found.group(1).decode() if found else None
        url = None if target is None else origin.group(0) + target if target[0] == "/" else target
curl.close()
print(pets)
