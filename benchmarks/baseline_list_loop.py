"""The bare loop: what any client of listPets pays, and nothing more.

Follows the ``rel="next"`` Link headers for the three statuses with one httpx client, decodes
each page's JSON and drops it. Prints the number of pets seen. The benchmarks' floor.

    PETSYNC_BASE_URL=http://127.0.0.1:8080/v1 PETSYNC_API_KEY=key python baseline_list_loop.py
"""

from __future__ import annotations

import os

import httpx

base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
pets = 0
with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
    for status in ("available", "pending", "sold"):
        url: str | None = f"{base}/pets?limit=100&status={status}"
        while url:
            response = client.get(url)
            response.raise_for_status()
            pets += len(response.json())
            link = response.links.get("next")
            url = str(response.url.join(link["url"])) if link else None
print(pets)
