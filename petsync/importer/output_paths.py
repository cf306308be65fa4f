"""Where the files of one import go: the outputs beside the input or in ``--out-dir``, the journal.

Outputs are named after the first file's stem in every round (a fed-back reject file writes
``pets.rejects.csv``, never ``pets.rejects.rejects.csv``); a journal is found by the input's
content, under ``.petsync/journals/`` of the output directory.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from petsync.core.errors import ConfigError
from petsync.core.files import check_writable_dir, write_kind
from petsync.core.settings_table import OUT_DIR

# Where journals live, under the output directory: one per input content, by its sha256.
JOURNAL_DIR = Path(".petsync") / "journals"
# Suffixes of the files an import writes, stripped from an input's stem so that a fed-back
# reject or uncertain file writes under the first file's name (never pets.rejects.rejects).
ROUND_SUFFIXES: tuple[str, ...] = (".rejects", ".uncertain", ".accepted")


def output_stem(source: Path, *, fed_back: bool = True) -> str:
    """The stem the outputs of ``source`` are named after: the first file's, in every round.

    ``fed_back`` says the file is one petsync wrote (it has ``petsync_row``): only then is a
    ``.rejects`` or ``.uncertain`` suffix taken off, since only then can the earlier rounds'
    rows be kept in the outputs it shares with them.

    >>> output_stem(Path("inbox/new-pets.rejects.csv")), output_stem(Path("pets.csv"))
    ('new-pets', 'pets')
    >>> output_stem(Path("new-pets.rejects.csv"), fed_back=False)
    'new-pets.rejects'
    """
    stem = source.stem
    if not fed_back:
        return stem
    for suffix in ROUND_SUFFIXES:
        if stem.endswith(suffix) and len(stem) > len(suffix):
            return stem[: -len(suffix)]
    return stem


def journal_path(directory: Path, sha256: str) -> Path:
    """The journal of the input whose bytes have ``sha256``, under ``directory``.

    >>> journal_path(Path("imports"), "9f" * 32).as_posix()[:38]
    'imports/.petsync/journals/9f9f9f9f9f9f'
    """
    return directory / JOURNAL_DIR / f"{sha256}.jsonl"


@dataclass(frozen=True)
class OutputPaths:
    """Where the files of one import go.

    >>> OutputPaths.for_input(Path("/d/pets.csv"), None, sha256="ab").rejects.name
    'pets.rejects.csv'
    """

    rejects: Path
    accepted: Path
    uncertain: Path
    journal: Path

    @classmethod
    def for_input(
        cls,
        source: Path,
        out_dir: Path | None,
        *,
        sha256: str,
        journal: Path | None = None,
        fed_back: bool = True,
    ) -> OutputPaths:
        """The files of ``source``: beside it, or in ``out_dir``; ``journal`` overrides one.

        The journal is found by the input's content (``sha256``), not its name: a new file
        under an old name is a new import, the same bytes again are the same import.
        """
        directory = out_dir if out_dir is not None else source.parent
        stem = output_stem(source, fed_back=fed_back)
        return cls(
            rejects=directory / f"{stem}.rejects.csv",
            accepted=directory / f"{stem}.accepted.csv",
            uncertain=directory / f"{stem}.uncertain.csv",
            journal=journal if journal is not None else journal_path(directory, sha256),
        )

    @property
    def directory(self) -> Path:
        return self.rejects.parent

    def check_writable(self) -> None:
        """Fail before anything is sent unless every output can be written where it goes.

        The folder is proven writable (:func:`check_writable`), and no output's name may
        hold a symbolic link, dangling or not, a FIFO or a device
        (:func:`~petsync.core.files.write_kind`, exit 2 naming the path): in a shared inbox
        a link planted at ``pets.rejects.csv`` must not get the import to overwrite its
        target, nor a FIFO block it, and the refusal comes before a row is sent.
        """
        check_writable(self.directory, "output files")
        for path, what in (
            (self.rejects, "reject file"),
            (self.accepted, "accepted file"),
            (self.uncertain, "uncertain file"),
        ):
            write_kind(path, what)


def check_writable(directory: Path, what: str) -> None:
    """Fail before anything is sent when ``directory`` cannot be created or written.

    Creates it (and its parents) if missing, then proves files can be created in it with
    the one check of :func:`~petsync.core.files.check_writable_dir`: a read-only mount or a
    missing permission shows here, exit 2.
    """
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(
            f"cannot write the {what} in {directory}: {exc.strerror or exc}; fix its "
            "permissions or choose another " + OUT_DIR + " (nothing was sent)"
        ) from exc
    check_writable_dir(directory, f"folder of the {what}")
