"""Check a petsync snapshot holds exactly the stand-in's pets; run by bench_export.py.

A separate process so the benchmark driver never loads pandas: a child's peak RSS
(``ru_maxrss``) starts from its parent's at spawn, so the driver must stay small.

    python benchmarks/check_snapshot.py OUT_DIR PETS [--with-status-only]

Exits 0 and prints the pet count when the snapshot's ids are exactly 1..PETS (or those with
a status: the seed leaves pets 3, 13, 23, ... without one); exits 1 saying what differs.
"""

from __future__ import annotations

import argparse
import sys

import numpy as np

import petsync

NO_STATUS_EVERY = 10  # standin.seed_row: pets 3, 13, 23, ... have no status


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out_dir")
    parser.add_argument("pets", type=int)
    parser.add_argument("--with-status-only", action="store_true")
    options = parser.parse_args()
    frame = petsync.load_snapshot(options.out_dir)
    got = np.sort(frame["id"].to_numpy(dtype="int64"))
    want = np.arange(1, options.pets + 1, dtype="int64")
    if options.with_status_only:
        want = want[want % NO_STATUS_EVERY != 3]
    if len(got) != len(want) or not np.array_equal(got, want):
        sys.exit(f"the snapshot holds {len(got)} pets, expected {len(want)} (or other ids)")
    print(len(got))


if __name__ == "__main__":
    main()
