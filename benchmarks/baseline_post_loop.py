"""The sequential POST loop: a CSV of new pets sent one after another with one httpx client.

Reads ``name,categoryId,status`` rows with the csv module, POSTs each as a NewPet (``status``
left out when blank) and requires 201. Prints the number of pets created. The floor of the
import benchmark.

    PETSYNC_BASE_URL=... PETSYNC_API_KEY=... python baseline_post_loop.py rows.csv
"""

from __future__ import annotations

import csv
import os
import sys

import httpx

base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
created = 0
with open(sys.argv[1], newline="", encoding="utf-8") as handle:
    rows = csv.DictReader(handle)
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for row in rows:
            body: dict[str, object] = {"name": row["name"], "categoryId": int(row["categoryId"])}
            if row["status"]:
                body["status"] = row["status"]
            response = client.post(f"{base}/pets", json=body)
            if response.status_code != 201:
                sys.exit(f"POST answered {response.status_code}: {response.text[:200]}")
            created += 1
print(created)
