"""Dependencies point one way: cli -> jobs (export, importer) -> client -> core.

Every import statement of every module (function-level ones too) is read with ``ast``, so a
lazy import cannot hide an upward dependency. The reference server shares only ``core``
with the client side.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "petsync"

# What each part of petsync may import from petsync (besides itself).
ALLOWED: dict[str, frozenset[str]] = {
    "_version": frozenset(),
    "core": frozenset({"_version"}),
    "client": frozenset({"core", "_version"}),
    "server": frozenset({"core", "_version"}),
    "ops": frozenset({"core", "client", "_version"}),
    "export": frozenset({"core", "client", "_version"}),
    "importer": frozenset({"core", "client", "_version"}),
    "history": frozenset({"core", "export", "_version"}),
    "report": frozenset({"core", "history", "_version"}),
    "demo": frozenset({"core", "client", "export", "server", "_version"}),
    "cli": frozenset(
        {"core", "client", "export", "history", "importer", "ops", "report", "server", "demo"}
        | {"_version"}
    ),
    "__main__": frozenset({"cli"}),
    "__init__": frozenset(
        {"core", "client", "export", "history", "importer", "ops", "report", "server", "demo"}
        | {"_version"}
    ),
}


def part_of(path: Path) -> str:
    relative = path.relative_to(PACKAGE)
    return relative.parts[0] if len(relative.parts) > 1 else relative.stem


def petsync_imports(path: Path) -> set[str]:
    """The petsync parts a module imports (``petsync.client.config`` -> ``client``)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        names: list[str] = []
        if isinstance(node, ast.Import):
            names = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names = [node.module]
            if node.module == "petsync":
                names = [f"petsync.{alias.name}" for alias in node.names]
        for name in names:
            parts = name.split(".")
            if parts[0] == "petsync" and len(parts) > 1:
                found.add(parts[1])
    return found


MODULES = sorted(PACKAGE.rglob("*.py"))


@pytest.mark.parametrize("path", MODULES, ids=[str(p.relative_to(PACKAGE)) for p in MODULES])
def test_module_imports_only_what_its_layer_may(path: Path) -> None:
    part = part_of(path)
    upward = petsync_imports(path) - ALLOWED[part] - {part}
    assert upward == set(), f"{path.relative_to(PACKAGE)} ({part}) imports {sorted(upward)}"


def test_only_the_cli_imports_click() -> None:
    users = sorted(
        str(path.relative_to(PACKAGE))
        for path in MODULES
        if part_of(path) != "cli" and "click" in _top_level_imports(path)
    )
    assert users == []


def _top_level_imports(path: Path) -> set[str]:
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            found.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module.split(".")[0])
    return found
