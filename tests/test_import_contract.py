"""The import contract of the package, read from the source (no module is imported).

- The engine imports neither Airflow, Great Expectations, SQLAlchemy, DuckDB nor pandas' I/O:
  it computes on class aggregates, wherever they were counted.
- Each layer imports only from the layers below it (see ``ALLOWED``): the engine from
  nothing of ours, sources from the engine, the command line and the Airflow / GX adapters
  from both, and no adapter from another adapter's internals.
- No private name (``_name``) is imported from another module, and a private module is
  imported only from its own package.
- Every module declares ``__all__``, and every name it lists exists.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "reident_airflow"

#: The part of the package a module belongs to: its first component below ``reident_airflow``.
#: ``ALLOWED[part]`` are the parts it may import from (its own part and the package's root,
#: which holds the version, always).
ALLOWED: dict[str, set[str]] = {
    "engine": set(),
    "_atomic": {"engine"},
    "_compat": set(),
    "sources": {"engine", "_atomic"},
    "report": {"engine", "_atomic", "_compat"},  # _compat: reports to object storage
    "summary": {"engine", "report"},
    "workflows": {"engine", "sources"},  # the checks in order: no Airflow, no argparse
    "commands": {"engine", "sources", "workflows", "report", "summary", "_atomic"},
    "cli": {"engine", "sources", "report", "summary", "commands", "_atomic"},
    "outcomes": {"engine", "_compat"},
    "connections": {"engine", "sources", "_compat", "outcomes"},  # a connection as an engine
    "operators": {
        "engine",
        "sources",
        "workflows",
        "report",
        "summary",
        "outcomes",
        "connections",
        "notifiers",  # a skip or a warn calls the task's breach notifiers itself
        "_atomic",
        "_compat",
    },
    "notifiers": {"engine", "outcomes", "report", "summary", "_compat"},
    "gx": {"engine", "sources", "report", "summary", "connections", "_compat"},
    "examples": {"engine", "sources", "operators", "connections", "_atomic"},
    "api": {"engine", "sources"},
    "schemas": {"engine"},  # the JSON Schemas (package data) and their loader
    "get_provider_info": set(),
    "__init__": set(),
    "__main__": {"cli"},
}

#: Third-party packages the engine must not import.
ENGINE_FORBIDDEN = {"airflow", "great_expectations", "sqlalchemy", "duckdb", "pyspark", "py4j"}
#: pandas' I/O: the engine never reads or writes a file or a database.
PANDAS_IO = {"read_csv", "read_parquet", "read_sql", "read_sql_query", "read_sql_table"}
PANDAS_IO_METHODS = {"to_csv", "to_parquet", "to_sql"}


def _modules() -> Iterator[tuple[str, Path]]:
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        yield name, path


MODULES = dict(_modules())


def _part(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def _is_package(module: str) -> bool:
    return MODULES[module].name == "__init__.py"


def _imports(module: str, tree: ast.AST) -> Iterator[tuple[int, str, list[str]]]:
    """``(line, imported module, imported names)`` of every import in ``tree``."""
    package = module if _is_package(module) else module.rsplit(".", 1)[0]
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                yield node.lineno, alias.name, []
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = package.split(".")
                anchor = anchor[: len(anchor) - (node.level - 1)]
                base = ".".join([*anchor, base] if base else anchor)
            yield node.lineno, base, [alias.name for alias in node.names]


def _violations(module: str) -> list[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    found: list[str] = []
    part = _part(module)
    where = (
        str(path.relative_to(PACKAGE.parent)) if path.is_relative_to(PACKAGE.parent) else path.name
    )
    for line, target, names in _imports(module, tree):
        top = target.split(".")[0]
        if part == "engine" and top in ENGINE_FORBIDDEN:
            found.append(f"{where}:{line}: the engine imports {target}")
        if part == "engine" and target.startswith("pandas.io"):
            found.append(f"{where}:{line}: the engine imports pandas' I/O ({target})")
        if top != "reident_airflow":
            continue
        other = _part(target) if target != "reident_airflow" else "__init__"
        if other not in {part, "__init__"} and other not in ALLOWED.get(part, set()):
            found.append(f"{where}:{line}: {part} may not import {target}")
        # a private module only from its own package
        pieces = target.split(".")
        for i, piece in enumerate(pieces):
            if piece.startswith("_") and not piece.startswith("__"):
                owner = ".".join(pieces[:i])
                if piece in {"_compat", "_atomic"} and owner == "reident_airflow":
                    break  # the package's shared helpers for every layer
                if not module.startswith(owner + ".") and module != owner:
                    found.append(f"{where}:{line}: imports the private module {target}")
                break
        for name in names:
            if name.startswith("_") and not name.startswith("__"):
                found.append(f"{where}:{line}: imports the private name {name} from {target}")
    if part == "engine":
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and (
                node.attr in PANDAS_IO_METHODS
                or (node.attr in PANDAS_IO and isinstance(node.value, ast.Name))
            ):
                found.append(f"{where}:{node.lineno}: the engine calls pandas' I/O ({node.attr})")
    return found


def _declared_all(tree: ast.Module) -> list[str] | None:
    for node in tree.body:
        targets = node.targets if isinstance(node, ast.Assign) else []
        if isinstance(node, ast.AnnAssign):
            targets = [node.target]
        for target in targets:
            if isinstance(target, ast.Name) and target.id == "__all__":
                value = node.value
                if isinstance(value, ast.List | ast.Tuple):
                    return [e.value for e in value.elts if isinstance(e, ast.Constant)]
                return []
    return None


def _defined(tree: ast.Module) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            names.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            names.add(node.target.id)
    return names


@pytest.mark.parametrize("module", sorted(MODULES))
def test_imports_follow_the_layers(module: str) -> None:
    assert _violations(module) == []


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_module_declares_what_it_exports(module: str) -> None:
    tree = ast.parse(MODULES[module].read_text(encoding="utf-8"))
    if module.endswith("__main__"):
        return  # an entry point, not a module to import from
    exported = _declared_all(tree)
    assert exported is not None, f"{module} declares no __all__"
    lazy = "__getattr__" in _defined(tree)  # names loaded on first use
    missing = sorted(set(exported) - _defined(tree))
    assert lazy or not missing, f"{module}.__all__ names what it does not define: {missing}"


def test_the_contract_catches_an_engine_importing_airflow(tmp_path: Path) -> None:
    """The check itself: an engine module importing Airflow is reported."""
    name = "reident_airflow.engine.planted"
    MODULES[name] = tmp_path / "planted.py"
    MODULES[name].write_text("from airflow.sdk import BaseOperator\n__all__ = []\n")
    try:
        assert _violations(name) == ["planted.py:1: the engine imports airflow.sdk"]
    finally:
        del MODULES[name]
