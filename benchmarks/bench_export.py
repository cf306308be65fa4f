"""Benchmark `petsync export` against the floor: a bare httpx loop over the same server.

Starts ``petsync serve --seed-pets N`` as a subprocess, then runs whole processes side by
side, alternating their order each round:

* ``floor``: a bare httpx client that follows the Link next URLs for the three statuses
  and parses each page's JSON, nothing else;
* ``export --no-sweep``: petsync's export of the same three listings (like for like);
* ``export``: the default, which adds the unfiltered sweep and so fetches every pet twice.

For each it reports wall time, the child's CPU time (user + system, from ``os.wait4``) and
its peak RSS (``ru_maxrss``). A second scenario adds 20 ms of server latency per request and
compares the concurrent export with ``--concurrency 1``.

    python benchmarks/bench_export.py                       # 100k and 1M pets, then latency
    python benchmarks/bench_export.py --pets 100000 --rounds 1 --no-latency

The numbers include the server's share of the machine: server and client run on the same
host, so on a 2-core machine they compete with each other and with anything else running.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from pathlib import Path

from harness import measure, start_server

FLOOR_SCRIPT = textwrap.dedent(
    """
    import os
    import httpx

    base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
    pets = 0
    with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
        for status in ("available", "pending", "sold"):
            url = f"{base}/pets?status={status}&limit=100"
            while url:
                response = client.get(url)
                response.raise_for_status()
                pets += len(response.json())
                nxt = response.links.get("next")
                url = str(response.url.join(nxt["url"])) if nxt else None
    print(pets)
    """
)


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    rss_mib: float
    exit_code: int


def run_child(name: str, args: list[str], env: dict[str, str]) -> Run:
    m = measure(name, args, env)
    return Run(name, m.wall, m.cpu, m.rss_mib, m.exit_code)


def export_args(out: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "petsync", "export", "--out", str(out), *extra]


def scenario(pets: int, rounds: int, workdir: Path) -> None:
    key = "bench-" + secrets.token_hex(8)
    t0 = time.monotonic()
    server, base_url = start_server(key, seed_pets=pets)
    print(f"\n== {pets:,} pets (server seeded in {time.monotonic() - t0:.1f} s) ==")
    env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
    floor_file = workdir / "floor.py"
    floor_file.write_text(FLOOR_SCRIPT)
    runs: dict[str, list[Run]] = {"floor": [], "export --no-sweep": [], "export": []}
    try:
        for round_no in range(rounds):
            order = list(runs)
            if round_no % 2:
                order.reverse()
            for name in order:
                out = workdir / f"out-{round_no}-{name.replace(' ', '')}"
                if name == "floor":
                    args = [sys.executable, str(floor_file)]
                elif name == "export":
                    args = export_args(out)
                else:
                    args = export_args(out, "--no-sweep")
                run = run_child(name, args, env)
                runs[name].append(run)
                print(
                    f"  round {round_no + 1} {name:<18} wall {run.wall:7.2f} s  "
                    f"cpu {run.cpu:7.2f} s  peak RSS {run.rss_mib:6.1f} MiB  exit {run.exit_code}"
                )
                shutil.rmtree(out, ignore_errors=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    floor = statistics.median(r.wall for r in runs["floor"])
    print(f"  -- medians over {rounds} round(s) --")
    for name, items in runs.items():
        wall = statistics.median(r.wall for r in items)
        cpu = statistics.median(r.cpu for r in items)
        rss = max(r.rss_mib for r in items)
        print(
            f"  {name:<18} wall {wall:7.2f} s ({wall / floor:4.2f}x floor)  "
            f"cpu {cpu:7.2f} s  peak RSS {rss:6.1f} MiB  {pets / wall:9.0f} pets/s"
        )


def latency_scenario(pets: int, latency_ms: float, workdir: Path) -> None:
    key = "bench-" + secrets.token_hex(8)
    server, base_url = start_server(key, seed_pets=pets, latency_ms=latency_ms)
    print(f"\n== {latency_ms:g} ms latency per request, {pets:,} pets ==")
    env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
    try:
        results: dict[str, Run] = {}
        for name, extra in (
            ("statuses one after another", ["--no-sweep", "--concurrency", "1"]),
            ("statuses concurrently", ["--no-sweep"]),
            ("with sweep, one after another", ["--concurrency", "1"]),
            ("with sweep, concurrently", []),
        ):
            out = workdir / f"lat-{len(results)}"
            results[name] = run = run_child(name, export_args(out, *extra), env)
            shutil.rmtree(out, ignore_errors=True)
            print(f"  {name:<30} wall {run.wall:6.2f} s  exit {run.exit_code}")
    finally:
        server.terminate()
        server.wait(timeout=60)
    no_sweep = results["statuses concurrently"].wall / results["statuses one after another"].wall
    sweep = results["with sweep, concurrently"].wall / results["with sweep, one after another"].wall
    print(f"  concurrent / sequential, three statuses: {no_sweep:.2f}x (target <= 0.45x)")
    print(f"  concurrent / sequential, with the sweep: {sweep:.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pets", type=int, nargs="+", default=[100_000, 1_000_000])
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds per size")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-pets", type=int, default=60_000)
    parser.add_argument("--no-latency", action="store_true", help="skip the latency scenario")
    options = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="petsync-bench-") as tmp:
        workdir = Path(tmp)
        for pets in options.pets:
            scenario(pets, options.rounds, workdir)
        if not options.no_latency:
            latency_scenario(options.latency_pets, options.latency_ms, workdir)


if __name__ == "__main__":
    main()
