"""A 20,000-row .xlsx dry run, before and after: whole processes, alternating, medians.

"Before" is petsync at another git revision (default: the commit before the calamine
reader), unpacked into a temporary folder with ``git archive`` and run with this same
interpreter; "after" is the working tree. Each round runs both, in alternating order::

    python benchmarks/bench_spreadsheet.py                      # 20,000 rows, 3 rounds
    python benchmarks/bench_spreadsheet.py --rows 100000 --before f75bca3 --rounds 5

The workbook is made with openpyxl (a test dependency): name, categoryId, status and a
notes column, one row in fifty invalid, so the reject file is written too.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, run_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "f75bca3"  # the last commit that read .xlsx with openpyxl


def make_workbook(path: Path, rows: int) -> None:
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Pets")
    sheet.append(["name", "categoryId", "status", "notes"])
    statuses = ("available", "pending", "sold", None)
    for i in range(rows):
        category: object = "x" if i % 50 == 0 else i % 97
        sheet.append([f"Pet {i}", category, statuses[i % 4], f"row {i} of the bench"])
    workbook.save(path)


def unpack(revision: str, into: Path) -> Path:
    archive = into / "before.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", revision], cwd=REPO, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / "before", filter="data")
    return into / "before"


def dry_run(tree: Path, workbook: Path) -> list[str]:
    """`petsync import WORKBOOK --dry-run` with petsync imported from ``tree`` (first on the
    path, ahead of the working directory and of any installed petsync)."""
    code = (
        f"import sys; sys.path.insert(0, {str(tree)!r}); sys.argv[0] = 'petsync'; "
        "from petsync.cli import main; main()"
    )
    return [sys.executable, "-c", code, "import", str(workbook), "--dry-run"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--before", default=DEFAULT_BEFORE, help="git revision of 'before'")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        before_tree = unpack(args.before, folder)
        workbook = folder / "pets.xlsx"
        make_workbook(workbook, args.rows)
        runs: dict[str, list[Run]] = {"before": [], "after": []}
        trees = {"before": before_tree, "after": REPO}
        for round_number in range(args.rounds):
            order = ["before", "after"] if round_number % 2 == 0 else ["after", "before"]
            for name in order:
                # A dry run with invalid rows exits 4: the measure is the time, not the code.
                runs[name].append(
                    run_process(name, dry_run(trees[name], workbook), dict(os.environ), folder)
                )
        print(f"{args.rows:,}-row .xlsx, petsync import --dry-run, median of {args.rounds}")
        print(f"machine: {os.cpu_count()} cores; before = {args.before}, after = working tree")
        print("| run | wall | CPU | peak RSS | exit |")
        print("|---|---|---|---|---|")
        for name, measured in runs.items():
            wall = statistics.median(m.wall for m in measured)
            cpu = statistics.median(m.cpu for m in measured)
            rss = statistics.median(m.rss_mib for m in measured)
            print(
                f"| {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {measured[0].exit_code} |"
            )


if __name__ == "__main__":
    main()
