"""The naive script a user would write: list of dicts -> pandas DataFrame -> Parquet + CSV.

Pages the three statuses like the bare loop, keeps every record, then writes
``OUT/pets.parquet`` and ``OUT/pets.csv``. Prints the number of rows written.

    PETSYNC_BASE_URL=... PETSYNC_API_KEY=... python baseline_pandas.py OUT
"""

from __future__ import annotations

import os
import sys

import httpx
import pandas as pd

base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
out = sys.argv[1]
rows: list[dict[str, object]] = []
with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
    for status in ("available", "pending", "sold"):
        url: str | None = f"{base}/pets?limit=100&status={status}"
        while url:
            response = client.get(url)
            response.raise_for_status()
            rows.extend(response.json())
            link = response.links.get("next")
            url = str(response.url.join(link["url"])) if link else None
frame = pd.DataFrame(rows)
frame.to_parquet(os.path.join(out, "pets.parquet"), index=False)
frame.to_csv(os.path.join(out, "pets.csv"), index=False)
print(len(frame))
