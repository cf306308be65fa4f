"""Benchmark `petsync import` against a sequential httpx POST loop of the same rows.

CPU-bound scenario (issue 10): the stand-in Petstore (``standin.py``) answers each POST in a
few tens of microseconds of its own CPU (measured and printed), so the client is what is
measured. Whole processes, side by side, the order reversed every other round, medians:

* ``POST loop`` (``baseline_post_loop.py``): the CSV read with the csv module, one POST per
  row with one httpx client, one after another, 201 required. The floor.
* ``import``: ``python -m petsync import ROWS.csv --out-dir DIR`` at its defaults: row
  validation, the journal (synced to disk), the output files, concurrent POSTs. Each run gets
  a fresh output directory, so a fresh journal (a journal makes a re-run create nothing).

Each run is checked: the stand-in must have received exactly one POST per row.

Latency scenario: ``petsync serve --latency-ms 20`` (a real server, 20 ms per request),
where the import's concurrency is what matters, against the same sequential loop.

    python benchmarks/bench_import.py                    # 10,000 rows, then 2,000 at 20 ms
    python benchmarks/bench_import.py --quick            # a small smoke run
    python benchmarks/bench_import.py --rows 5000 --rounds 5 --no-latency
"""

from __future__ import annotations

import argparse
import csv
import os
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

from harness import (
    BENCHMARKS,
    Comparison,
    Run,
    Summary,
    Variant,
    new_key,
    print_footer,
    print_header,
    print_table,
    reference_server,
    run_rounds,
    standin,
    standin_condition,
    summarise,
)

LOOP = "POST loop"
IMPORT = "import"
NAMES = ("Rex", "Bella", "Zoë Müller", 'Bella "Boo" Smith', "Rex, the Brave", "猫咪", "Milo")
STATUSES = ("available", "pending", "sold", "")  # blank: no status sent


def write_rows(path: Path, rows: int) -> None:
    """``rows`` valid NewPet rows: awkward names (commas, quotes, non-ASCII), blank statuses."""
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "categoryId", "status"])
        for i in range(rows):
            category = 2**53 + i if i % 50 == 17 else 1 + i % 12
            writer.writerow([f"{NAMES[i % len(NAMES)]} {i}", category, STATUSES[i % 4]])


def check_loop(rows: int) -> Callable[[Run, Path], str | None]:
    def check(run: Run, run_dir: Path) -> str | None:
        printed = run.stdout.strip().splitlines()[-1:] or ["nothing"]
        if printed != [str(rows)]:
            return f"printed {printed[0]!r}, expected {rows}"
        return check_posts(rows)(run, run_dir)

    return check


def check_posts(rows: int) -> Callable[[Run, Path], str | None]:
    """On the stand-in: exactly one POST per row reached it."""

    def check(run: Run, run_dir: Path) -> str | None:
        if run.server is not None and run.server.posts != rows:
            return f"the stand-in received {run.server.posts} POSTs for {rows} rows"
        return None

    return check


def variants(source: Path, rows: int) -> list[Variant]:
    return [
        Variant(
            LOOP,
            lambda run_dir: [
                sys.executable,
                str(BENCHMARKS / "baseline_post_loop.py"),
                str(source),
            ],
            check_loop(rows),
        ),
        Variant(
            IMPORT,
            lambda run_dir: [
                sys.executable,
                "-m",
                "petsync",
                "import",
                str(source),
                "--out-dir",
                str(run_dir / "out"),
            ],
            check_posts(rows),
        ),
    ]


def on_standin(rows: int, rounds: int, workdir: Path) -> None:
    print(f"\n## {rows:,} rows on the stand-in, {rounds} round(s)\n")
    source = workdir / f"rows-{rows}.csv"
    write_rows(source, rows)
    with standin(0, workdir) as server:
        print(f"  {server.describe()}", flush=True)
        env = server.client_env()
        comparison = run_rounds(variants(source, rows), rounds, env, workdir, server)
    summaries = summarise(comparison)
    print_table(summaries, LOOP, count=rows, unit="row")
    standin_condition(summaries, LOOP)
    target(summaries, 1.0)


def memory_by_size(sizes: list[int], workdir: Path) -> None:
    """The import's peak RSS at several file sizes, one run each, on the stand-in."""
    print(f"\n## memory: import of {', '.join(f'{n:,}' for n in sizes)} rows on the stand-in\n")
    with standin(0, workdir) as server:
        env = server.client_env()
        runs = []
        for rows in sizes:
            source = workdir / f"rows-{rows}.csv"
            write_rows(source, rows)
            variant = variants(source, rows)[1]
            runs.append(run_rounds([variant], 1, env, workdir, server).runs[IMPORT][0])
    print("| rows | wall s | peak RSS MiB |")
    print("|---:|---:|---:|")
    for rows, run in zip(sizes, runs, strict=True):
        print(f"| {rows:,} | {run.wall:.2f} | {run.rss_mib:.0f} |")
    (small, first), (large, last) = (sizes[0], runs[0]), (sizes[-1], runs[-1])
    if large > small:
        per_row = (last.rss_mib - first.rss_mib) * 2**20 / (large - small)
        print(f"growth: {per_row:.0f} bytes of peak RSS per extra row")


def with_latency(rows: int, latency_ms: float, rounds: int, workdir: Path) -> None:
    print(
        f"\n## {latency_ms:g} ms latency per request: petsync serve --latency-ms {latency_ms:g}, "
        f"{rows:,} rows, {rounds} round(s)\n"
    )
    source = workdir / f"rows-{rows}.csv"
    write_rows(source, rows)
    # Each run gets a server of its own, empty: the import lists the catalogue before its
    # first POST (the baseline), so a catalogue grown by earlier runs would slow later ones.
    key = new_key()
    order = variants(source, rows)
    comparison = Comparison(order, {v.name: [] for v in order})
    for round_no in range(rounds):
        for variant in order if round_no % 2 == 0 else order[::-1]:
            with reference_server(key, workdir, latency_ms=latency_ms) as base_url:
                env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
                one = run_rounds([variant], 1, env, workdir)
            comparison.runs[variant.name] += one.runs[variant.name]
    summaries = summarise(comparison)
    print_table(summaries, LOOP, count=rows, unit="row")
    target(summaries, 0.15)


def target(summaries: dict[str, Summary], limit: float) -> None:
    loop, imported = summaries.get(LOOP), summaries.get(IMPORT)
    if loop is None or imported is None:
        return
    ratio = imported.wall / loop.wall
    verdict = "met" if ratio <= limit else "not met"
    print(f"issue 10 target: import wall {ratio:.2f}x the POST loop (<= {limit:g}x): {verdict}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000, help="rows on the stand-in")
    parser.add_argument("--rounds", type=int, default=3, help="alternating rounds (default 3)")
    parser.add_argument("--no-latency", action="store_true", help="skip the latency scenario")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-rows", type=int, default=2_000)
    parser.add_argument(
        "--quick", action="store_true", help="small sizes for a smoke run (not for publishing)"
    )
    parser.add_argument(
        "--memory",
        metavar="SIZES",
        help="only the import's peak RSS at these row counts, e.g. 1000,20000,200000",
    )
    options = parser.parse_args()
    if options.rounds < 1 or options.rows < 1 or options.latency_rows < 1:
        parser.error("--rounds, --rows and --latency-rows must be 1 or more")
    if options.quick:
        options.rows, options.latency_rows = 1_000, 200
    print_header("# petsync import benchmark (benchmarks/bench_import.py)")
    with tempfile.TemporaryDirectory(prefix="petsync-bench-import-") as tmp:
        workdir = Path(tmp)
        if options.memory:
            memory_by_size([int(n) for n in options.memory.split(",")], workdir)
            print_footer()
            return
        on_standin(options.rows, options.rounds, workdir)
        if not options.no_latency:
            with_latency(options.latency_rows, options.latency_ms, options.rounds, workdir)
    print_footer()


if __name__ == "__main__":
    main()
