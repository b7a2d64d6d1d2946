"""The engine's public API and its module rules (see ``reident_airflow/engine/__init__.py``).

Every name of ``reident_airflow.engine.__all__`` is the object its defining module exports;
every engine module declares ``__all__`` with names it holds; no engine module imports a
name starting with ``_`` from another module; importing the package loads no submodule.
"""

from __future__ import annotations

import ast
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import pytest

import reident_airflow.engine as engine

ENGINE_DIR = Path(engine.__file__).parent
MODULES = sorted(m.name for m in pkgutil.iter_modules([str(ENGINE_DIR)]))


def test_every_public_name_resolves_to_its_module_object() -> None:
    assert len(engine.__all__) == len(set(engine.__all__))
    for name in engine.__all__:
        value = getattr(engine, name)
        home = importlib.import_module(f"reident_airflow.engine.{engine._HOMES[name]}")
        assert value is getattr(home, name), name
        assert name in home.__all__, f"{name} is not in the __all__ of {home.__name__}"
        assert not isinstance(value, type(engine)), f"{name} is a module, not an API name"
    with pytest.raises(AttributeError):
        engine.no_such_name  # noqa: B018


@pytest.mark.parametrize("module", MODULES)
def test_every_module_declares_what_it_exports(module: str) -> None:
    loaded = importlib.import_module(f"reident_airflow.engine.{module}")
    names = loaded.__all__
    assert names, module
    for name in names:
        assert hasattr(loaded, name), f"{module}.__all__ names {name!r}, which it lacks"
        assert not name.startswith("_"), f"{module}.__all__ exports a private name {name!r}"


@pytest.mark.parametrize("module", MODULES)
def test_no_private_name_is_imported_from_another_module(module: str) -> None:
    tree = ast.parse((ENGINE_DIR / f"{module}.py").read_text(encoding="utf-8"))
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("reident_"):
            private = [a.name for a in node.names if a.name.startswith("_")]
            assert not private, f"{module} imports {private} from {node.module}"


def test_importing_the_package_loads_no_submodule() -> None:
    code = (
        "import sys, reident_airflow.engine; "
        "print(sorted(m for m in sys.modules if m.startswith('reident_airflow.engine.')))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "[]"
