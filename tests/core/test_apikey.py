"""The API key object and the one redaction function."""

from __future__ import annotations

import pickle
from pathlib import Path

import httpx
import pytest

from petsync.client.auth import BearerAuth
from petsync.core.apikey import ApiKey, read_key_file, redact
from petsync.core.errors import ConfigError, ExitCode

SECRET = "sk-live-abcdef123456"


def test_the_key_never_prints_itself() -> None:
    key = ApiKey(f"  {SECRET}\n")
    assert repr(key) == str(key) == f"{key}" == "ApiKey('***')"
    assert key.reveal() == SECRET  # surrounding whitespace from a key file is dropped


def test_an_empty_key_is_refused() -> None:
    with pytest.raises(ValueError, match="an API key cannot be empty"):
        ApiKey("  ")


def test_a_key_cannot_be_pickled() -> None:
    with pytest.raises(TypeError, match="ApiKey cannot be pickled"):
        pickle.dumps(ApiKey(SECRET))


def test_keys_compare_by_value_without_showing_it() -> None:
    assert ApiKey(SECRET) == ApiKey(SECRET) != ApiKey("other")
    assert len({ApiKey(SECRET), ApiKey(SECRET)}) == 1


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (f"the key {SECRET} leaked", "the key *** leaked"),
        ("Authorization: Bearer abc.def", "Authorization: Bearer ***"),
        ("https://h/v1/pets?api_key=zzz&limit=5", "https://h/v1/pets?api_key=***&limit=5"),
        ("https://h/?access_token=t1#x", "https://h/?access_token=***#x"),
        ("nothing secret here", "nothing secret here"),
    ],
    ids=["known-key", "bearer", "query-key", "access-token", "clean"],
)
def test_redact(text: str, expected: str) -> None:
    assert redact(text, [ApiKey(SECRET), None]) == expected


@pytest.mark.parametrize(
    ("key", "text", "expected"),
    [
        ("x", "exit_code=1 x max", "exit_code=1 *** max"),
        ("code", "exit_code code", "exit_code ***"),
        ("dev-key", "key dev-key, dev-keys", "key ***, dev-keys"),
        ('a"b', 'say a"b', "say ***"),
        ("-k-", "x-k-y", "x***y"),  # edges that are no letters bind to nothing
        ("sk1", "Bearer%20sk1&u=%2Fsk1x", "Bearer%20***&u=%2Fsk1x"),
        ("k1", "äk1 k1", "äk1 ***"),
    ],
    ids=[
        "one-letter",
        "after-underscore",
        "longer-word",
        "quote",
        "punctuation-edges",
        "percent-escape",
        "letter-of-another-script",
    ],
)
def test_a_key_is_redacted_only_as_a_whole_word(key: str, text: str, expected: str) -> None:
    assert redact(text, [ApiKey(key)]) == expected


def test_bearer_auth_sets_the_exact_header_and_hides_itself() -> None:
    auth = BearerAuth(ApiKey(SECRET))
    request = httpx.Request("GET", "https://h/v1/pets")
    flow = auth.auth_flow(request)
    assert next(flow).headers["Authorization"] == f"Bearer {SECRET}"
    assert SECRET not in repr(auth)


@pytest.mark.parametrize(
    ("content", "problem"),
    [
        (f"{SECRET}\n{SECRET}2\n", "a line break inside the key"),
        (f"{SECRET}\rX", "a line break inside the key"),
        (f"sk\x1b[2J{SECRET}", "a control character (U+001B)"),
        (f"sk\x00{SECRET}", "a control character (U+0000)"),
        (f"sk-clé-{SECRET}", "a character that is not ASCII"),
    ],
    ids=["two-lines", "carriage-return", "escape", "nul", "non-ascii"],
)
def test_a_key_file_that_cannot_be_a_header_value_is_refused_naming_the_file(
    tmp_path: Path, content: str, problem: str
) -> None:
    path = tmp_path / "key"
    path.write_text(content, encoding="utf-8")
    path.chmod(0o600)
    with pytest.raises(ConfigError) as caught:
        read_key_file(path)
    assert str(caught.value) == (
        f"API key file {path} holds {problem}: an API key is sent as an HTTP header, which can "
        "carry only one line of printable ASCII. Keep just the key, on one line"
    )
    assert caught.value.exit_code == ExitCode.USAGE
    assert SECRET not in str(caught.value)


def test_a_key_file_with_a_final_newline_is_fine(tmp_path: Path) -> None:
    path = tmp_path / "key"
    path.write_text(f"{SECRET}\n", encoding="utf-8")
    path.chmod(0o600)
    assert read_key_file(path).reveal() == SECRET


def test_a_key_given_directly_is_checked_too_and_names_its_source() -> None:
    with pytest.raises(ConfigError, match=r"^PETSYNC_API_KEY holds a line break inside the key"):
        ApiKey("a\nb", source="PETSYNC_API_KEY")
    with pytest.raises(ConfigError, match=r"^the API key holds a control character \(U\+0007\)"):
        ApiKey("a\x07b")
