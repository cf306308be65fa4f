"""Benchmark `petsync export` to S3 (moto's server on loopback) against the same export to disk.

Starts ``petsync serve --seed-pets N`` and moto's S3 server (``ThreadedMotoServer`` in its
own process, 127.0.0.1, an ephemeral port), then runs whole export processes side by side,
alternating their order each round:

* ``local``: ``petsync export --out DIR`` (the local figure);
* ``s3``: ``petsync export --out s3://bench/ROUND`` (streamed multipart uploads, staged
  copies, the conditional lock).

For each: wall time, the child's CPU time and its peak RSS (``ru_maxrss``), medians over the
rounds. The targets: the S3 export's peak RSS within the local figure + 20 MiB, its wall
time at most 1.3x the local one.

    python benchmarks/bench_storage.py                          # 1M pets, 3 rounds
    python benchmarks/bench_storage.py --pets 100000 --rounds 1

Everything runs on one host: the API server, moto and the export compete for its cores, and
moto (a Python server keeping objects in memory) is slower than a real S3 endpoint, so the
S3 figure is a pessimistic one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import secrets
import shutil
import statistics
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path

from harness import Measured, measure, start_server

BUCKET = "petsync-bench"


def _serve_moto(conn: Connection) -> None:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    conn.send(server.get_host_and_port())
    conn.recv()
    server.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pets", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    options = parser.parse_args()

    context = multiprocessing.get_context("spawn")
    parent, child = context.Pipe()
    moto = context.Process(target=_serve_moto, args=(child,), daemon=True)
    moto.start()
    host, port = parent.recv()
    endpoint = f"http://{host}:{port}"
    aws = {
        "AWS_ACCESS_KEY_ID": "bench",
        "AWS_SECRET_ACCESS_KEY": "bench-secret",
        "AWS_REGION": "us-east-1",
        "AWS_ENDPOINT_URL": endpoint,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_CONFIG_FILE": "/nonexistent",
        "AWS_SHARED_CREDENTIALS_FILE": "/nonexistent",
    }
    import botocore.session

    s3 = botocore.session.get_session().create_client(
        "s3",
        endpoint_url=endpoint,
        aws_access_key_id="bench",
        aws_secret_access_key="bench-secret",
        region_name="us-east-1",
    )
    s3.create_bucket(Bucket=BUCKET)

    key = "bench-" + secrets.token_hex(8)
    server, base_url = start_server(key, seed_pets=options.pets)
    workdir = Path(tempfile.mkdtemp(prefix="petsync-bench-storage-"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
    env.update(aws, PETSYNC_API_KEY=key, PETSYNC_BASE_URL=base_url)
    results: dict[str, list[Measured]] = {"local": [], "s3": []}
    try:
        for number in range(options.rounds):
            targets = {
                "local": str(workdir / f"round-{number}"),
                "s3": f"s3://{BUCKET}/round-{number}",
            }
            order = ["local", "s3"] if number % 2 == 0 else ["s3", "local"]
            for name in order:
                args = [sys.executable, "-m", "petsync", "export", "--out", targets[name]]
                measured = measure(name, args, env)
                results[name].append(measured)
                print(
                    f"round {number + 1} {name:5} wall {measured.wall:6.2f} s  cpu "
                    f"{measured.cpu:6.2f} s  peak RSS {measured.rss_mib:6.1f} MiB  "
                    f"exit {measured.exit_code}",
                    flush=True,
                )
    finally:
        server.terminate()
        server.wait(30)
        parent.send("stop")
        moto.join(10)
        shutil.rmtree(workdir, ignore_errors=True)

    print(f"\n{options.pets:,} pets, {options.rounds} rounds, medians:")
    print("| target | wall s | cpu s | peak RSS MiB |")
    print("|---|---|---|---|")
    medians = {}
    for name, runs in results.items():
        wall = statistics.median(r.wall for r in runs)
        cpu = statistics.median(r.cpu for r in runs)
        rss = statistics.median(r.rss_mib for r in runs)
        medians[name] = (wall, rss)
        print(f"| {name} | {wall:.2f} | {cpu:.2f} | {rss:.1f} |")
    (local_wall, local_rss), (s3_wall, s3_rss) = medians["local"], medians["s3"]
    print(
        f"\ns3 / local wall: {s3_wall / local_wall:.2f}x (target <= 1.3x); "
        f"s3 - local peak RSS: {s3_rss - local_rss:+.1f} MiB (target <= +20 MiB)"
    )


if __name__ == "__main__":
    main()
