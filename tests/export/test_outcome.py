"""The report: judging a result (drop check, warnings, exit code) and the manifest it writes."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from petsync.client.config import ClientConfig
from petsync.core.apikey import ApiKey
from petsync.core.errors import ExitCode, IncompleteError
from petsync.export.config import ExportConfig
from petsync.export.fetch import FetchResult, ListingResult
from petsync.export.outcome import ExportReport, RunTiming, check_drop
from petsync.export.tallies import CollectedPets
from petsync.formats.night import StatusCounts
from petsync.storage.layout import SnapshotInfo
from tests.export.scripted import BASE

DAY1, DAY2 = dt.date(2026, 11, 21), dt.date(2026, 11, 22)
STARTED = dt.datetime(2026, 11, 22, 2, 30, tzinfo=dt.UTC)


def listing(label: str, *, complete: bool = True, reason: str | None = None) -> ListingResult:
    return ListingResult(
        label=label,
        style="link",
        pages=2,
        requests=3,
        retries=1,
        pets=4,
        invalid=0,
        complete=complete,
        incomplete_reason=reason,
        seconds=0.5,
    )


def report(
    tmp_path: Path,
    *,
    listings: list[ListingResult] | None = None,
    pets: int = 7,
    previous_pets: int | None = None,
    duration: float = 2.0,
) -> ExportReport:
    previous = None
    if previous_pets is not None:
        previous = SnapshotInfo(DAY1, tmp_path, {"pets": previous_pets, "complete": True})
    return ExportReport(
        config=ExportConfig(client=ClientConfig(BASE, ApiKey("k-secret-123")), out_dir=tmp_path),
        snapshot_date=DAY2,
        snapshot_path=None,
        fetched=FetchResult(
            listings=listings if listings is not None else [listing("sold"), listing("all")],
            quarantined=1,
            requests=6,
            retries=2,
        ),
        collected=CollectedPets(
            pets=pets,
            statuses=StatusCounts({"available": 2, "pending": 1, "sold": 2}, 1, {"adopted": 1}),
            rows_fetched=12,
            seen_under_two_statuses=1,
            conflicting_duplicates=1,
            status_mismatches=0,
        ),
        drop=check_drop(pets, previous, 0.2),
        timing=RunTiming(STARTED, STARTED + dt.timedelta(seconds=3), duration),
    )


def test_manifest_keys_keep_their_documented_order(tmp_path: Path) -> None:
    manifest = report(tmp_path).manifest

    assert list(manifest) == [
        "snapshot_date",
        "complete",
        "incomplete_reasons",
        "pets",
        "by_status",
        "no_status",
        "unknown_status",
        "rows_fetched",
        "seen_under_two_statuses",
        "conflicting_duplicates",
        "status_mismatches",
        "quarantined",
        "drop_check",
        "statuses",
        "sweep",
        "pagination_styles",
        "pages",
        "requests",
        "retries",
        "listings",
        "started_at",
        "finished_at",
        "duration_seconds",
        "pets_per_second",
        "scratch_bytes",
        "base_url",
        "petsync_version",
        "api_version",
        "run_id",
        "files",
        "csv_null",
        "extra_fields",
    ]
    assert list(manifest["drop_check"]) == [
        "previous_snapshot_date",
        "previous_pets",
        "pets",
        "drop_fraction",
        "max_drop",
        "flagged",
        "reason",
    ]
    assert list(manifest["listings"][0]) == [
        "listing",
        "pagination_style",
        "pages",
        "requests",
        "retries",
        "pets",
        "invalid",
        "duplicates_dropped",
        "complete",
        "incomplete_reason",
        "seconds",
    ]


def test_manifest_holds_the_reports_facts(tmp_path: Path) -> None:
    manifest = report(tmp_path).manifest

    assert {k: manifest[k] for k in ("pets", "rows_fetched", "quarantined", "pages")} == {
        "pets": 7,
        "rows_fetched": 12,
        "quarantined": 1,
        "pages": 4,
    }
    assert (manifest["requests"], manifest["retries"]) == (6, 2)
    assert manifest["started_at"] == "2026-11-22T02:30:00+00:00"
    assert manifest["finished_at"] == "2026-11-22T02:30:03+00:00"
    assert (manifest["duration_seconds"], manifest["pets_per_second"]) == (2.0, 3.5)
    assert manifest["statuses"] == ["available", "pending", "sold"]


def test_manifest_text_is_indented_utf8_json_ending_in_a_newline(tmp_path: Path) -> None:
    done = report(tmp_path, listings=[listing("sold", complete=False, reason="fin 🐈")])

    text = done.manifest_text()

    assert text.endswith("}\n") and text.startswith('{\n  "snapshot_date": "2026-11-22",\n')
    assert "fin 🐈" in text  # not \ud83d escapes
    assert json.loads(text) == done.manifest


def test_pets_per_second_of_an_instant_run(tmp_path: Path) -> None:
    done = report(tmp_path, duration=0.0)

    assert done.pets_per_second == 0.0
    assert done.manifest["pets_per_second"] is None


def test_a_listing_without_a_reason_still_names_itself(tmp_path: Path) -> None:
    done = report(tmp_path, listings=[listing("sold"), listing("all", complete=False)])

    assert done.complete is False
    assert done.incomplete_reasons == ["listing 'all': its end could not be proven"]


@pytest.mark.parametrize(
    ("listings", "pets", "message"),
    [
        ([listing("all", complete=False, reason="cap")], 7, "is incomplete"),
        ([listing("all")], 0, "is suspicious"),
    ],
    ids=["incomplete", "suspicious"],
)
def test_an_untrusted_result_raises_incomplete_error_with_its_warnings(
    tmp_path: Path, listings: list[ListingResult], pets: int, message: str
) -> None:
    done = report(tmp_path, listings=listings, pets=pets)

    with pytest.raises(IncompleteError) as caught:
        done.raise_for_outcome()

    assert str(caught.value) == f"snapshot 2026-11-22 was written but {message}"
    assert caught.value.exit_code == ExitCode.INCOMPLETE == done.exit_code
    assert caught.value.warnings == tuple(done.warnings) != ()


def test_a_trusted_result_raises_nothing_and_counts_its_pets(tmp_path: Path) -> None:
    done = report(tmp_path)

    done.raise_for_outcome()

    assert done.exit_code == ExitCode.OK
    assert done.warnings == []
    assert done.metric_counts() == {"pets_exported": 7}


@pytest.mark.parametrize(
    ("pets", "previous", "flagged"),
    [(80, 100, False), (79, 100, True), (0, None, True), (5, None, False), (150, 100, False)],
    ids=["exactly-20pct", "over-20pct", "zero", "first-run", "growth"],
)
def test_check_drop_threshold(
    tmp_path: Path, pets: int, previous: int | None, flagged: bool
) -> None:
    info = None
    if previous is not None:
        info = SnapshotInfo(DAY1, tmp_path, {"pets": previous, "complete": True})

    assert check_drop(pets, info, 0.2).flagged is flagged
