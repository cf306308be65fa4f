"""Benchmark the candidate wires of petsync's client on the stand-in, side by side.

Each route of ``wire_loop.py`` runs as a whole process against the stand-in (``standin.py``,
Link paging, limit=100), in alternating rounds; the table gives medians and ratios to the
``httpx`` loop. What it answers: how much of a page's cost each route adds above libcurl.

    python benchmarks/bench_wire.py --pets 300000 --rounds 3
"""

from __future__ import annotations

import argparse
import sys
import tempfile
from pathlib import Path

from bench_export import check_count, with_status
from harness import (
    BENCHMARKS,
    Variant,
    print_footer,
    print_header,
    print_table,
    run_rounds,
    standin,
    standin_condition,
    summarise,
)
from wire_loop import CONCURRENT, ROUTES


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pets", type=int, default=300_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()
    print_header("# petsync wire benchmark (benchmarks/bench_wire.py)")
    variants = [
        Variant(
            route,
            lambda run_dir, route=route: [sys.executable, str(BENCHMARKS / "wire_loop.py"), route],
            check_count(with_status(options.pets)),
        )
        for route in [*ROUTES, *CONCURRENT]
    ]
    with tempfile.TemporaryDirectory(prefix="petsync-bench-wire-") as tmp:
        workdir = Path(tmp)
        print(f"\n## {options.pets:,} pets on the stand-in, {options.rounds} round(s)\n")
        with standin(options.pets, workdir) as server:
            print(f"  {server.describe()}", flush=True)
            comparison = run_rounds(variants, options.rounds, server.client_env(), workdir, server)
        summaries = summarise(comparison)
        print_table(summaries, "httpx", count=options.pets, unit="pet")
        standin_condition(summaries, "httpx")
    print_footer()


if __name__ == "__main__":
    main()
