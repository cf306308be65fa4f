"""Random sequences of nights for the history and report tests."""

from __future__ import annotations

import datetime as dt
import random

from tests.export.published import Row

START = dt.date(2026, 1, 1)


def random_nights(seed: int, nights: int, pets: int) -> list[tuple[dt.date, list[Row], bool]]:
    rng = random.Random(seed)
    current: dict[int, Row] = {i: (i, f"p{i}", i % 3, "available") for i in range(pets)}
    out = []
    for n in range(nights):
        for pet_id in rng.sample(range(pets * 2), pets // 4):
            roll = rng.random()
            if roll < 0.3:
                current.pop(pet_id, None)
            else:
                status = rng.choice(["available", "pending", "sold", None])
                current[pet_id] = (pet_id, rng.choice(["a", "b", f"p{pet_id}"]), 1, status)
        complete = rng.random() > 0.25
        rows = sorted(current.values())
        if not complete:
            rows = [r for r in rows if rng.random() > 0.3]  # an incomplete night lacks pets
        out.append((START + dt.timedelta(days=n), rows, complete))
    return out
