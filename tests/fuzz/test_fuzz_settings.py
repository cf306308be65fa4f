"""What people type and drop (job files, base URLs, file names): any of it ends in a
setting, a ConfigError (exit 2) naming the file or setting, or a line shown safely."""

from __future__ import annotations

import contextlib
import tempfile
import unicodedata
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from petsync.cli.state import terminal_line
from petsync.client.config import normalise_base_url
from petsync.core.errors import ConfigError
from petsync.ops.jobfile import read_job_kind
from tests.fuzz.budget import fuzz

_TOML_PIECES = st.sampled_from(
    ["[export]\n", "[import]\n", "out = ", '"o"', "[", "]", "{", "}", "=", "\n", "'", "x", ","]
)
_TOML = st.one_of(
    st.lists(st.one_of(_TOML_PIECES, st.text(max_size=10)), max_size=200).map("".join),
    st.builds(
        lambda depth, brace: "[export]\nout = " + ("[" if brace else "{a=") * depth,
        st.integers(0, 6_000),
        st.booleans(),
    ),
)


@fuzz
@given(text=_TOML)
def test_any_job_file_reads_or_is_a_config_error_naming_it(text: str) -> None:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "job.toml")
        path.write_bytes(text.encode("utf-8", "surrogatepass"))
        try:
            read_job_kind(path)
        except ConfigError as exc:
            assert str(path) in str(exc)


@fuzz
@given(
    url=st.one_of(
        st.text(max_size=80),
        st.builds(
            lambda host, port, path: f"http://{host}:{port}/{path}",
            st.text(max_size=20),
            st.integers(-5, 200_000),
            st.sampled_from(["v1", "v1/", "v2", "api/v1"]),
        ),
    )
)
def test_any_base_url_is_accepted_or_a_config_error(url: str) -> None:
    with contextlib.suppress(ConfigError):
        normalise_base_url(url)


@fuzz
@given(name=st.text(max_size=200))
def test_any_file_name_is_shown_on_one_safe_line(name: str) -> None:
    line = terminal_line(f"{name}: not imported: ...")
    # Nothing that moves the cursor, reorders or hides text: printable, or a space.
    assert all(char.isprintable() or unicodedata.category(char) == "Zs" for char in line)
    assert "\n" not in line and "\r" not in line and "\x1b" not in line
