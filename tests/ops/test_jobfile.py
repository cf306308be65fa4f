"""Job files checked against option specs: every error names the file, the key and what fits."""

from __future__ import annotations

from pathlib import Path

import pytest

from petsync.core.errors import ConfigError
from petsync.ops.jobfile import JobKind, OptionSpec, load_job

SPECS: dict[JobKind, list[OptionSpec]] = {
    "export": [
        OptionSpec("out", "path", required=True, help="Snapshot directory"),
        OptionSpec("status", "choice", multiple=True, choices=("available", "pending", "sold")),
        OptionSpec("format", "choice", choices=("parquet", "both")),
        OptionSpec("keep", "integer"),
        OptionSpec("max_drop", "string"),
        OptionSpec("sweep", "boolean"),
        OptionSpec("env", "string"),
    ],
    "import": [OptionSpec("file", "path", required=True), OptionSpec("ratio", "float")],
}


def job(tmp_path: Path, text: str, name: str = "nightly.toml") -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def error(path: Path) -> str:
    with pytest.raises(ConfigError) as err:
        load_job(path, SPECS)
    assert err.value.exit_code == 2
    return str(err.value)


def test_valid_export_job(tmp_path: Path) -> None:
    path = job(
        tmp_path,
        '# nightly\n[export]\nenv = "staging"\nout = "snaps"\nstatus = ["sold"]\n'
        'format = "parquet"\nkeep = 30\nsweep = false\n',
    )
    loaded = load_job(path, SPECS)
    assert (loaded.kind, loaded.name, loaded.env) == ("export", "nightly", "staging")
    assert loaded.options == {
        "env": "staging",
        "out": "snaps",
        "status": ["sold"],
        "format": "parquet",
        "keep": 30,
        "sweep": False,
    }


def test_single_value_for_a_repeatable_option_becomes_a_list(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nstatus = "sold"\n')
    assert load_job(path, SPECS).options["status"] == ["sold"]


def test_number_for_a_text_option_is_read_as_text(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nmax_drop = 0.25\n')
    assert load_job(path, SPECS).options["max_drop"] == "0.25"


def test_unknown_key_lists_the_allowed_keys(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nout_dir = "s"\n')
    assert error(path) == (
        f"job file {path} [export]: unknown key 'out_dir'; allowed keys: "
        "env, format, keep, max_drop, out, status, sweep"
    )


def test_wrong_type_names_the_expected_type(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nkeep = "thirty"\n')
    assert (
        error(path) == f'job file {path} [export]: keep must be an integer, got "thirty" (string)'
    )


def test_boolean_is_not_an_integer(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nkeep = true\n')
    assert error(path) == f"job file {path} [export]: keep must be an integer, got true (boolean)"


def test_value_outside_the_choices_lists_them(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nformat = "csv"\n')
    assert error(path) == (
        f'job file {path} [export]: format must be one of: parquet, both, got "csv" (string)'
    )


def test_list_item_outside_the_choices_lists_them(tmp_path: Path) -> None:
    path = job(tmp_path, '[export]\nout = "s"\nstatus = ["sold", "lost"]\n')
    assert error(path) == (
        f"job file {path} [export]: status must be a list, each one of: available, pending, "
        'sold, got "lost" (string)'
    )


def test_missing_required_key_is_named(tmp_path: Path) -> None:
    path = job(tmp_path, "[export]\nkeep = 3\n")
    assert error(path) == (
        f"job file {path} [export]: missing required key 'out' (Snapshot directory); "
        "it takes a path (string)"
    )


@pytest.mark.parametrize("key", ["api_key", "token", "API-KEY", "password"])
def test_a_key_value_is_refused_with_the_way_out(tmp_path: Path, key: str) -> None:
    path = job(tmp_path, f'[export]\nout = "s"\n"{key}" = "sk-live-123"\n')
    message = error(path)
    assert message == (
        f"job file {path} [export]: {key!r} would put an API key in a file others read, "
        "copy and commit; set the key in the environment (PETSYNC_API_KEY or "
        "PETSYNC_<ENV>_API_KEY, e.g. from the env file cron loads) or point api_key_file at "
        "a file with mode 600"
    )
    assert "sk-live-123" not in message


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("# nothing\n", "no job in it; add an [export] or [import] table"),
        ('[export]\nout = "s"\n[import]\nfile = "f"\n', "one job per file; it has both"),
        ('name = "x"\n[export]\nout = "s"\n', "unknown key 'name' at the top level"),
        ("[export\n", "is not valid TOML"),
    ],
    ids=["empty", "two-jobs", "top-level-key", "bad-toml"],
)
def test_malformed_job_file(tmp_path: Path, text: str, message: str) -> None:
    path = job(tmp_path, text)
    text_of_error = error(path)
    assert str(path) in text_of_error
    assert message in text_of_error


def test_missing_job_file(tmp_path: Path) -> None:
    assert error(tmp_path / "nope.toml") == f"job file {tmp_path / 'nope.toml'} does not exist"


def test_import_job_accepts_an_integer_for_a_number(tmp_path: Path) -> None:
    path = job(tmp_path, '[import]\nfile = "pets.csv"\nratio = 1\n', name="bulk.toml")
    loaded = load_job(path, SPECS)
    assert (loaded.kind, loaded.name, loaded.options) == (
        "import",
        "bulk",
        {"file": "pets.csv", "ratio": 1},
    )
