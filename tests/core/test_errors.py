"""The exception tree drawn in petsync.core.errors' docstring is the one in the code."""

from __future__ import annotations

import re

import pytest

from petsync.core import errors
from petsync.core.errors import ExitCode, PetsyncError

_LINE = re.compile(r"^(?P<indent>[\s│├└─]*)(?P<name>\w+Error)\s+exit (?P<code>\d+)\s")


def drawn_tree() -> dict[str, tuple[str | None, int]]:
    """Each class drawn in the docstring: its parent in the drawing and its exit code."""
    assert errors.__doc__ is not None
    drawn: dict[str, tuple[str | None, int]] = {}
    stack: list[tuple[int, str]] = []
    for line in errors.__doc__.splitlines():
        match = _LINE.match(line.removeprefix("    "))
        if match is None:
            continue
        depth = len(match.group("indent"))
        while stack and stack[-1][0] >= depth:
            stack.pop()
        parent = stack[-1][1] if stack else None
        drawn[match.group("name")] = (parent, int(match.group("code")))
        stack.append((depth, match.group("name")))
    return drawn


def code_tree() -> dict[str, tuple[str | None, int]]:
    classes = [
        value
        for value in vars(errors).values()
        if isinstance(value, type) and issubclass(value, PetsyncError)
    ]
    return {
        cls.__name__: (
            None if cls is PetsyncError else cls.__mro__[1].__name__,
            int(cls.exit_code),
        )
        for cls in classes
    }


def test_the_docstring_draws_every_error_class_with_its_parent_and_exit_code() -> None:
    assert drawn_tree() == code_tree()


def test_every_petsync_error_class_in_the_package_lives_in_the_tree() -> None:
    import importlib
    import pkgutil

    import petsync

    outside: list[str] = []
    for module_info in pkgutil.walk_packages(petsync.__path__, "petsync."):
        module = importlib.import_module(module_info.name)
        for value in vars(module).values():
            if (
                isinstance(value, type)
                and issubclass(value, PetsyncError)
                and value.__module__ != errors.__name__
            ):
                outside.append(f"{value.__module__}.{value.__name__}")
    assert outside == []


@pytest.mark.parametrize(
    ("cls", "code"),
    [
        (errors.UsageError, ExitCode.USAGE),
        (errors.AuthenticationError, ExitCode.AUTH),
        (errors.IncompleteError, ExitCode.INCOMPLETE),
        (errors.LockedError, ExitCode.LOCKED),
    ],
    ids=["usage", "auth", "incomplete", "locked"],
)
def test_exit_codes_come_from_the_class(cls: type[PetsyncError], code: ExitCode) -> None:
    assert cls.exit_code is code


def test_every_exit_code_has_one_rank_from_ok_to_sigterm() -> None:
    assert set(errors.SEVERITY) == set(ExitCode)
    ranked = sorted([143, 0, 75, 3, 1, 130, 2, 4], key=errors.severity)
    assert ranked == [0, 4, 75, 1, 2, 3, 130, 143]
    assert errors.severity(99) == errors.severity(1)  # an undocumented code counts as a failure


def test_a_run_of_several_jobs_and_an_import_of_several_files_rank_alike() -> None:
    from petsync.cli import run
    from petsync.importer import batch

    assert run.severity is batch.severity is errors.severity
