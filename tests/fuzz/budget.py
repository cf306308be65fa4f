"""The fuzz suite's budget: a short, fixed one in CI, a longer random one on demand.

Every test of ``tests/fuzz`` runs under :data:`fuzz`. By default each tries
``EXAMPLES_CI`` examples, derandomized (the same inputs every run: CI never turns red
on a new random draw). ``PETSYNC_FUZZ_EXAMPLES=N`` tries N random examples instead::

    PETSYNC_FUZZ_EXAMPLES=5000 .venv/bin/python -m pytest tests/fuzz -p no:cacheprovider

Each example must end within ``DEADLINE`` (inputs are at most a few hundred kilobytes, and
the readers' bounds keep each one far below it). No example database is written.
"""

from __future__ import annotations

import datetime as dt
import os

from hypothesis import HealthCheck, settings

EXAMPLES_CI = 40
DEADLINE = dt.timedelta(seconds=10)
_LONG = os.environ.get("PETSYNC_FUZZ_EXAMPLES")

fuzz = settings(
    max_examples=int(_LONG) if _LONG else EXAMPLES_CI,
    derandomize=not _LONG,
    deadline=DEADLINE,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    print_blob=bool(_LONG),
)
