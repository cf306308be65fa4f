"""The server's own OpenAPI document: valid, true to the interface, and obeyed by the server.

schemathesis loads ``/v1/openapi.json`` from the app in-process (ASGI, no socket) and runs
a bounded property-based test of every operation against it, with the key.
"""

from __future__ import annotations

import asyncio
import secrets
from pathlib import Path

import httpx
import pytest
import schemathesis
from hypothesis import HealthCheck, settings

from petsync.core.apikey import ApiKey
from petsync.server.app import ServerConfig, create_app
from petsync.server.openapi import build_openapi
from petsync.server.store import PetStore

KEY = "test-key-" + secrets.token_hex(8)
APP = create_app(ServerConfig(api_key=ApiKey(KEY)), PetStore())
APP.state.petstore.store.insert_many(
    [(1, "Rex", 1, "available"), (2, 'Zoë, "z"', 2**62, None), (3, "Max", -1, "sold")]
)
schema = schemathesis.openapi.from_asgi("/v1/openapi.json", APP)


@pytest.fixture(autouse=True)
def _scratch_directory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """schemathesis keeps its cache under ./.schemathesis: keep it out of the checkout."""
    monkeypatch.chdir(tmp_path)


@schema.parametrize()
@settings(
    max_examples=25,
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
def test_server_conforms_to_its_openapi_document(case: schemathesis.Case) -> None:
    # negative_data_rejection is left out: it counts an unknown query parameter as invalid,
    # and this server ignores unknown parameters on purpose (clients probe offset= and
    # page= on it). Each rejection rule has its own exact test in test_server_app.py and
    # test_server_pagination.py; here negative cases still must get documented answers.
    case.call_and_validate(
        headers={"Authorization": f"Bearer {KEY}"},
        excluded_checks=[schemathesis.checks.negative_data_rejection],
    )


def test_document_describes_the_interface() -> None:
    doc = build_openapi()
    assert doc["openapi"].startswith("3.") and doc["servers"] == [{"url": "/v1"}]
    assert set(doc["components"]["schemas"]) == {"NewPet", "Pet", "Pets", "PetStatus", "Error"}
    assert doc["components"]["schemas"]["PetStatus"]["enum"] == ["available", "pending", "sold"]
    assert doc["components"]["schemas"]["NewPet"]["required"] == ["name", "categoryId"]
    assert doc["components"]["schemas"]["Error"]["required"] == ["code", "message", "status"]
    assert doc["components"]["securitySchemes"] == {
        "bearerAuth": {"type": "http", "scheme": "bearer"}
    }
    assert doc["security"] == [{"bearerAuth": []}]
    operations = {op["operationId"]: op for path in doc["paths"].values() for op in path.values()}
    assert set(operations) == {"listPets", "createPet", "getPet"}
    assert operations["getPet"]["deprecated"] is True
    limit = operations["listPets"]["parameters"][0]
    assert limit["schema"]["minimum"] == 1 and limit["schema"]["maximum"] == 100
    assert limit["schema"]["default"] == 20
    for op in operations.values():
        assert op["responses"]["401"]["content"]["application/json"]["schema"] == {
            "$ref": "#/components/schemas/Error"
        }
    assert "404" in operations["getPet"]["responses"]
    assert "400" in operations["createPet"]["responses"]


def test_served_document_is_the_built_one_and_schemathesis_accepts_it() -> None:
    async def fetch() -> dict[str, object]:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=APP), base_url="http://t"
        ) as client:
            response = await client.get("/v1/openapi.json")
            assert response.status_code == 200
            body: dict[str, object] = response.json()
            return body

    document = asyncio.run(fetch())
    assert document == build_openapi()
    loaded = schemathesis.openapi.from_dict(document)
    assert sorted(op.ok().label for op in loaded.get_all_operations()) == [
        "GET /pets",
        "GET /pets/{petId}",
        "POST /pets",
    ]
