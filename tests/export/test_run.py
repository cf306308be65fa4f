"""The export job: a scripted client for the job's own logic, the live server end to end."""

from __future__ import annotations

import datetime as dt
import errno
import json
from pathlib import Path
from typing import Any

import pyarrow.parquet as pq
import pytest

from petsync.client.config import ClientConfig
from petsync.client.listing import InvalidRecord
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode, LockedError, PetsyncError, RetriesExhaustedError
from petsync.core.models import Pet, PetStatus
from petsync.export.config import ExportConfig
from petsync.export.outcome import ExportReport
from petsync.export.run import run_export
from petsync.formats.snapshots import latest_snapshot, list_snapshots, load_snapshot
from petsync.storage.layout import (
    CSV_NAME,
    FLAGGED_CSV_NAME,
    FLAGGED_PARQUET_NAME,
    MANIFEST_NAME,
    PARQUET_NAME,
    QUARANTINE_NAME,
    STAGING_DIR,
    partition_path,
)
from petsync.storage.lock import DirectoryLock
from tests.export.published import publish_snapshot
from tests.export.scripted import BASE, ScriptedClient

DAY1 = dt.date(2026, 11, 21)
DAY2 = dt.date(2026, 11, 22)

CATALOGUE = [
    Pet(1, "Rex", 10, "available"),
    Pet(2, "Tom, the cat", 11, "pending"),
    Pet(3, 'Say "hi"', 12, "sold"),
    Pet(4, "No status", 13, None),
    Pet(5, "Odd", 14, "adopted"),
    Pet(2**63 - 1, "=SUM(A1)", -(2**63), "available"),
    Pet(-(2**63), "line\nbreak 🐈", 2**63 - 1, "sold"),
]


def export(
    out: Path, client: ScriptedClient, *, today: dt.date = DAY2, **options: Any
) -> ExportReport:
    config = ExportConfig(client=ClientConfig(BASE, ApiKey("k-secret-123")), out_dir=out, **options)
    return run_export(config, client=client, today=today)


def test_export_writes_every_pet_once_with_exact_values(tmp_path: Path) -> None:
    report = export(tmp_path, ScriptedClient(CATALOGUE))

    assert report.exit_code == ExitCode.OK
    assert report.snapshot_path == partition_path(tmp_path, DAY2)
    rows = sorted(pq.read_table(report.snapshot_path / PARQUET_NAME).to_pylist(), key=_id)
    assert rows == sorted((p.to_json() | {"status": p.status} for p in CATALOGUE), key=_id)


@pytest.mark.parametrize(
    ("file_format", "files"),
    [
        ("both", {"parquet": PARQUET_NAME, "quarantine": QUARANTINE_NAME, "csv": CSV_NAME}),
        ("parquet", {"parquet": PARQUET_NAME, "quarantine": QUARANTINE_NAME}),
    ],
    ids=["both", "parquet-only"],
)
def test_format_decides_the_files_written_and_listed(
    tmp_path: Path, file_format: str, files: dict[str, str]
) -> None:
    report = export(tmp_path, ScriptedClient(CATALOGUE), format=file_format)

    assert report.snapshot_path is not None
    names = sorted(p.name for p in report.snapshot_path.iterdir())
    assert names == sorted([*files.values(), MANIFEST_NAME])
    assert report.manifest["files"] == files


def test_manifest_counts_statuses_and_provenance(tmp_path: Path) -> None:
    report = export(tmp_path, ScriptedClient(CATALOGUE))

    assert report.snapshot_path is not None
    manifest = json.loads((report.snapshot_path / MANIFEST_NAME).read_text())
    assert manifest["pets"] == 7
    assert manifest["by_status"] == {"available": 2, "pending": 1, "sold": 2}
    assert manifest["no_status"] == 1
    assert manifest["unknown_status"] == {"adopted": 1}
    assert manifest["complete"] is True
    assert manifest["incomplete_reasons"] == []
    assert manifest["base_url"] == BASE
    assert manifest["api_version"] == "1.0.0"
    assert manifest["snapshot_date"] == "2026-11-22"
    assert manifest["pagination_styles"] == ["link"]
    assert [entry["listing"] for entry in manifest["listings"]] == [
        "available",
        "pending",
        "sold",
        "all",
    ]
    assert manifest["seen_under_two_statuses"] == 0
    assert manifest["status_mismatches"] == 0
    assert "k-secret-123" not in json.dumps(manifest)


def test_sweep_off_misses_pets_without_a_known_status(tmp_path: Path) -> None:
    report = export(tmp_path, ScriptedClient(CATALOGUE), sweep=False)

    assert report.pets == 5
    assert report.no_status == 0
    assert report.manifest["sweep"] is False


def test_status_option_narrows_the_listings(tmp_path: Path) -> None:
    report = export(tmp_path, ScriptedClient(CATALOGUE), statuses=(PetStatus.SOLD,), sweep=False)

    assert [r.label for r in report.listings] == ["sold"]
    assert report.by_status == {"available": 0, "pending": 0, "sold": 2}


def test_pet_listed_under_two_statuses_is_kept_once_as_last_fetched(tmp_path: Path) -> None:
    moved = Pet(1, "Rex", 10, "sold")  # listed as available first, then as sold
    client = ScriptedClient(CATALOGUE, extra={"sold": [moved]})

    report = export(tmp_path, client, sweep=False, concurrency=1)

    frame = load_snapshot(tmp_path)
    assert frame.loc[frame.id == 1, "status"].tolist() == ["sold"]
    assert report.manifest["seen_under_two_statuses"] == 1
    assert report.manifest["conflicting_duplicates"] == 1
    assert report.pets == 5


def test_body_status_wins_over_the_listing_and_counts_as_mismatch(tmp_path: Path) -> None:
    stray = Pet(42, "Stray", 1, "pending")  # sent under status=sold
    client = ScriptedClient(CATALOGUE, extra={"sold": [stray]})

    report = export(tmp_path, client)

    frame = load_snapshot(tmp_path)
    assert frame.loc[frame.id == 42, "status"].tolist() == ["pending"]
    assert report.manifest["status_mismatches"] == 1


def test_invalid_records_go_to_quarantine_not_the_table(tmp_path: Path) -> None:
    bad = InvalidRecord(
        record={"id": 1.5, "name": "Float"}, reason="Pet 'id' is a float", url=f"{BASE}/pets"
    )
    client = ScriptedClient(CATALOGUE, extra={None: [bad]})

    report = export(tmp_path, client)

    assert report.quarantined == 1
    assert report.manifest["quarantined"] == 1
    assert report.snapshot_path is not None
    lines = (report.snapshot_path / QUARANTINE_NAME).read_text().splitlines()
    assert [json.loads(line) for line in lines] == [
        {
            "listing": "all",
            "reason": "Pet 'id' is a float",
            "url": f"{BASE}/pets",
            "record": {"id": 1.5, "name": "Float"},
        }
    ]
    assert report.pets == len(CATALOGUE)


def test_incomplete_listing_is_published_flagged_with_exit_4(tmp_path: Path) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)
    client = ScriptedClient(CATALOGUE, incomplete={"pending": "no next link and a full page"})

    report = export(tmp_path, client)

    assert report.exit_code == ExitCode.INCOMPLETE
    assert report.complete is False
    assert report.incomplete_reasons == ["listing 'pending': no next link and a full page"]
    assert report.warnings[0].startswith(
        "The export could not be proven complete: listing 'pending' did not prove its end "
        "(why: its listing line, and incomplete_reasons in the manifest). The snapshot is "
        "published flagged"
    )
    assert [s.date for s in list_snapshots(tmp_path)] == [DAY1, DAY2]
    latest = latest_snapshot(tmp_path)
    assert latest is not None and latest.date == DAY1  # the latest *complete* one


@pytest.mark.parametrize(
    "client",
    [ScriptedClient(CATALOGUE, incomplete={"sold": "cap"}), ScriptedClient(CATALOGUE[:2])],
    ids=["incomplete", "suspicious-drop"],
)
def test_a_flagged_snapshot_keeps_its_data_where_dataset_readers_do_not_look(
    tmp_path: Path, client: ScriptedClient
) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)

    report = export(tmp_path, client)

    assert report.snapshot_path is not None
    names = sorted(p.name for p in Path(report.snapshot_path).iterdir())
    assert names == sorted([FLAGGED_PARQUET_NAME, MANIFEST_NAME, FLAGGED_CSV_NAME, QUARANTINE_NAME])
    assert report.manifest["files"]["parquet"] == FLAGGED_PARQUET_NAME
    assert report.manifest["files"]["csv"] == FLAGGED_CSV_NAME
    assert pq.read_table(Path(report.snapshot_path) / FLAGGED_PARQUET_NAME).num_rows == report.pets
    assert [s.trusted for s in list_snapshots(tmp_path)] == [True, False]


def test_a_trusted_rerun_of_a_flagged_day_publishes_pets_parquet(tmp_path: Path) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE, incomplete={"sold": "cap"}))

    report = export(tmp_path, ScriptedClient(CATALOGUE))

    assert report.snapshot_path is not None
    names = sorted(p.name for p in Path(report.snapshot_path).iterdir())
    assert names == sorted([MANIFEST_NAME, CSV_NAME, QUARANTINE_NAME, PARQUET_NAME])
    assert load_snapshot(tmp_path).attrs["snapshot_date"] == DAY2.isoformat()


@pytest.mark.parametrize(
    ("client", "refusal"),
    [
        (
            ScriptedClient(CATALOGUE, incomplete={"sold": "page cap reached"}),
            "The export could not be proven complete: listing 'sold': page cap reached. "
            "Nothing was published. Check the server's paging (`petsync check`) and re-run.",
        ),
        (
            ScriptedClient(CATALOGUE[:2]),
            "Suspicious drop: the pet count fell by 71.4% (from 7 in the snapshot of "
            "2026-11-21 to 2), more than the allowed 20%.",
        ),
    ],
    ids=["incomplete", "suspicious-drop"],
)
def test_strict_refuses_to_publish_what_it_would_flag(
    tmp_path: Path, client: ScriptedClient, refusal: str
) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)

    with pytest.raises(PetsyncError) as caught:
        export(tmp_path, client, strict=True)

    assert caught.value.exit_code == ExitCode.FAILURE
    assert str(caught.value).startswith(f"export refused to publish (strict=True): {refusal}")
    assert str(caught.value).endswith("The previous snapshot stays the latest.")
    assert [s.date for s in list_snapshots(tmp_path)] == [DAY1]
    assert list((tmp_path / STAGING_DIR).iterdir()) == []


def test_failed_listing_publishes_nothing_and_leaves_earlier_snapshots(tmp_path: Path) -> None:
    first = export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)
    failure = RetriesExhaustedError(
        "gave up", attempts=6, elapsed=1.0, last_error=PetsyncError("503")
    )
    client = ScriptedClient(CATALOGUE, errors={"pending": failure})

    with pytest.raises(RetriesExhaustedError):
        export(tmp_path, client)

    assert [s.date for s in list_snapshots(tmp_path)] == [DAY1]
    assert first.snapshot_path is not None
    assert len(load_snapshot(tmp_path)) == len(CATALOGUE)
    assert list((tmp_path / STAGING_DIR).iterdir()) == []


def test_second_run_on_a_locked_directory_is_refused(tmp_path: Path) -> None:
    with DirectoryLock(tmp_path), pytest.raises(LockedError) as caught:
        export(tmp_path, ScriptedClient(CATALOGUE))

    message = str(caught.value)
    assert message.startswith(
        f"another petsync run is writing to {tmp_path} (it holds the lock "
        f"{tmp_path / '.petsync.lock'}, pid "
    )
    assert message.endswith(
        "Wait for it to finish and run again; the lock is released automatically when "
        "that process exits."
    )
    assert caught.value.exit_code == ExitCode.LOCKED


def test_rerun_on_the_same_day_replaces_that_snapshot(tmp_path: Path) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE[:3]))
    export(tmp_path, ScriptedClient(CATALOGUE), max_drop=1.0)

    assert [(s.date, s.pets) for s in list_snapshots(tmp_path)] == [(DAY2, 7)]
    assert len(load_snapshot(tmp_path)) == 7


def test_stale_staging_left_by_a_killed_run_is_removed(tmp_path: Path) -> None:
    stale = tmp_path / STAGING_DIR / "deadbeef"
    stale.mkdir(parents=True)
    (stale / PARQUET_NAME).write_bytes(b"half a file")

    export(tmp_path, ScriptedClient(CATALOGUE))

    assert list((tmp_path / STAGING_DIR).iterdir()) == []


def test_keep_prunes_older_snapshots_after_success(tmp_path: Path) -> None:
    for day in (1, 2, 3):
        export(tmp_path, ScriptedClient(CATALOGUE), today=dt.date(2026, 11, day))

    report = export(tmp_path, ScriptedClient(CATALOGUE), today=dt.date(2026, 11, 4), keep=2)

    assert [s.date.day for s in list_snapshots(tmp_path)] == [3, 4]
    assert [p.name for p in report.pruned] == [
        "snapshot_date=2026-11-01",
        "snapshot_date=2026-11-02",
    ]


def test_keep_does_not_prune_after_an_incomplete_run(tmp_path: Path) -> None:
    for day in (1, 2):
        export(tmp_path, ScriptedClient(CATALOGUE), today=dt.date(2026, 11, day))
    client = ScriptedClient(CATALOGUE, incomplete={"sold": "cap"})

    export(tmp_path, client, today=dt.date(2026, 11, 3), keep=1)

    assert [s.date.day for s in list_snapshots(tmp_path)] == [1, 2, 3]


def test_drop_of_more_than_max_drop_is_flagged_with_exit_4(tmp_path: Path) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)

    report = export(tmp_path, ScriptedClient(CATALOGUE[:5]))

    assert report.exit_code == ExitCode.INCOMPLETE
    assert report.complete is True
    assert report.manifest["drop_check"] == {
        "previous_snapshot_date": "2026-11-21",
        "previous_pets": 7,
        "pets": 5,
        "drop_fraction": round(2 / 7, 6),
        "max_drop": 0.2,
        "flagged": True,
        "reason": "the pet count fell by 28.6% (from 7 in the snapshot of 2026-11-21 to 5), "
        "more than the allowed 20%",
    }
    assert [str(warning) for warning in report.warnings] == [
        "Suspicious drop: the pet count fell by 28.6% (from 7 in the snapshot of 2026-11-21 "
        "to 5), more than the allowed 20%. An outage or a key with a narrower scope is more "
        "likely than a shrinking catalogue: check the key and the server, then re-run "
        "(raise max_drop= if the catalogue really shrank)."
    ]


def test_drop_within_max_drop_passes(tmp_path: Path) -> None:
    export(tmp_path, ScriptedClient(CATALOGUE), today=DAY1)

    report = export(tmp_path, ScriptedClient(CATALOGUE[:6]))

    assert report.exit_code == ExitCode.OK
    assert report.drop.flagged is False


def test_zero_pets_is_flagged_even_without_a_previous_snapshot(tmp_path: Path) -> None:
    report = export(tmp_path, ScriptedClient([]))

    assert report.exit_code == ExitCode.INCOMPLETE
    assert report.drop.reason == "the export holds zero pets"
    assert report.snapshot_path is not None
    assert pq.read_table(report.snapshot_path / FLAGGED_PARQUET_NAME).num_rows == 0


def _id(row: dict[str, Any]) -> int:
    return int(row["id"])


# -- end to end against the reference server ------------------------------------------------

CRAFTED = [
    Pet(2**63 - 1, "Max, the big one", 2**63 - 1, "available"),
    Pet(-(2**63), 'Quote "q" and, comma', -(2**63), "sold"),
    Pet(-5, "line\nbreak", -1, None),
    Pet(9_000_000_000_000_000_000, "emoji 🐈‍⬛", 3, "pending"),
    Pet(9_000_000_000_000_000_001, "=HYPERLINK(1)", 4, None),
    Pet(9_000_000_000_000_000_002, "", 5, "sold"),
    Pet(9_000_000_000_000_000_003, "NA", 6, "available"),
]


def live_export(srv: Any, out: Path, *, client: Any = None, **options: Any) -> ExportReport:
    config = ExportConfig(
        client=ClientConfig(srv.base_url, srv.api_key, pagination=options.pop("style", "auto")),
        out_dir=out,
        **options,
    )
    return run_export(config, client=client, today=DAY2)


def catalogue_rows(srv: Any) -> list[dict[str, Any]]:
    return [
        {"id": p.id, "name": p.name, "categoryId": p.categoryId, "status": p.status}
        for p in sorted(srv.store.all(), key=lambda p: p.id)
    ]


def snapshot_rows(out: Path) -> list[dict[str, Any]]:
    frame = load_snapshot(out)
    rows = []
    for record in frame.astype(object).to_dict(orient="records"):
        status = record["status"]
        rows.append(
            {
                "id": int(record["id"]),
                "name": record["name"],
                "categoryId": int(record["categoryId"]),
                "status": None if status is None or status != status else status,
            }
        )
    return rows


@pytest.mark.parametrize("style", ["link", "cursor", "offset", "page"])
def test_export_equals_the_server_catalogue_in_every_pagination_style(
    petstore_server: Any, tmp_path: Path, style: str
) -> None:
    srv = petstore_server(seed_pets=230, pagination=style)
    for pet in CRAFTED:
        srv.store.insert(pet)

    report = live_export(srv, tmp_path)

    assert report.exit_code == ExitCode.OK
    # Status listings fit on one page here; the sweep pages, so auto must find the style.
    assert {r.label: r.style for r in report.listings}["all"] == style
    assert report.snapshot_path is not None
    manifest = json.loads((report.snapshot_path / MANIFEST_NAME).read_text())
    assert style in manifest["pagination_styles"]
    assert snapshot_rows(tmp_path) == catalogue_rows(srv)
    assert report.no_status == sum(1 for p in srv.store.all() if p.status is None)


def test_unpaged_server_with_more_than_a_page_is_flagged_incomplete(
    petstore_server: Any, tmp_path: Path
) -> None:
    srv = petstore_server(seed_pets=250, pagination="none")

    report = live_export(srv, tmp_path)

    assert report.exit_code == ExitCode.INCOMPLETE
    assert report.complete is False
    assert report.manifest["complete"] is False
    assert report.incomplete_reasons[0].startswith("listing 'all': ")
    assert "cannot prove" in report.incomplete_reasons[0]


def test_export_completes_under_failures_and_rate_limits(
    petstore_server: Any, tmp_path: Path, fake_clock: Any
) -> None:
    from petsync.client.client import PetstoreClient
    from petsync.server.faults import Faults

    srv = petstore_server(
        seed_pets=300, faults=Faults(fail_rate=0.2, rate_limit=20.0, seed=7), clock=fake_clock
    )
    client = PetstoreClient(
        ClientConfig(srv.base_url, srv.api_key), sleep=fake_clock.sleep, clock=fake_clock
    )

    with client:
        report = live_export(srv, tmp_path, client=client, concurrency=1)

    assert report.exit_code == ExitCode.OK
    assert report.manifest["retries"] > 0
    assert snapshot_rows(tmp_path) == catalogue_rows(srv)


def test_csv_round_trips_exactly_through_pyarrow_pandas_and_duckdb(
    petstore_server: Any, tmp_path: Path
) -> None:
    import duckdb
    import pandas as pd
    import pyarrow.csv as pa_csv

    srv = petstore_server(seed_pets=20)
    for pet in CRAFTED:
        srv.store.insert(pet)
    srv.store.insert(Pet(77, "empty status", 1, ""))  # an empty string, not a missing status
    report = live_export(srv, tmp_path)
    assert report.snapshot_path is not None
    csv_path = report.snapshot_path / CSV_NAME
    expected = catalogue_rows(srv)

    # pyarrow: the exact reading documented in the README.
    table = pa_csv.read_csv(
        csv_path,
        convert_options=pa_csv.ConvertOptions(
            column_types={
                "id": "int64",
                "name": "string",
                "categoryId": "int64",
                "status": "string",
            },
            strings_can_be_null=True,
            quoted_strings_can_be_null=False,
        ),
    )
    # The CSV keeps fetch order, which concurrent listings vary; the content is what counts.
    assert sorted(table.to_pylist(), key=lambda row: row["id"]) == expected

    # DuckDB: empty unquoted = NULL, "" = empty string; without hive_partitioning=false it
    # would add a snapshot_date column taken from the directory name.
    rows = duckdb.sql(
        f"SELECT * FROM read_csv('{csv_path}', allow_quoted_nulls=false, hive_partitioning=false, "
        "columns={'id': 'BIGINT', 'name': 'VARCHAR', 'categoryId': 'BIGINT', 'status': 'VARCHAR'}) "
        "ORDER BY id"
    ).fetchall()
    assert [dict(zip(("id", "name", "categoryId", "status"), r, strict=True)) for r in rows] == (
        expected
    )

    # pandas: ids stay exact Int64 and "NA" stays a name.
    frame = pd.read_csv(
        csv_path,
        dtype={"id": "Int64", "name": "string", "categoryId": "Int64", "status": "string"},
        keep_default_na=False,
        na_values={"status": [""]},
    ).sort_values("id")
    assert frame["id"].tolist() == [r["id"] for r in expected]
    assert frame["name"].tolist() == [r["name"] for r in expected]
    text = csv_path.read_text(encoding="utf-8")
    assert "9223372036854775807," in text and "e+" not in text and ".0," not in text


def test_unwritable_output_is_a_usage_error_before_any_request(tmp_path: Path) -> None:
    blocker = tmp_path / "out"
    blocker.write_text("a file where the snapshot directory should be")
    client = ScriptedClient(CATALOGUE)

    with pytest.raises(PetsyncError) as caught:
        export(blocker, client)

    assert caught.value.exit_code == ExitCode.USAGE
    assert str(caught.value).startswith(f"cannot write to out_dir='{blocker}': File exists ")
    assert str(caught.value).endswith(
        "Nothing was fetched. Fix the permissions or free space, or choose another out_dir=."
    )
    assert client.requests == 0


def test_a_write_failing_after_the_fetch_names_the_directory_and_publishes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "out"
    publish_snapshot(out, DAY1, [(1, "Rex", 1, "sold")])

    def disk_full(*args: object, **kwargs: object) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "pets.parquet"))

    monkeypatch.setattr("petsync.formats.folders.write_files", disk_full)

    with pytest.raises(PetsyncError) as caught:
        export(out, ScriptedClient(CATALOGUE))

    assert caught.value.exit_code == ExitCode.FAILURE
    assert str(caught.value) == (
        f"cannot write the snapshot under {out}: No space left on device "
        f"({out / 'pets.parquet'}). Nothing was published; earlier snapshots are untouched. "
        "Free space or fix permissions, or choose another out_dir=."
    )
    assert [s.date for s in list_snapshots(out)] == [DAY1]
    assert list((out / STAGING_DIR).iterdir()) == []
