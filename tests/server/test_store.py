"""The catalogue store and demo seed: durable across restarts, ids never reused, deterministic."""

from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.core.models import INT64_MAX, INT64_MIN, NewPet, Pet, PetStatus
from petsync.server.app import ServerConfig
from petsync.server.runner import RunningServer, open_store
from petsync.server.seed import SPECIAL_NAMES, seed_row, seed_rows
from petsync.server.store import PetStore, StoreFullError
from tests.conftest import StartServer


def create(srv: RunningServer, name: str) -> dict[str, object]:
    headers = {"Authorization": f"Bearer {srv.api_key.reveal()}"}
    response = httpx.post(
        srv.base_url + "/pets", json={"name": name, "categoryId": 1}, headers=headers, timeout=10
    )
    assert response.status_code == 201
    body: dict[str, object] = response.json()
    return body


def test_restart_on_the_same_db_keeps_every_pet_and_never_reuses_an_id(
    petstore_server: StartServer, tmp_path: Path
) -> None:
    db = tmp_path / "pets.db"
    first = petstore_server(db_path=db, seed_pets=10)
    made = [create(first, f"Pet {k}") for k in range(3)]
    assert [p["id"] for p in made] == [11, 12, 13]
    before = first.store.all()
    first.stop()
    # The newest pet disappears behind the server's back (an operator's DELETE).
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM pets WHERE id = 13")
    conn.close()
    second = petstore_server(db_path=db, seed_pets=10)
    assert second.seeded == 0  # not re-seeded: the file already holds pets
    assert second.store.all() == before[:-1]
    assert create(second, "After restart")["id"] == 14


def test_a_db_that_once_held_pets_is_never_reseeded_so_old_ids_stay_unused(
    petstore_server: StartServer, tmp_path: Path
) -> None:
    db = tmp_path / "pets.db"
    petstore_server(db_path=db, seed_pets=5).stop()
    with sqlite3.connect(db) as conn:
        conn.execute("DELETE FROM pets")
    conn.close()
    again = petstore_server(db_path=db, seed_pets=5)
    assert again.seeded == 0
    assert again.store.count() == 0
    assert create(again, "First after the purge")["id"] == 6


@pytest.mark.parametrize("hash_seed", ["1", "2"], ids=["hashseed-1", "hashseed-2"])
def test_seeding_gives_the_same_catalogue_in_every_process(hash_seed: str) -> None:
    """The demo catalogue may depend on nothing but N: not on hashing, time or chance."""
    code = "import json, sys; from petsync.server.seed import seed_rows; "
    code += "json.dump(list(seed_rows(300)), sys.stdout)"
    env = {**os.environ, "PYTHONHASHSEED": hash_seed}
    out = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
        check=True,
    )
    assert [tuple(row) for row in json.loads(out.stdout)] == list(seed_rows(300))


def test_a_seed_is_a_prefix_of_a_bigger_seed() -> None:
    assert list(seed_rows(1000))[:300] == list(seed_rows(300))
    assert [row[0] for row in seed_rows(300)] == list(range(1, 301))


def test_seed_holds_awkward_names_pets_without_status_and_big_categories() -> None:
    rows = list(seed_rows(250))
    names = {row[1] for row in rows}
    assert set(SPECIAL_NAMES) <= names
    assert any("," in n for n in names) and any('"' in n for n in names)
    assert any("\n" in n for n in names) and any(n.startswith("=") for n in names)
    assert any(not n.isascii() for n in names) and any("🐈" in n for n in names)
    statuses = [row[3] for row in rows]
    assert statuses.count(None) == 25
    assert {s for s in statuses if s is not None} == {"available", "pending", "sold"}
    assert any(row[2] > 2**53 for row in rows)
    assert seed_row(3) == (3, "Milo 3", 3, None)


def test_server_seeds_the_catalogue_it_serves(petstore_server: StartServer) -> None:
    srv = petstore_server(seed_pets=40)
    assert srv.seeded == 40
    assert srv.store.all() == [Pet(*row) for row in seed_rows(40)]


def test_seed_continues_ids_after_the_catalogue() -> None:
    store = PetStore()
    store.insert_many(seed_rows(5))
    assert store.create(NewPet("Next", 1)).id == 6


def test_store_round_trips_extreme_ids_and_odd_status() -> None:
    store = PetStore()
    pets = [
        Pet(INT64_MAX, "Max", INT64_MIN, "sold"),
        Pet(INT64_MIN, "Min", INT64_MAX, None),
        Pet(-1, "Odd", 0, "lost"),  # crafted catalogues may break the enum on purpose
    ]
    for pet in pets:
        store.insert(pet)
    assert store.all() == sorted(pets, key=lambda p: p.id)
    assert store.get(INT64_MAX) == pets[0]
    assert store.count() == 3


def test_store_refuses_a_taken_id() -> None:
    store = PetStore()
    store.insert(Pet(7, "Rex", 1))
    with pytest.raises(sqlite3.IntegrityError):
        store.insert(Pet(7, "Max", 1))


def test_create_after_int64_max_raises_store_full() -> None:
    store = PetStore()
    store.insert(Pet(INT64_MAX, "Last", 1))
    with pytest.raises(StoreFullError):
        store.create(NewPet("One more", 1, PetStatus.SOLD))


def test_keyset_and_offset_pages_use_the_status_index() -> None:
    store = PetStore()
    plan = store._conn.execute(
        "EXPLAIN QUERY PLAN SELECT id FROM pets WHERE status = ? AND id > ? ORDER BY id",
        ("sold", 5),
    ).fetchall()
    assert "pets_status_id" in str(plan)


def test_unopenable_db_is_a_config_error(tmp_path: Path) -> None:
    config = ServerConfig(api_key=ApiKey("k"), db_path=tmp_path / "missing" / "pets.db")
    with pytest.raises(ConfigError, match=r"cannot open database .*missing/pets\.db"):
        open_store(config)


def test_a_file_that_is_not_a_database_is_a_config_error(tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("not sqlite " * 100)
    with pytest.raises(ConfigError, match=r"cannot open database .*notes\.txt: file is not a"):
        open_store(ServerConfig(api_key=ApiKey("k"), db_path=path))


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        ({"pagination": "links"}, "unknown server pagination style 'links'; use one of: link"),
        ({"seed_pets": -1}, "seed_pets must be 0 or more, got -1"),
        ({"page_cap": 0}, "page_cap must be at least 1, got 0"),
    ],
    ids=["pagination", "seed", "page-cap"],
)
def test_server_config_refuses_bad_values(fields: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig(api_key=ApiKey("k"), **fields)  # type: ignore[arg-type]
