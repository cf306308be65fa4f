"""What both benchmarks share: a `petsync serve` subprocess and whole-process measurements.

Each benchmarked program runs as its own process, so its wall time, CPU time and peak RSS
(from ``os.wait4``'s rusage) are its own, whatever the server or the benchmark itself costs.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from dataclasses import dataclass

SERVE_LINE = "Serving Petstore at "


@dataclass(frozen=True)
class Measured:
    """One whole process: wall seconds, CPU seconds (user + system), peak RSS, exit code."""

    wall: float
    cpu: float
    rss_mib: float
    exit_code: int


def start_server(
    key: str, *, seed_pets: int = 0, latency_ms: float = 0.0, timeout: float = 900.0
) -> tuple[subprocess.Popen[str], str]:
    """Start `petsync serve` on a free loopback port; return it and its base URL."""
    env = dict(os.environ, PETSYNC_API_KEY=key)
    args = [sys.executable, "-m", "petsync", "serve", "--port", "0"]
    if seed_pets:
        args += ["--seed-pets", str(seed_pets)]
    if latency_ms:
        args += ["--latency-ms", str(latency_ms)]
    proc = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stdout.readline()
        if not line:
            raise SystemExit(f"server exited with {proc.wait()}")
        if line.startswith(SERVE_LINE):
            return proc, line.split()[-1]
    proc.kill()
    raise SystemExit("server did not start in time")


def measure(name: str, args: list[str], env: dict[str, str]) -> Measured:
    """Run one process to its end; print the tail of its stderr if it failed."""
    started = time.monotonic()
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    code = os.waitstatus_to_exitcode(status)
    stderr = proc.stderr.read().decode() if proc.stderr else ""
    if proc.stderr:
        proc.stderr.close()
    if code != 0:
        print(f"  {name} exited {code}: {stderr[-400:]}", file=sys.stderr)
    return Measured(wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024, code)
