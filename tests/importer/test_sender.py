"""The send pass: each row durably journaled `sending` before its POST, within the window."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from petsync.core.models import NewPet, Pet
from petsync.importer.config import SENDING_WINDOW, ImportConfig
from petsync.importer.run import run_import
from tests.importer.doubles import InstantClient, SyncRecorder, journal_of


def write_pets(path: Path, count: int) -> dict[str, int]:
    """A CSV of ``count`` pets named P0, P1, ...; each name's row number."""
    path.write_text("name,categoryId\n" + "".join(f"P{i},{i}\n" for i in range(count)))
    return {f"P{i}": i + 2 for i in range(count)}


class DurabilityCheckingClient(InstantClient):
    """Creates pets instantly; notes each POST whose row's `sending` line was not yet synced.

    It reads the journal file as the POST leaves and compares the end of the row's
    `sending` line with what the recorded syncs of that file had made durable. (Noting
    instead of asserting: an assertion inside a worker thread would end up in
    ``report.stop``, not in the test.)
    """

    def __init__(self, journal: Path, syncs: SyncRecorder, rows: dict[str, int]) -> None:
        super().__init__()
        self.journal = journal
        self.syncs = syncs
        self.rows = rows
        self.unsynced: list[int] = []

    def create_pet(self, pet: NewPet) -> Pet:
        row = self.rows[pet.name]
        line = b'\n{"row": %d, "state": "sending"}\n' % row
        start = self.journal.read_bytes().find(line)
        if start < 0 or self.syncs.durable_bytes(self.journal) < start + len(line):
            with self.lock:
                self.unsynced.append(row)
        return super().create_pet(pet)


@pytest.mark.parametrize("concurrency", [1, 4], ids=["one-sender", "four-senders"])
def test_each_row_is_synced_as_sending_before_its_post_leaves(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, concurrency: int
) -> None:
    path = tmp_path / "pets.csv"
    rows = write_pets(path, 60)
    journal = journal_of(path, api=InstantClient.base_url)  # before the run creates it
    syncs = SyncRecorder(monkeypatch)
    client = DurabilityCheckingClient(journal, syncs, rows)
    report = run_import(ImportConfig(path, concurrency=concurrency), client)
    assert (report.created, client.calls) == (60, 60)
    assert client.unsynced == []
    # The journal's own descriptor was synced, up to its last byte by the end of the run.
    assert syncs.of(journal)
    assert syncs.durable_bytes(journal) == journal.stat().st_size


@pytest.mark.parametrize(
    ("concurrency", "syncs"), [(1, 5), (8, None)], ids=["one-sender", "eight-senders"]
)
def test_rows_journaled_and_unanswered_never_exceed_the_sending_window(
    tmp_path: Path, concurrency: int, syncs: int | None
) -> None:
    path = tmp_path / "pets.csv"
    write_pets(path, 64)
    report = run_import(ImportConfig(path, concurrency=concurrency), InstantClient())
    assert report.created == 64
    # Replay the journal in write order: rows whose last line is `sending` are the ones a
    # crash at that moment would leave uncertain.
    lines = [line for line in journal_of(path).read_text().splitlines() if '"row"' in line]
    open_rows: set[int] = set()
    most = 0
    for line in lines:
        record = json.loads(line)
        if record["state"] == "sending":
            open_rows.add(record["row"])
        else:
            open_rows.discard(record["row"])
        most = max(most, len(open_rows))
    assert 0 < most <= SENDING_WINDOW
    assert not open_rows
    if syncs is not None:  # a lone sender: batches of 32, 30 and 2 (each synced while the
        # last rows of the one before are in flight), the last outcomes, the summary
        assert report.journal_fsyncs <= syncs
