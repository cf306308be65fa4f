"""What an export does the same way into either table (Delta, Iceberg): one body for each."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from petsync.client.config import ClientConfig
from petsync.client.listing import InvalidRecord
from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError, ExitCode, PetsyncError
from petsync.export.config import ExportConfig
from petsync.export.run import run_export
from petsync.formats.iceberg import open_catalog
from petsync.formats.snapshots import FlaggedSnapshotWarning, list_snapshots, load_snapshot
from petsync.storage.location import parse_location
from tests.export.scripted import BASE, ScriptedClient
from tests.formats.table_nights import DAY1, DAY2, DAY3, NIGHT1, NIGHT2, config, export_to

TABLES = ("delta", "iceberg")
INCOMPLETE = {"sold": "the end was not proven"}


def versions(out: str) -> list[tuple[object, object]]:
    return [(s.date, s.manifest["table_version"]) for s in list_snapshots(out)]


@pytest.mark.parametrize("table_format", TABLES)
def test_an_incomplete_night_is_committed_flagged_and_strict_commits_nothing(
    tmp_path: Path, table_format: str
) -> None:
    out = str(tmp_path / "out")
    export_to(table_format, out, NIGHT1, DAY1)
    incomplete = ScriptedClient(NIGHT2, incomplete=INCOMPLETE)

    report = run_export(config(out, table_format), client=incomplete, today=DAY2)

    assert report.exit_code is ExitCode.INCOMPLETE
    assert load_snapshot(out).attrs["snapshot_date"] == "2026-11-20"
    with pytest.warns(FlaggedSnapshotWarning, match="2026-11-21 is flagged"):
        flagged = load_snapshot(out, "2026-11-21")
    assert flagged.attrs["manifest"]["complete"] is False
    before = versions(out)
    strict = config(out, table_format, strict=True)
    with pytest.raises(PetsyncError, match="refused to publish"):
        run_export(strict, client=ScriptedClient(NIGHT2, incomplete=INCOMPLETE), today=DAY3)
    assert versions(out) == before


@pytest.mark.parametrize("table_format", TABLES)
def test_keep_deletes_older_dates_in_one_commit(tmp_path: Path, table_format: str) -> None:
    out = str(tmp_path / "out")
    for day in (DAY1, DAY2):
        export_to(table_format, out, NIGHT1, day)

    report = export_to(table_format, out, NIGHT2, DAY3, keep=1)

    assert [s.date for s in list_snapshots(out)] == [DAY3]
    assert len(report.pruned) == 2
    assert report.table_version == list_snapshots(out)[0].manifest["table_version"]


def _delta_of_another_schema(out: Path) -> None:
    from deltalake import write_deltalake

    other = pa.table(
        {
            "id": pa.array([1], pa.int32()),
            "name": ["x"],
            "categoryId": pa.array([1], pa.int64()),
            "status": ["sold"],
            "snapshot_date": pa.array([DAY1], pa.date32()),
        }
    )
    write_deltalake(str(out / "pets"), other, partition_by=["snapshot_date"])


def _iceberg_of_another_schema(out: Path) -> None:
    catalog = open_catalog(parse_location(str(out)))
    catalog.create_namespace("petsync")
    catalog.create_table(
        ("petsync", "pets"),
        schema=pa.schema(
            [pa.field("id", pa.int32(), nullable=False), pa.field("name", pa.string())]
        ),
    )


ANOTHER_SCHEMA: dict[str, tuple[str, Callable[[Path], None]]] = {
    "delta": ("Delta", _delta_of_another_schema),
    "iceberg": ("Iceberg", _iceberg_of_another_schema),
}


@pytest.mark.parametrize("table_format", TABLES)
def test_a_table_of_another_schema_is_refused_before_any_request_not_cast(
    tmp_path: Path, table_format: str
) -> None:
    out = tmp_path / "out"
    title, make = ANOTHER_SCHEMA[table_format]
    make(out)
    client = ScriptedClient(NIGHT1)

    with pytest.raises(ConfigError) as caught:
        run_export(config(str(out), table_format), client=client, today=DAY2)

    message = str(caught.value)
    assert caught.value.exit_code is ExitCode.USAGE
    assert message.startswith(
        f"the {title} table at {out / 'pets'} is not a petsync snapshot table: column id is "
        "int32, petsync writes int64"
    )
    assert message.endswith(
        "petsync never changes or casts a table's schema: export to another out_dir=, or move "
        "the table away. Nothing was fetched."
    )
    assert client.requests == 0 and client.listed == []


@pytest.mark.parametrize("table_format", TABLES)
def test_quarantined_records_go_beside_the_table(tmp_path: Path, table_format: str) -> None:
    out = tmp_path / "out"
    bad = InvalidRecord({"id": "x"}, "id is not an integer", f"{BASE}/pets")
    client = ScriptedClient(NIGHT1, extra={None: [bad]})

    run_export(config(str(out), table_format), client=client, today=DAY1)

    quarantine = out / "_quarantine" / "snapshot_date=2026-11-20" / "_quarantine.jsonl"
    assert "id is not an integer" in quarantine.read_text()


@pytest.mark.parametrize("table_format", TABLES)
def test_the_manifest_counts_the_scratch_area_like_a_hive_one(
    tmp_path: Path, table_format: str
) -> None:
    table = export_to(table_format, str(tmp_path / "table"), NIGHT1, DAY1).manifest
    hive_config = ExportConfig(
        client=ClientConfig(BASE, ApiKey("k")), out_dir=tmp_path / "hive", max_drop=1.0
    )
    hive = run_export(hive_config, client=ScriptedClient(NIGHT1), today=DAY1).manifest
    assert table["scratch_bytes"] > 0  # the fetched rows waited in the scratch file
    assert table["scratch_bytes"] == hive["scratch_bytes"]
    assert table["files"] == {"parquet": "pets.parquet", "quarantine": "_quarantine.jsonl"}


def test_an_iceberg_night_is_appended_in_bounded_pieces_in_one_commit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.core.models import Pet
    from petsync.formats import iceberg

    monkeypatch.setattr(iceberg, "APPEND_ROWS", 3)
    out = str(tmp_path / "out")
    first = [Pet(i, f"p{i}", i % 4, "sold") for i in range(1, 11)]
    export_to("iceberg", out, first, DAY1)
    catalog = open_catalog(parse_location(out, what="out"))
    before = catalog.load_table("petsync.pets")
    commits, snapshots = len(before.metadata.metadata_log), len(before.snapshots())
    again = [Pet(i, f"q{i}", 1, "pending") for i in range(5, 13)]
    export_to("iceberg", out, again, DAY1)  # the same night exported again: replaced

    table = catalog.load_table("petsync.pets")
    assert len(table.metadata.metadata_log) == commits + 1  # delete and append: one commit
    operations = [s.summary.operation.value for s in table.snapshots()[snapshots:]]
    assert operations == ["delete", "append"]  # one append of every piece, not one a piece
    files = [task.file for task in table.scan().plan_files()]
    assert len(files) == 3  # 8 pets, written 3 at a time: none of the first export's left
    assert len({file.file_path for file in files}) == 3  # each piece's file named apart
    (night,) = list_snapshots(out)
    assert night.manifest["pets"] == 8
    assert night.manifest["table_version"] == table.current_snapshot().snapshot_id
    assert sorted(load_snapshot(out)["name"]) == sorted(f"q{i}" for i in range(5, 13))


def test_without_pyicebergs_file_writer_a_night_is_appended_a_snapshot_a_piece(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.core.models import Pet
    from petsync.formats import iceberg

    monkeypatch.setattr(iceberg, "APPEND_ROWS", 3)
    monkeypatch.setattr(iceberg, "_file_writer", lambda: None)  # a pyiceberg without it
    out = str(tmp_path / "out")
    pets = [Pet(i, f"p{i}", 1, "sold") for i in range(1, 9)]

    export_to("iceberg", out, pets, DAY1)

    table = open_catalog(parse_location(out, what="out")).load_table("petsync.pets")
    assert [s.summary.operation.value for s in table.snapshots()] == ["append"] * 3
    assert sorted(load_snapshot(out)["id"]) == list(range(1, 9))


def test_an_iceberg_night_is_read_one_data_file_at_a_time(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.io.pyarrow import ArrowScan

    from petsync.core.models import Pet
    from petsync.formats import iceberg

    monkeypatch.setattr(iceberg, "APPEND_ROWS", 4)
    out = str(tmp_path / "out")
    export_to("iceberg", out, [Pet(i, f"p{i}", 1, "sold") for i in range(1, 11)], DAY1)
    (night,) = list_snapshots(out)
    files_per_read: list[int] = []
    read = ArrowScan.to_record_batches

    def counted(self: ArrowScan, tasks: Any) -> Any:
        tasks = list(tasks)
        files_per_read.append(len(tasks))
        return read(self, tasks)

    monkeypatch.setattr(ArrowScan, "to_record_batches", counted)
    ids = [i for piece in iceberg.FORMAT.night_batches(night) for i in piece["id"].to_pylist()]

    assert sorted(ids) == list(range(1, 11))
    assert files_per_read == [1, 1, 1]  # three data files (4 + 4 + 2 pets), one by one


def test_an_iceberg_tables_nights_are_read_from_its_manifests_not_its_rows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pyiceberg.io.pyarrow import ArrowScan

    from petsync.core.models import Pet

    out = str(tmp_path / "out")
    export_to("iceberg", out, NIGHT1, DAY1)
    export_to("iceberg", out, NIGHT2, DAY2)
    export_to("iceberg", out, [Pet(9, "Ada", 1, "sold")], DAY3, keep=2)  # prunes DAY1

    def no_data_file(self: ArrowScan, *args: Any, **kwargs: Any) -> Any:
        raise AssertionError("a data file was read to list the nights")

    monkeypatch.setattr(ArrowScan, "to_record_batches", no_data_file)
    monkeypatch.setattr(ArrowScan, "to_table", no_data_file)

    assert [night.date for night in list_snapshots(out)] == [DAY2, DAY3]


@pytest.mark.parametrize(
    ("batches", "pieces"),
    [([], [0]), ([0], [0]), ([4], [4]), ([8], [4, 4]), ([3, 3], [4, 2]), ([9, 0], [4, 4, 1])],
)
def test_an_iceberg_night_is_cut_into_pieces_of_the_append_size(
    batches: list[int], pieces: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    from petsync.formats import iceberg

    monkeypatch.setattr(iceberg, "APPEND_ROWS", 4)
    schema = pa.schema([("id", pa.int64())])
    ids = iter(range(100))
    given = [
        pa.record_batch([pa.array([next(ids) for _ in range(n)], pa.int64())], schema=schema)
        for n in batches
    ]

    cut = list(iceberg._pieces(iter(given), schema))

    assert [piece.num_rows for piece in cut] == pieces  # an empty night: one empty append
    assert [i for piece in cut for i in piece["id"].to_pylist()] == list(range(sum(batches)))


def test_a_delta_night_is_written_in_petsyncs_row_groups_ids_and_names_plain_zstd(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A reader going a row group at a time (the history) holds one of petsync's row groups,
    not one of delta-rs's million-row ones; ids and names, all different, get no dictionary."""
    import pyarrow.parquet as pq

    from petsync.core.models import Pet
    from petsync.formats import delta

    monkeypatch.setattr(delta, "ROW_GROUP_ROWS", 4)
    out = tmp_path / "out"
    export_to("delta", str(out), [Pet(i, f"p{i}", i % 2, "sold") for i in range(1, 11)], DAY1)

    (data_file,) = (out / "pets").rglob("*.parquet")
    metadata = pq.ParquetFile(data_file).metadata
    groups = [metadata.row_group(g) for g in range(metadata.num_row_groups)]
    assert [group.num_rows for group in groups] == [4, 4, 2]
    names = [groups[0].column(c).path_in_schema for c in range(groups[0].num_columns)]
    encodings = {name: groups[0].column(c).encodings for c, name in enumerate(names)}
    assert not any("DICTIONARY" in e for e in encodings["id"] + encodings["name"])
    assert any("DICTIONARY" in e for e in encodings["status"])  # the others keep theirs
    # zstd, as the dated folders: delta-rs writes uncompressed pages once given properties.
    assert {groups[0].column(c).compression for c in range(len(names))} == {"ZSTD"}
