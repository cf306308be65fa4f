"""Benchmark `petsync export` to S3 (moto's server on loopback) against the same export to disk.

Starts the stand-in Petstore (``standin.py``, so the API is not what sets the pace) and
moto's S3 server (``ThreadedMotoServer`` in its own process, 127.0.0.1, an ephemeral port),
then runs whole export processes side by side, alternating their order each round:

* ``local``: ``petsync export --out DIR`` (the local figure);
* ``s3``: ``petsync export --out s3://bench/ROUND`` (multipart uploads, staged copies, the
  conditional lock).

For each: wall time, CPU time and peak RSS (``os.wait4``), medians over the rounds. The
targets: the S3 export's peak RSS within the local figure + 20 MiB, its wall time at most
1.3x the local one.

    python benchmarks/bench_storage.py                          # 1M pets, 3 rounds
    python benchmarks/bench_storage.py --pets 100000 --rounds 1

Everything runs on one host: the stand-in, moto and the export compete for its cores, and
moto (a Python server keeping objects in memory) is slower than a real S3 endpoint, so the
S3 figure is a pessimistic one.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import sys
import tempfile
from multiprocessing.connection import Connection
from pathlib import Path

from harness import (
    Summary,
    Variant,
    print_footer,
    print_header,
    print_table,
    run_rounds,
    standin,
    summarise,
)

BUCKET = "petsync-bench"


def _serve_moto(conn: Connection) -> None:
    import logging

    from moto.server import ThreadedMotoServer

    logging.getLogger("werkzeug").setLevel(logging.ERROR)
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    server.start()
    host, port = server.get_host_and_port()
    # The bucket is made here, so the driver never imports botocore: a child's peak RSS
    # counts from its parent's at spawn.
    import botocore.session

    botocore.session.get_session().create_client(
        "s3",
        endpoint_url=f"http://{host}:{port}",
        aws_access_key_id="bench",
        aws_secret_access_key="bench-secret",
        region_name="us-east-1",
    ).create_bucket(Bucket=BUCKET)
    conn.send((host, port))
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

    print_header("# petsync storage benchmark (benchmarks/bench_storage.py)")
    try:
        with tempfile.TemporaryDirectory(prefix="petsync-bench-storage-") as tmp:
            workdir = Path(tmp)
            print(f"\n## {options.pets:,} pets on the stand-in, {options.rounds} round(s)\n")
            with standin(options.pets, workdir) as server:
                print(f"  {server.describe()}", flush=True)
                env = {k: v for k, v in os.environ.items() if not k.startswith("AWS_")}
                env.update(aws, PETSYNC_API_KEY=server.key, PETSYNC_BASE_URL=server.base_url)
                comparison = run_rounds(variants(), options.rounds, env, workdir, server)
    finally:
        parent.send("stop")
        moto.join(10)
    summaries = summarise(comparison)
    print_table(summaries, LOCAL, count=options.pets, unit="pet")
    targets(summaries)
    print_footer()


LOCAL, S3 = "local", "s3"


def variants() -> list[Variant]:
    def export(target: str) -> list[str]:
        return [sys.executable, "-m", "petsync", "export", "--out", target]

    return [
        Variant(LOCAL, lambda run_dir: export(str(run_dir / "out")), lambda run, run_dir: None),
        Variant(
            S3,
            lambda run_dir: export(f"s3://{BUCKET}/{run_dir.name}"),
            lambda run, run_dir: None,
        ),
    ]


def targets(summaries: dict[str, Summary]) -> None:
    local, s3 = summaries.get(LOCAL), summaries.get(S3)
    if local is None or s3 is None:
        return
    wall = s3.wall / local.wall
    rss = s3.rss_mib - local.rss_mib
    print(f"s3 / local wall: {wall:.2f}x (target <= 1.3x): {'met' if wall <= 1.3 else 'not met'}")
    print(
        f"s3 - local peak RSS: {rss:+.1f} MiB (target <= +20 MiB): "
        f"{'met' if rss <= 20 else 'not met'}"
    )


if __name__ == "__main__":
    main()
