"""Settling without a baseline (the default): a row is sent again only when no pet of its
content exists but this import's; wherever one may be its pet, it stays uncertain with the
candidate ids. Never a row twice. The cases that differ with a baseline run both ways in
test_settle.py."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

from petsync.cli.render import import_summary
from petsync.core.models import NewPet, PetStatus
from petsync.core.wording import COMMAND_LINE
from petsync.importer.config import ImportConfig
from petsync.importer.run import run_import
from tests.importer.doubles import journal_of
from tests.importer.test_settle import LosingClient, StartServer, candidates, names, run


def test_the_import_lists_nothing_before_its_first_post_by_default(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server(seed_pets=250)
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")
    with LosingClient(srv, {}) as client:
        report = run_import(ImportConfig(path), client)
        assert client.requests == 2  # the two POSTs: no listing before them
    assert report.created == 2
    assert '"baseline"' not in journal_of(path).read_text()


def test_a_row_with_no_matching_pet_is_sent_once(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    srv.store.create(NewPet("Rex", 1, PetStatus.SOLD))  # other content: another status
    srv.store.create(NewPet("Rex", 2, None))  # another category
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,available\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    assert (settled.settled_not_created, settled.created, settled.exit_code) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 3})


def test_pets_this_import_created_are_no_candidates(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,sold\nBo,3,sold\n")
    first = run(
        ImportConfig(path, allow_duplicates=True, concurrency=1), srv, {"Bo": ["ok", "dropped"]}
    )
    assert (first.created, first.uncertain) == (1, 1)

    settled = run(ImportConfig(path, allow_duplicates=True, settle=True), srv)
    # The one Bo that exists is row 2's (the journal has its id): row 3 made none.
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Bo": 2})


def test_two_rows_of_equal_content_neither_stored_are_both_sent(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nBo,3,\nBo,3,\n")
    run(
        ImportConfig(path, allow_duplicates=True, concurrency=1),
        srv,
        {"Bo": ["dropped", "dropped"]},
    )

    settled = run(ImportConfig(path, allow_duplicates=True, settle=True), srv)
    assert (settled.settled_not_created, settled.created, settled.exit_code) == (2, 2, 0)
    assert names(srv) == Counter({"Bo": 2})


def test_a_row_without_status_sees_pets_of_every_status(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    sold = srv.store.create(NewPet("Rex", 1, PetStatus.SOLD))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # The interface does not say what status a pet created without one gets: it may be sold.
    assert (settled.settled_undecided, settled.created) == (1, 0)
    assert candidates(tmp_path / "pets.uncertain.csv") == {"Rex": [sold.id]}


def test_the_summary_and_the_report_list_the_candidate_ids(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    older = [srv.store.create(NewPet("Rex", 1, PetStatus.SOLD)).id for _ in range(12)]
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    lines = import_summary(settled, COMMAND_LINE)
    at = lines.index(
        "settled 1 uncertain: 0 found created, 0 not created (sent now), 1 still uncertain"
    )
    shown = ", ".join(str(i) for i in older[:10])
    assert lines[at + 1] == f"  row 2: candidate pet ids {shown} and 2 more"
    assert lines[-1] == (
        f"uncertain: {tmp_path / 'pets.uncertain.csv'}  (settle cannot tell: check the pets of "
        "petsync_candidate_ids by hand)"
    )
    assert settled.to_json()["settled"]["undecided_rows"] == [{"rows": [2], "candidate_ids": older}]
    json.dumps(settled.to_json())  # the --report file can hold it


def test_a_pet_another_journal_got_in_a_201_is_no_candidate(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    earlier = tmp_path / "monday.csv"
    earlier.write_text("name,categoryId,status\nRex,1,sold\n")
    assert run(ImportConfig(earlier), srv).created == 1  # Monday's Rex, answered 201
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # Monday's journal holds that Rex's id as the answer to its own POST: not this row's.
    assert (settled.settled_not_created, settled.created, settled.uncertain) == (1, 1, 0)
    assert names(srv) == Counter({"Rex": 2, "Tom": 1})


def test_an_id_another_settle_assigned_still_counts_as_a_candidate(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    from petsync.importer.other_journals import SETTLED_CREATED

    srv = petstore_server()
    earlier = tmp_path / "monday.csv"
    earlier.write_text("name,categoryId,status\nRex,1,sold\n")
    run(ImportConfig(earlier), srv)
    monday = journal_of(earlier)
    lines = [json.loads(line) for line in monday.read_text().splitlines()]
    for line in lines:
        if line.get("state") == "created":  # as a settle with a baseline writes it
            line["message"] = SETTLED_CREATED
    monday.write_text("".join(json.dumps(line) + "\n" for line in lines))
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId,status\nRex,1,sold\nTom,2,\n")  # other bytes: a new import
    run(ImportConfig(path), srv, {"Rex": ["dropped"]})

    settled = run(ImportConfig(path, settle=True), srv)
    # A settle's conclusion is no answer from the API: the row stays for a person.
    assert (settled.settled_undecided, settled.created, settled.uncertain) == (1, 0, 1)
    assert names(srv) == Counter({"Rex": 1, "Tom": 1})


def test_a_baseline_asked_for_after_the_first_post_is_not_taken(
    tmp_path: Path, petstore_server: StartServer
) -> None:
    srv = petstore_server()
    path = tmp_path / "pets.csv"
    path.write_text("name,categoryId\nRex,1\n")
    run(ImportConfig(path), srv, {"Rex": ["lost"]})
    srv.store.create(NewPet("Tom", 2, None))  # listed now, but after the import began

    settled = run(ImportConfig(path, settle=True, baseline=True), srv)
    # A listing now is no baseline: the Rex it would show may be this row's.
    assert '"baseline"' not in journal_of(path).read_text()
    assert [str(notice) for notice in settled.notices] == [
        "baseline=True applies from a file's first POST; pets.csv was started without one, so "
        "settle=True decides its rows without a baseline"
    ]
    assert (settled.settled_undecided, settled.created, names(srv)["Rex"]) == (1, 0, 1)
