"""Benchmark `petsync import` against the floor: a bare sequential httpx POST loop.

Starts ``petsync serve`` as a subprocess, writes a CSV of N valid rows, then runs whole
processes side by side, alternating their order each round:

* ``floor``: reads the CSV with the csv module and POSTs each row with one httpx client,
  one after another, checking for 201, nothing else;
* ``import``: ``petsync import`` of the same rows at the default concurrency (8), with its
  journal (each batch of rows synced to disk before its POSTs), validation and output files;
* ``import -c1``: the same with ``--concurrency 1``, to show what concurrency adds or costs;
* ``import shm``: diagnostic only, the journal on tmpfs (``/dev/shm``) where a sync is
  free: the difference to ``import`` is what the disk's syncs cost (not a durable setup).

For each it reports wall time, rows/s, the child's CPU time (user + system, from
``os.wait4``) and its peak RSS (``ru_maxrss``), and for the imports the journal's fsync
count and time from ``--report``. A second scenario adds server latency per request (20 ms
by default) and compares the concurrent import with the sequential floor.

    python benchmarks/bench_import.py                        # 10,000 rows, then 2,000 at 20 ms
    python benchmarks/bench_import.py --rows 2000 --rounds 1 --no-latency

Server and client share the machine: on 2 cores they compete with each other.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import statistics
import sys
import tempfile
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from harness import measure, start_server

FLOOR_SCRIPT = textwrap.dedent(
    """
    import csv, os, sys
    import httpx

    base, key = os.environ["PETSYNC_BASE_URL"], os.environ["PETSYNC_API_KEY"]
    with open(sys.argv[1], newline="", encoding="utf-8") as handle:
        rows = csv.DictReader(handle)
        with httpx.Client(headers={"Authorization": f"Bearer {key}"}, timeout=60) as client:
            for row in rows:
                body = {"name": row["name"], "categoryId": int(row["categoryId"])}
                if row["status"]:
                    body["status"] = row["status"]
                response = client.post(f"{base}/pets", json=body)
                if response.status_code != 201:
                    sys.exit(f"POST answered {response.status_code}")
    """
)


@dataclass
class Run:
    name: str
    wall: float
    cpu: float
    rss_mib: float
    exit_code: int
    report: dict[str, object] = field(default_factory=dict)


def write_rows(path: Path, rows: int) -> None:
    statuses = ("available", "pending", "sold", "")
    with path.open("w", encoding="utf-8", newline="") as handle:
        handle.write("name,categoryId,status\n")
        for i in range(rows):
            handle.write(f"Pet {i:06},{i % 97},{statuses[i % 4]}\n")


def run_child(name: str, args: list[str], env: dict[str, str], report: Path | None) -> Run:
    m = measure(name, args, env)
    data = json.loads(report.read_text()) if report is not None and report.exists() else {}
    return Run(name, m.wall, m.cpu, m.rss_mib, m.exit_code, data)


def import_args(source: Path, out: Path, report: Path, *extra: str) -> list[str]:
    return [
        sys.executable,
        "-m",
        "petsync",
        "import",
        str(source),
        "--out-dir",
        str(out),
        "--report",
        str(report),
        *extra,
    ]


def describe(run: Run, rows: int) -> str:
    text = (
        f"wall {run.wall:7.2f} s  {rows / run.wall:7.0f} rows/s  cpu {run.cpu:6.2f} s  "
        f"peak RSS {run.rss_mib:6.1f} MiB  exit {run.exit_code}"
    )
    if run.report:
        text += (
            f"  journal fsyncs {run.report['journal_fsyncs']} "
            f"({run.report['journal_fsync_seconds']} s)"
        )
    return text


def scenario(
    rows: int, rounds: int, latency_ms: float, workdir: Path, variants: list[str]
) -> dict[str, float]:
    key = "bench-" + secrets.token_hex(8)
    server, base_url = start_server(key, latency_ms=latency_ms, timeout=120)
    print(f"\n== {rows:,} rows, {latency_ms:g} ms server latency ==")
    env = dict(os.environ, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
    floor_file = workdir / "floor.py"
    floor_file.write_text(FLOOR_SCRIPT)
    source = workdir / f"rows-{rows}.csv"
    write_rows(source, rows)
    runs: dict[str, list[Run]] = {name: [] for name in variants}
    try:
        for round_no in range(rounds):
            order = list(runs)
            if round_no % 2:
                order.reverse()
            for name in order:
                tag = f"{rows}-{latency_ms:g}-{round_no}-{name.replace(' ', '')}"
                out, report = workdir / f"out-{tag}", workdir / f"report-{tag}.json"
                if name == "floor":
                    args, report_path = [sys.executable, str(floor_file), str(source)], None
                elif name == "import":
                    args, report_path = import_args(source, out, report), report
                elif name == "import -c1":
                    args = import_args(source, out, report, "--concurrency", "1")
                    report_path = report
                else:  # diagnostic: a journal on tmpfs, where a sync costs nothing
                    journal = Path("/dev/shm") / f"petsync-bench-{tag}.jsonl"
                    args = import_args(source, out, report, "--journal", str(journal))
                    report_path = report
                run = run_child(name, args, env, report_path)
                runs[name].append(run)
                print(f"  round {round_no + 1} {name:<11} {describe(run, rows)}", flush=True)
    finally:
        server.terminate()
        server.wait(timeout=60)
    floor = statistics.median(r.wall for r in runs["floor"])
    medians: dict[str, float] = {}
    print(f"  -- medians over {rounds} round(s) --")
    for name, items in runs.items():
        wall = statistics.median(r.wall for r in items)
        cpu = statistics.median(r.cpu for r in items)
        rss = max(r.rss_mib for r in items)
        medians[name] = wall / floor
        print(
            f"  {name:<11} wall {wall:7.2f} s ({wall / floor:4.2f}x floor)  "
            f"{rows / wall:7.0f} rows/s  cpu {cpu:6.2f} s  peak RSS {rss:6.1f} MiB"
        )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2, help="alternating rounds")
    parser.add_argument("--latency-ms", type=float, default=20.0)
    parser.add_argument("--latency-rows", type=int, default=2_000)
    parser.add_argument("--no-latency", action="store_true", help="skip the latency scenario")
    options = parser.parse_args()
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} CPUs")
    with tempfile.TemporaryDirectory(prefix="petsync-bench-import-") as tmp:
        workdir = Path(tmp)
        variants = ["floor", "import", "import -c1"]
        if Path("/dev/shm").is_dir():
            variants.append("import shm")
        try:
            plain = scenario(options.rows, options.rounds, 0.0, workdir, variants)
        finally:
            for leftover in Path("/dev/shm").glob("petsync-bench-*.jsonl"):
                leftover.unlink()
        print(f"  import / floor, no latency: {plain['import']:.2f}x (target <= 1.1x)")
        if not options.no_latency:
            slow = scenario(
                options.latency_rows, 1, options.latency_ms, workdir, ["floor", "import"]
            )
            print(
                f"  import / floor, {options.latency_ms:g} ms latency: "
                f"{slow['import']:.2f}x (target <= 0.2x)"
            )


if __name__ == "__main__":
    main()
