"""A 20,000-row .xlsx (or .csv) dry run, before and after: whole processes, alternating, medians.

"Before" is petsync at another git revision (default: the commit before the calamine
reader), unpacked into a temporary folder with ``git archive`` and run with this same
interpreter; "after" is the working tree. ``--also REVISION`` adds another revision between
the two (say, the main branch beside a change). Each round runs each, in alternating order::

    python benchmarks/bench_spreadsheet.py                      # 20,000 rows, 3 rounds
    python benchmarks/bench_spreadsheet.py --rows 100000 --before f75bca3 --rounds 5
    python benchmarks/bench_spreadsheet.py --format csv --rows 200000 --before 17433f0 \
        --also main

The workbook is made with openpyxl (a test dependency), the CSV with the csv module: name,
categoryId, status and a notes column, one row in fifty invalid, so the reject file is
written too. ``--repeat-every N`` makes every Nth row a copy of the row 1,000 above it
(repeated rows are reported and sent once). ``--shared-strings`` stores the text cells as
shared strings, as Excel and LibreOffice do (openpyxl writes them inline), so the shared
strings' measure is part of the time.
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import statistics
import subprocess
import sys
import tarfile
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from harness import Run, run_process  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
DEFAULT_BEFORE = "f75bca3"  # the last commit that read .xlsx with openpyxl


def sheet_rows(rows: int, repeat_every: int) -> Iterator[list[object]]:
    statuses = ("available", "pending", "sold", None)
    for n in range(rows):
        i = n - 1_000 if repeat_every and n >= 1_000 and n % repeat_every == 0 else n
        category: object = "x" if i % 50 == 0 else i % 97
        yield [f"Pet {i}", category, statuses[i % 4], f"row {i} of the bench"]


def make_workbook(path: Path, rows: int, repeat_every: int = 0) -> None:
    import openpyxl

    workbook = openpyxl.Workbook(write_only=True)
    sheet = workbook.create_sheet("Pets")
    sheet.append(["name", "categoryId", "status", "notes"])
    for row in sheet_rows(rows, repeat_every):
        sheet.append(row)
    workbook.save(path)


_INLINE = re.compile(rb'<c r="([A-Z]+[0-9]+)" t="inlineStr"><is><t>([^<]*)</t></is></c>')
_SST_REL = (
    b'<Relationship Type="http://schemas.openxmlformats.org/officeDocument/2006/relationships/'
    b'sharedStrings" Target="sharedStrings.xml" Id="rIdSst" /></Relationships>'
)
_SST_TYPE = (
    b'<Override PartName="/xl/sharedStrings.xml" ContentType="application/vnd.openxmlformats-'
    b'officedocument.spreadsheetml.sharedStrings+xml"/></Types>'
)


def share_strings(path: Path) -> None:
    """Rewrite the workbook's text cells as shared strings, as Excel and LibreOffice save
    them (openpyxl writes each text inline)."""
    with zipfile.ZipFile(path) as archive:
        parts = {name: archive.read(name) for name in archive.namelist()}
    index: dict[bytes, int] = {}

    def shared(match: re.Match[bytes]) -> bytes:
        number = index.setdefault(match.group(2), len(index))
        return b'<c r="' + match.group(1) + b'" t="s"><v>' + str(number).encode() + b"</v></c>"

    sheet = "xl/worksheets/sheet1.xml"
    parts[sheet] = _INLINE.sub(shared, parts[sheet])
    items = b"".join(b"<si><t>" + text + b"</t></si>" for text in index)
    parts["xl/sharedStrings.xml"] = (
        b'<sst xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main" uniqueCount="'
        + str(len(index)).encode()
        + b'">'
        + items
        + b"</sst>"
    )
    rels = "xl/_rels/workbook.xml.rels"
    parts[rels] = parts[rels].replace(b"</Relationships>", _SST_REL)
    types = "[Content_Types].xml"
    parts[types] = parts[types].replace(b"</Types>", _SST_TYPE)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in parts.items():
            archive.writestr(name, data)


def make_csv(path: Path, rows: int, repeat_every: int = 0) -> None:
    with path.open("w", encoding="utf-8", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["name", "categoryId", "status", "notes"])
        writer.writerows(sheet_rows(rows, repeat_every))


def unpack(revision: str, into: Path) -> Path:
    archive = into / f"{revision}.tar"
    with archive.open("wb") as handle:
        subprocess.run(["git", "archive", revision], cwd=REPO, stdout=handle, check=True)
    with tarfile.open(archive) as tar:
        tar.extractall(into / revision, filter="data")
    return into / revision


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
    parser.add_argument("--also", action="append", default=[], help="another git revision")
    parser.add_argument("--format", choices=("xlsx", "csv"), default="xlsx")
    parser.add_argument(
        "--repeat-every", type=int, default=0, help="every Nth row repeats an earlier one"
    )
    parser.add_argument(
        "--shared-strings",
        action="store_true",
        help="text cells as shared strings, as Excel and LibreOffice save them (.xlsx)",
    )
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        trees = {"before": unpack(args.before, folder)}
        trees.update((revision, unpack(revision, folder)) for revision in args.also)
        trees["after"] = REPO
        workbook = folder / f"pets.{args.format}"
        make = make_workbook if args.format == "xlsx" else make_csv
        make(workbook, args.rows, args.repeat_every)
        if args.shared_strings and args.format == "xlsx":
            share_strings(workbook)
        runs: dict[str, list[Run]] = {name: [] for name in trees}
        for round_number in range(args.rounds):
            order = list(trees) if round_number % 2 == 0 else list(reversed(trees))
            for name in order:
                # A dry run with invalid rows exits 4: the measure is the time, not the code.
                runs[name].append(
                    run_process(name, dry_run(trees[name], workbook), dict(os.environ), folder)
                )
        repeats = f", every {args.repeat_every}th row repeated" if args.repeat_every else ""
        if args.shared_strings:
            repeats += ", text as shared strings"
        print(
            f"{args.rows:,}-row .{args.format}{repeats}, petsync import --dry-run, "
            f"median of {args.rounds}"
        )
        print(f"machine: {os.cpu_count()} cores; before = {args.before}, after = working tree")
        print("| run | wall | CPU | peak RSS | exit | wall, CPU / before's |")
        print("|---|---|---|---|---|---|")
        base = statistics.median(m.wall for m in runs["before"])
        base_cpu = statistics.median(m.cpu for m in runs["before"])
        for name, measured in runs.items():
            wall = statistics.median(m.wall for m in measured)
            cpu = statistics.median(m.cpu for m in measured)
            rss = statistics.median(m.rss_mib for m in measured)
            print(
                f"| {name} | {wall:.2f} s | {cpu:.2f} s | {rss:.0f} MiB | {measured[0].exit_code} "
                f"| {wall / base:.2f}x, {cpu / base_cpu:.2f}x |"
            )


if __name__ == "__main__":
    main()
