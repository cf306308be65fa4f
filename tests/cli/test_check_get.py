"""`petsync check` and `petsync get` through click's CliRunner: output and exit codes."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import respx
from click.testing import CliRunner, Result

from petsync.cli import cli
from petsync.core.models import INT64_MAX, NewPet
from petsync.server.runner import RunningServer
from tests.conftest import route_clients_to

BASE = "https://petstore.test/v1"
PETS = f"{BASE}/pets"
KEY = "sk-cli-test-0123456789"
PET = {"id": INT64_MAX, "name": 'Zoë, "big"', "categoryId": -7, "status": "adopted"}


@pytest.fixture
def api(monkeypatch: pytest.MonkeyPatch) -> Iterator[respx.MockRouter]:
    with respx.mock(assert_all_called=False) as router:
        route_clients_to(router, monkeypatch)
        yield router


@pytest.fixture
def run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Callable[..., Result]:
    """Invoke petsync in an empty directory with no config file and a clean environment."""
    monkeypatch.chdir(tmp_path)

    def invoke(*args: str, key: str | None = KEY, base_url: str | None = None) -> Result:
        env = {
            "PETSYNC_API_KEY": key,
            "PETSYNC_BASE_URL": base_url,
            "PETSYNC_PRODUCTION_API_KEY": None,
            "HOME": str(tmp_path),
            "XDG_CONFIG_HOME": str(tmp_path / "xdg"),
        }
        result = CliRunner().invoke(cli, list(args), env=env)
        assert KEY not in result.stdout + result.stderr
        return result

    return invoke


def test_check_reports_url_key_style_and_round_trip(
    api: respx.MockRouter, run: Callable[..., Result]
) -> None:
    api.get(PETS).respond(
        200,
        json=[{"id": 1, "name": "a", "categoryId": 1}],
        headers={"X-Next-Cursor": "c1"},
    )
    result = run("check", "--base-url", BASE)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:3] == [
        f"base URL:     {BASE}",
        "key accepted: yes",
        "pagination:   cursor",
    ]
    assert lines[3].startswith("round trip:   ") and lines[3].endswith(" ms")
    assert api.calls.last.request.headers["Authorization"] == f"Bearer {KEY}"


def test_check_takes_the_base_url_from_the_environment(
    api: respx.MockRouter, run: Callable[..., Result]
) -> None:
    api.get(PETS).respond(200, json=[])
    result = run("check", base_url=BASE)
    assert result.exit_code == 0
    assert "pagination:   none" in result.stdout


def test_check_reads_the_key_from_a_key_file(
    api: respx.MockRouter, run: Callable[..., Result], tmp_path: Path
) -> None:
    key_file = tmp_path / "key"
    key_file.write_text("file-key-42\n")
    key_file.chmod(0o600)
    api.get(PETS).respond(200, json=[])
    result = run("check", "--base-url", BASE, "--api-key-file", str(key_file), key=None)
    assert result.exit_code == 0, result.stderr
    assert api.calls.last.request.headers["Authorization"] == "Bearer file-key-42"


def test_check_exits_3_when_the_key_is_refused(
    api: respx.MockRouter, run: Callable[..., Result]
) -> None:
    api.get(PETS).respond(401, json={"code": "unauthorized", "message": "bad key", "status": 401})
    result = run("check", "--base-url", BASE)
    assert result.exit_code == 3
    assert result.stderr == (
        f"Error: the API at {BASE} refused the API key (HTTP 401, unauthorized: bad key); check "
        "the key in environment variable PETSYNC_API_KEY: that is where this one was read\n"
    )
    assert result.stdout == ""


def test_a_refused_key_names_the_environment_variable_it_came_from(
    api: respx.MockRouter, run: Callable[..., Result], monkeypatch: pytest.MonkeyPatch
) -> None:
    api.get(PETS).respond(401, json={"code": "unauthorized", "message": "no", "status": 401})
    monkeypatch.setenv("PETSYNC_STAGING_API_KEY", "staging-key-1")
    result = run("check", "--base-url", BASE, "--env", "staging", key=None)
    assert result.exit_code == 3
    assert "check the key in environment variable PETSYNC_STAGING_API_KEY:" in result.stderr
    assert "PETSYNC_API_KEY" not in result.stderr.replace("PETSYNC_STAGING_API_KEY", "")


def test_a_refused_key_names_the_key_file_it_came_from(
    api: respx.MockRouter, run: Callable[..., Result], tmp_path: Path
) -> None:
    api.get(PETS).respond(401, json={"code": "unauthorized", "message": "no", "status": 401})
    key_file = tmp_path / "key"
    key_file.write_text("file-key-42\n")
    key_file.chmod(0o600)
    result = run("check", "--base-url", BASE, "--api-key-file", str(key_file), key=None)
    assert result.exit_code == 3
    assert f"check the key in API key file {key_file}: that is where" in result.stderr


def test_a_refused_key_names_the_environments_key_file(
    api: respx.MockRouter, run: Callable[..., Result], tmp_path: Path
) -> None:
    api.get(PETS).respond(401, json={"code": "unauthorized", "message": "no", "status": 401})
    key_file = tmp_path / "staging.key"
    key_file.write_text("file-key-43\n")
    key_file.chmod(0o600)
    (tmp_path / "petsync.toml").write_text(
        f'[environments.staging]\nbase_url = "{BASE}"\napi_key_file = "{key_file}"\n'
    )
    result = run("check", "--env", "staging", key=None)
    assert result.exit_code == 3
    assert (
        f"check the key in API key file {key_file} (api_key_file of [environments.staging])"
        in result.stderr
    )


def test_check_without_a_base_url_exits_2(run: Callable[..., Result]) -> None:
    result = run("check")
    assert result.exit_code == 2
    assert result.stderr.startswith("Error: no base URL: pass --base-url or set PETSYNC_BASE_URL")


def test_check_without_a_key_exits_2(run: Callable[..., Result]) -> None:
    result = run("check", "--base-url", BASE, key=None)
    assert result.exit_code == 2
    assert result.stderr.startswith(
        "Error: no API key: set PETSYNC_PRODUCTION_API_KEY (environment 'production') or "
        "PETSYNC_API_KEY, or pass --api-key-file"
    )


def test_check_with_a_base_url_missing_v1_exits_2(run: Callable[..., Result]) -> None:
    result = run("check", "--base-url", "https://petstore.test")
    assert result.exit_code == 2
    assert "does not end with /v1" in result.stderr
    assert "Did you mean https://petstore.test/v1 ?" in result.stderr


def test_get_prints_the_pet_as_json_and_a_notice_on_stderr(
    api: respx.MockRouter, run: Callable[..., Result]
) -> None:
    api.get(f"{PETS}/{INT64_MAX}").respond(
        200, json=PET, headers={"Sunset": "Thu, 05 Dec 2030 00:00:00 GMT"}
    )
    result = run("get", str(INT64_MAX), "--base-url", BASE)
    assert result.exit_code == 0, result.stderr
    assert result.stdout == (
        '{"id": 9223372036854775807, "name": "Zoë, \\"big\\"", "categoryId": -7, '
        '"status": "adopted"}\n'
    )
    assert json.loads(result.stdout)["id"] == INT64_MAX
    assert result.stderr == (
        "Deprecated: getPet (GET /pets/{petId}) is deprecated and scheduled for removal on "
        "5 December 2030; use listPets (GET /pets) with the status filter instead\n"
        "  the server sent Sunset: Thu, 05 Dec 2030 00:00:00 GMT\n"
    )


def test_get_accepts_a_negative_id(api: respx.MockRouter, run: Callable[..., Result]) -> None:
    api.get(f"{PETS}/-3").respond(200, json={"id": -3, "name": "n", "categoryId": 1})
    result = run("get", "--base-url", BASE, "--", "-3")
    assert result.exit_code == 0, result.stderr
    assert result.stdout == '{"id": -3, "name": "n", "categoryId": 1}\n'


def test_get_an_unknown_pet_exits_1(api: respx.MockRouter, run: Callable[..., Result]) -> None:
    api.get(f"{PETS}/9").respond(
        404, json={"code": "not_found", "message": "no pet", "status": 404}
    )
    result = run("get", "9", "--base-url", BASE)
    assert result.exit_code == 1
    assert result.stderr.endswith(f"Error: GET {PETS}/9 answered HTTP 404, not_found: no pet\n")
    assert result.stdout == ""


def test_get_exits_3_when_the_key_is_refused(
    api: respx.MockRouter, run: Callable[..., Result]
) -> None:
    api.get(f"{PETS}/9").respond(401, json={"code": "unauthorized", "message": "no", "status": 401})
    assert run("get", "9", "--base-url", BASE).exit_code == 3


@pytest.mark.parametrize("pet_id", ["9223372036854775808", "1.5", "x"], ids=str)
def test_get_refuses_an_id_that_is_not_int64(pet_id: str, run: Callable[..., Result]) -> None:
    result = run("get", pet_id, "--base-url", BASE)
    assert result.exit_code == 2
    assert "Invalid value for 'ID'" in result.stderr


@pytest.mark.parametrize("command", ["check", "get"])
def test_help_shows_an_example(command: str, run: Callable[..., Result]) -> None:
    result = run(command, "--help")
    assert result.exit_code == 0
    assert "Example:" in result.stdout and f"petsync {command}" in result.stdout


# -- against the real reference server -----------------------------------------------------------


@pytest.mark.parametrize(
    ("pagination", "seed_pets", "expected"),
    [
        ("link", 5, "link"),
        ("cursor", 5, "cursor"),
        ("offset", 5, "offset"),
        ("page", 5, "page"),
        ("none", 5, "unknown"),  # a full page of one, and probes answered with it again
        ("link", 0, "none"),
    ],
    ids=["link", "cursor", "offset", "page", "none", "empty"],
)
def test_check_names_the_real_servers_style(
    pagination: str,
    seed_pets: int,
    expected: str,
    petstore_server: Callable[..., RunningServer],
    run: Callable[..., Result],
) -> None:
    srv = petstore_server(seed_pets=seed_pets, pagination=pagination)
    result = run("check", "--base-url", srv.base_url, key=srv.api_key.reveal())
    assert result.exit_code == 0, result.stderr
    assert f"pagination:   {expected}\n" in result.stdout
    assert f"base URL:     {srv.base_url}\n" in result.stdout


def test_get_against_the_real_server(
    petstore_server: Callable[..., RunningServer], run: Callable[..., Result]
) -> None:
    srv = petstore_server()
    srv.store.create(NewPet("Ada", 4))
    result = run("get", "1", "--base-url", srv.base_url, key=srv.api_key.reveal())
    assert result.exit_code == 0, result.stderr
    assert json.loads(result.stdout) == {"id": 1, "name": "Ada", "categoryId": 4}
    assert "5 December 2030" in result.stderr


def test_check_exits_3_against_the_real_server_with_a_wrong_key(
    petstore_server: Callable[..., RunningServer], run: Callable[..., Result]
) -> None:
    srv = petstore_server()
    result = run("check", "--base-url", srv.base_url, key="wrong-key")
    assert result.exit_code == 3
    assert f"the API at {srv.base_url} refused the API key" in result.stderr
