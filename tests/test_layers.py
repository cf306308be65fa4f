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


# -- a sub-package never imports its parent ----------------------------------------------------


def test_no_sub_package_imports_its_parent() -> None:
    """``petsync/importer/sheets/x.py`` may not import ``petsync.importer.y``: a sub-package is
    a floor below its parent's modules, which use it (they would otherwise run both ways)."""
    upward: list[str] = []
    for path in MODULES:
        own = module_name(path)
        package = own if path.name == "__init__.py" else own.rpartition(".")[0]
        parent = package.rpartition(".")[0]
        if parent in ("", "petsync"):
            continue  # a top-level part: the layer table rules it
        for name in sorted(module_imports(path)):
            if name.startswith(parent + ".") and not name.startswith(package + "."):
                upward.append(f"{own} imports {name}")
            elif name == parent:
                upward.append(f"{own} imports its parent {name}")
    assert upward == []


# -- imports inside a function: only to defer a heavy dependency -------------------------------

# An import inside a function hides what a module needs and can hide a cycle, so it is there
# for one reason only: to defer a dependency that is slow to load or optional, so that
# `petsync --help`, and every command that never needs it, does not pay for it. Each such
# dependency, and why; an import of a petsync module inside a function must load one of them.
DEFERRED: dict[str, str] = {
    "pyarrow": "about 0.1 s and 30 MiB; only where tables and files are made",
    "numpy": "about 0.05 s; only where columns are computed",
    "pandas": "about 0.3 s and 40 MiB; only the readers that return DataFrames",
    "pyiceberg": "optional extra [iceberg]; only Iceberg tables",
    "botocore": "optional extra [s3], about 0.2 s; only s3:// locations",
    "google": "optional extra [gcs], about 0.3 s; only gs:// locations",
    "azure": "optional extra [azure], about 0.2 s; only az:// locations",
    "prometheus_client": "only when a metrics file is written",
    "python_calamine": "only when a workbook is read",
    "vl_convert": "optional extra [report]; only the report's bundled Vega",
    "httpx": "about 0.1 s; only commands that talk to an API (--help and local commands not)",
    "starlette": "the reference server's web framework, with uvicorn and anyio about 40 ms: "
    "only `petsync serve` and the demo",
    "importlib.metadata": "the installed package's metadata (email's parsers), about 13 ms: "
    "only a bug's report reads it",
}

# petsync's own modules that the command line defers for the same reason though they load
# nothing above: what they bring in of the standard library together costs as much.
DEFERRED_MODULES: dict[str, str] = {
    "petsync.importer.inbox": "the whole import's readers and checks (sqlite3, XML parsers, "
    "multiprocessing, ssl through urllib), about 40 ms: only `petsync import` and Dagster's "
    "import asset",
    "petsync.importer.sheets.workbook": "the workbook readers (zip, XML parsers, urllib's http "
    "stack), about 12 ms: only a workbook, never a CSV file",
}


def _deferred_among(names: list[str]) -> set[str]:
    """The DEFERRED entries ``names`` import: a package, or a module of the standard library
    named whole (``importlib.metadata`` is deferred, ``importlib`` is not)."""
    return {key for key in DEFERRED for n in names if n == key or n.startswith(key + ".")}


def _function_level_imports(path: Path) -> list[tuple[str, int, list[str]]]:
    """(function, line, candidate module names) of each import inside a function."""
    found: list[tuple[str, int, list[str]]] = []
    for function in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if not isinstance(function, ast.FunctionDef | ast.AsyncFunctionDef):
            continue
        for node in ast.walk(function):
            if isinstance(node, ast.Import):
                found.append((function.name, node.lineno, [a.name for a in node.names]))
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names = [f"{node.module}.{a.name}" for a in node.names]
                found.append((function.name, node.lineno, [node.module, *names]))
    return found


def _loaded_at_import(name: str, seen: set[str] | None = None) -> set[str]:
    """The DEFERRED dependencies importing petsync module ``name`` loads (top-level imports,
    followed through petsync's own modules)."""
    seen = set() if seen is None else seen
    if name in seen or name not in NAMES:
        return set()
    seen.add(name)
    loaded: set[str] = set()
    for top in _eager_imports(NAMES[name]):
        deferred = _deferred_among([top])
        if deferred:
            loaded |= deferred
        elif top.split(".")[0] == "petsync":
            loaded |= _loaded_at_import(top, seen)
    return loaded


def _eager_imports(path: Path) -> set[str]:
    """Modules a module imports when it is imported: not inside a function, not only for
    the type checker."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skipped: set[int] = set()
    for node in ast.walk(tree):
        lazy = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
        if lazy or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            skipped.update(id(inner) for inner in ast.walk(node))
    found: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in skipped:
            continue
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{a.name}" for a in node.names)
    return found


def test_an_import_inside_a_function_defers_a_heavy_dependency() -> None:
    needless: list[str] = []
    for path in MODULES:
        for function, line, names in _function_level_imports(path):
            deferred = _deferred_among(names)
            for name in names:
                deferred |= _loaded_at_import(name)
            if not deferred and not DEFERRED_MODULES.keys() & set(names):
                where = f"{path.relative_to(PACKAGE)}:{line} ({function})"
                needless.append(f"{where} imports {names[0]}: import it at the top")
    assert needless == [], "\n".join(needless)


def test_every_deferred_dependency_is_deferred_somewhere() -> None:
    used: set[str] = set()
    for path in MODULES:
        for _, _, names in _function_level_imports(path):
            used |= _deferred_among(names)
            for name in names:
                used |= _loaded_at_import(name)
            used |= DEFERRED_MODULES.keys() & set(names)
    assert sorted((DEFERRED.keys() | DEFERRED_MODULES.keys()) - used) == []


# -- the house as docs/design.md draws it ------------------------------------------------------


def test_the_drawing_of_floors_matches_the_table() -> None:
    """docs/design.md draws the packages on floors; each may import only floors below it."""
    text = (PACKAGE.parent / "docs" / "design.md").read_text(encoding="utf-8")
    house = text[text.index("## The house") :]
    start = house.index("```text\n") + len("```text\n")
    block = house[start : house.index("\n```", start)]
    floors = [line.split("  ")[0].split(" · ") for line in block.splitlines()]
    drawn = [name for floor in floors for name in floor]
    beside = {"_version", "__main__", "__init__", "demo"}  # entry points and the demo's glue
    assert sorted(drawn) == sorted(set(ALLOWED) - beside)
    for level, floor in enumerate(floors):
        below = {name for lower in floors[level + 1 :] for name in lower}
        for name in floor:
            assert ALLOWED[name] - beside <= below, f"{name} imports beside or above its floor"
