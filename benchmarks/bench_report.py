"""Benchmark ``petsync report`` on a big history: a year of nights at a million pets.

Folding 365 snapshots of a million pets takes longer than a benchmark may run, so the
history is written here directly, in the history's own files (``closed-`` files night by
night, an ``open-`` file, ``_history.json``), as ``petsync history`` would have left it: a
catalogue of ``--pets`` pets in 20 categories of uneven size, of which ``--changed`` change
each night (9 in 10 take a new status, 1 in 10 leave, and as many new pets arrive), one
night in 17 incomplete and one night in 50 missing; each file in id order, as the history
writes them. Then ``petsync report`` runs as a whole
process, ``--rounds`` times after a first run that fills the bundle cache; the script prints
the median wall time, peak RSS and the page's size. Targets: under 2 s, under 3 MB.

The petsync measured is this checkout's (its folder goes first on the report's PYTHONPATH),
and the history is written by a child process: a child's peak RSS counts from its parent's
at spawn, and the driver holding the generator's arrays put a floor of some 350 MiB under
every figure.

    python benchmarks/bench_report.py                              # 1,000,000 pets, 365 nights
    python benchmarks/bench_report.py --pets 100000 --nights 60 --rounds 1
"""

from __future__ import annotations

import argparse
import datetime as dt
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from harness import REPO, print_footer, print_header, run_process

START = dt.date(2025, 1, 1)
STATUSES = ["available", "pending", "sold", None]


def make_history(out: Path, pets: int, nights: int, fraction: float) -> int:
    """Write the history of ``nights`` nights under ``out``; return its versions."""
    import numpy as np
    import pyarrow as pa
    import pyarrow.compute as pc
    import pyarrow.parquet as pq

    from petsync.history.table import (
        HISTORY_SCHEMA,
        HistoryFiles,
        HistoryState,
        Night,
        closed_name,
        open_name,
    )

    rng = np.random.default_rng(3)
    folder = out / "history"
    folder.mkdir(parents=True)
    size = pets * 2  # room for the pets that arrive
    present = np.zeros(size, dtype=bool)
    present[:pets] = True
    status = rng.integers(0, 4, size)
    category = np.minimum(rng.zipf(1.6, size), 20)
    since = np.zeros(size, dtype=np.int64)
    next_id = pets
    closed_files, made = [], 0
    state_nights = []
    gaps = {n for n in range(nights) if n % 50 == 25}

    def table(ids: np.ndarray, start: np.ndarray, end: np.ndarray | None) -> pa.Table:
        names = pc.binary_join_element_wise("pet ", pa.array(ids).cast(pa.string()), "")
        stat = pa.array([STATUSES[s] for s in status[ids]], pa.string())
        begin = pa.array([START + dt.timedelta(days=int(d)) for d in start], pa.date32())
        stop = (
            pa.array([START + dt.timedelta(days=int(d)) for d in end], pa.date32())
            if end is not None
            else pa.nulls(len(ids), pa.date32())
        )
        return pa.Table.from_arrays(
            [
                pa.array(ids + 1),
                names,
                pa.array(category[ids]),
                stat,
                pa.array(rng.integers(-(2**62), 2**62, len(ids))),
                begin,
                stop,
            ],
            schema=HISTORY_SCHEMA,
        )

    for n in range(nights):
        if n in gaps:
            continue
        day = START + dt.timedelta(days=n)
        added = changed = removed = 0
        if n:
            current = np.flatnonzero(present)
            touched = rng.choice(current, int(len(current) * fraction), replace=False)
            leaving = touched[: len(touched) // 10]
            moving = touched[len(touched) // 10 :]
            ended = np.sort(np.concatenate([leaving, moving]))  # a night's file: in id order
            closed = table(ended, since[ended], np.full(len(ended), n))
            name = closed_name(day, 1)
            pq.write_table(closed, folder / name)
            closed_files.append(name)
            made += len(ended)
            present[leaving] = False
            status[moving] = (status[moving] + 1) % 4
            since[moving] = n
            arrivals = np.arange(next_id, next_id + len(leaving))
            next_id += len(leaving)
            present[arrivals] = True
            since[arrivals] = n
            added, changed, removed = len(arrivals), len(moving), len(leaving)
        now = np.flatnonzero(present)
        by = np.bincount(status[now], minlength=4)
        state_nights.append(
            Night(
                date=day,
                run_id=None,
                complete=n % 17 != 5,
                trusted=n % 17 != 5,
                pets=len(now),
                quarantined=int(n % 7 == 3),
                drop_flagged=False,
                by_status={str(STATUSES[i] or "(none)"): int(by[i]) for i in range(4)},
                added=added if n else len(now),
                changed=changed,
                removed=removed,
                kept=0,
            )
        )
    current = np.flatnonzero(present)
    pq.write_table(table(current, since[current], None), folder / open_name(1))
    state = HistoryState(tuple(state_nights), open_name(1), tuple(closed_files), 1)
    HistoryFiles.open(out).write_state(state)
    return made + len(current)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pets", type=int, default=1_000_000)
    parser.add_argument("--nights", type=int, default=365)
    parser.add_argument("--changed", type=float, default=0.01)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--write-history", type=Path, help=argparse.SUPPRESS)  # the child's
    args = parser.parse_args()
    if args.write_history:
        print(make_history(args.write_history, args.pets, args.nights, args.changed))
        return
    path = os.pathsep.join([str(REPO), *filter(None, [os.environ.get("PYTHONPATH")])])
    os.environ["PYTHONPATH"] = path  # this checkout's petsync, for the children
    sys.path.insert(0, str(REPO))  # and for the bytecode the header compiles
    print_header("petsync report")
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        work = Path(tmp)
        out = work / "out"
        started = time.monotonic()
        written = subprocess.run(
            [
                sys.executable,
                __file__,
                *("--write-history", str(out), "--pets", str(args.pets)),
                *("--nights", str(args.nights), "--changed", str(args.changed)),
            ],
            check=True,
            capture_output=True,
            text=True,
        )
        versions = int(written.stdout.split()[-1])
        print(
            f"history: {args.nights} days, {args.pets:,} pets, {versions:,} versions, written "
            f"in {time.monotonic() - started:.1f} s\n",
            flush=True,
        )
        env = dict(os.environ, XDG_CACHE_HOME=str(work / "cache"))
        page = work / "report.html"
        command = [sys.executable, "-m", "petsync", "report", str(out), "-o", str(page)]
        cold = run_process("report (cold cache)", command, env, work)
        assert cold.ok, cold.problem
        runs = [run_process("report", command, env, work) for _ in range(args.rounds)]
        assert all(r.ok for r in runs), [r.problem for r in runs]
        print("| step | wall s | CPU s | peak RSS MiB |")
        print("|---|---:|---:|---:|")
        first = f"{cold.wall:.2f} | {cold.cpu:.2f} | {cold.rss_mib:.0f}"
        print(f"| first report on the machine (bundles Vega) | {first} |")
        print(
            f"| report, median of {len(runs)} | {statistics.median(r.wall for r in runs):.2f} | "
            f"{statistics.median(r.cpu for r in runs):.2f} | {max(r.rss_mib for r in runs):.0f} |"
        )
        size = page.stat().st_size
        print(f"\nHTML: {size / 1e6:.2f} MB ({size:,} bytes)")
    print_footer()


if __name__ == "__main__":
    main()
