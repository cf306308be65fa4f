"""The key ``petsync serve`` accepts: a key file, else PETSYNC_API_KEY, else a fresh one."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.apikey import ApiKey
from petsync.core.errors import ConfigError
from petsync.server.keys import GENERATED_KEY_BYTES, ServeKey, serve_key


def no_token(size: int) -> str:
    raise AssertionError("a key was generated although one was given")


def key_file(tmp_path: Path, text: str, mode: int = 0o600) -> Path:
    path = tmp_path / "server.key"
    path.write_text(text, encoding="utf-8")
    path.chmod(mode)
    return path


def test_key_file_wins_over_the_environment(tmp_path: Path) -> None:
    path = key_file(tmp_path, "from-file\n")
    found = serve_key(path, {"PETSYNC_API_KEY": "from-env"}, token=no_token)
    assert found == ServeKey(ApiKey("from-file"), generated=False)


def test_environment_key_is_used_without_surrounding_blanks() -> None:
    found = serve_key(None, {"PETSYNC_API_KEY": "  from-env \n"}, token=no_token)
    assert found == ServeKey(ApiKey("from-env"), generated=False)


@pytest.mark.parametrize("environ", [{}, {"PETSYNC_API_KEY": "   "}], ids=["unset", "blank"])
def test_with_no_key_given_one_is_generated(environ: dict[str, str]) -> None:
    sizes: list[int] = []

    def token(size: int) -> str:
        sizes.append(size)
        return "fresh-key"

    found = serve_key(None, environ, token=token)
    assert found == ServeKey(ApiKey("fresh-key"), generated=True)
    assert sizes == [GENERATED_KEY_BYTES]


def test_key_file_others_can_read_is_refused_with_the_fix(tmp_path: Path) -> None:
    path = key_file(tmp_path, "from-file", mode=0o640)
    with pytest.raises(ConfigError) as err:
        serve_key(path, {"PETSYNC_API_KEY": "from-env"}, token=no_token)
    assert str(err.value) == (
        f"API key file {path} is readable by group or others (mode 640); "
        f"fix it with: chmod 600 {path}"
    )
