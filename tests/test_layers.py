"""Dependencies point one way: cli -> jobs (export, importer, history) -> formats -> storage
and client -> core.

Every import statement of every module (function-level ones too) is read with ``ast``, so a
lazy import cannot hide an upward dependency, nor a cycle: inside each part (``client``,
``export``...) the modules' imports must run one way. The reference server shares only
``core`` with the client side. No module is over :data:`MAX_LINES` lines.
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
    # The floor every job stands on: locations, stores, credentials, the lock, publication,
    # the layout's names. It knows no job: nothing here may import export or history.
    "storage": frozenset({"core", "_version"}),
    # The table formats (dated folders, Delta, Iceberg) behind one protocol, over storage.
    "formats": frozenset({"core", "storage", "_version"}),
    "ops": frozenset({"core", "client", "_version"}),
    "export": frozenset({"core", "client", "storage", "formats", "_version"}),
    "importer": frozenset({"core", "client", "_version"}),
    "history": frozenset({"core", "storage", "formats", "_version"}),
    "report": frozenset({"core", "history", "_version"}),
    "demo": frozenset({"core", "client", "export", "storage", "formats", "server", "_version"}),
    "cli": frozenset(
        {"core", "client", "export", "history", "importer", "ops", "report", "server", "demo"}
        | {"storage", "formats", "_version"}
    ),
    # Beside the cli at the top: Dagster definitions that run `petsync run` as a child.
    "orchestration": frozenset(
        {"core", "ops", "export", "importer", "history", "storage", "formats", "_version"}
    ),
    "__main__": frozenset({"cli"}),
    "__init__": frozenset(
        {"core", "client", "export", "history", "importer", "ops", "report", "server", "demo"}
        | {"storage", "formats", "_version"}
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


# -- no module over MAX_LINES -------------------------------------------------------------------

# Past a few hundred lines a second idea has usually moved in (house style: one idea per
# module); split along it rather than raise the bound.
MAX_LINES = 500


def test_no_module_is_over_the_line_bound() -> None:
    long = {
        str(path.relative_to(PACKAGE)): lines
        for path in MODULES
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES
    }
    assert long == {}, f"modules over {MAX_LINES} lines (split each along its ideas): {long}"


# -- no import cycles inside a part ------------------------------------------------------------


def module_name(path: Path) -> str:
    """``petsync/storage/lock.py`` -> ``petsync.storage.lock``."""
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {module_name(path): path for path in MODULES}


def module_imports(path: Path, source: str | None = None) -> set[str]:
    """The petsync modules a module imports (its text: ``source``, else the file's), lazy
    imports included.

    ``from petsync.export import run`` names the module ``petsync.export.run`` when there is
    one, else the package ``petsync.export`` (a name its ``__init__`` defines); relative
    imports are resolved against the module's package.
    """
    own = module_name(path)
    package = own if path.name == "__init__.py" else own.rpartition(".")[0]
    found: set[str] = set()
    text = path.read_text(encoding="utf-8") if source is None else source
    for node in ast.walk(ast.parse(text)):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            for alias in node.names:
                found.add(f"{base}.{alias.name}" if f"{base}.{alias.name}" in NAMES else base)
    return {name for name in found if name in NAMES and name != own}


def cycles_in(part: str) -> list[list[str]]:
    """The import cycles among the modules of one part (``export``, ``client``...)."""
    prefix = f"petsync.{part}"
    inside = {n for n in NAMES if n == prefix or n.startswith(prefix + ".")}
    return find_cycles({n: sorted(module_imports(NAMES[n]) & inside) for n in sorted(inside)})


def find_cycles(graph: dict[str, list[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm).

    >>> find_cycles({"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]})
    [['a', 'b', 'c']]
    """
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(node: str) -> None:  # recursion depth: at most the modules of one part
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for target in graph[node]:
            if target not in index:
                visit(target)
                low[node] = min(low[node], low[target])
            elif target in on_stack:
                low[node] = min(low[node], index[target])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in graph:
        if node not in index:
            visit(node)
    return found


PARTS = sorted({part_of(path) for path in MODULES if len(path.relative_to(PACKAGE).parts) > 1})


@pytest.mark.parametrize("part", PARTS)
def test_no_import_cycle_inside_a_part(part: str) -> None:
    assert cycles_in(part) == []


def test_an_import_inside_a_function_counts() -> None:
    source = PACKAGE / "client" / "retry.py"
    text = source.read_text(encoding="utf-8")
    lazy = "\n\ndef later() -> None:\n    from petsync.client import wire\n"
    assert "petsync.client.wire" not in module_imports(source)
    assert "petsync.client.wire" in module_imports(source, text + lazy)
