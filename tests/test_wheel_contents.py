"""The built wheel holds every file of the package and its entry points.

``scripts/smoke_wheel.sh`` installs the wheel and runs it (beside the suite in
``scripts/test.sh``, not for a selection of tests); this is its cheap half, on every run: a
file tracked under ``reident_airflow/`` that ``[tool.setuptools]`` leaves out of the wheel (a
new schema, a hierarchy, ``py.typed``) would be missing only for pip users.
"""

from __future__ import annotations

import configparser
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT


def _tracked_package_files() -> set[str]:
    done = subprocess.run(
        ["git", "ls-files", "reident_airflow"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        pytest.skip("not a git checkout: the tracked files are unknown")
    return {line for line in done.stdout.splitlines() if line}


@pytest.fixture(scope="module")
def wheel(tmp_path_factory: pytest.TempPathFactory) -> zipfile.ZipFile:
    # build from a copy of what the sdist needs, so the checkout gets no build/ or egg-info
    src = tmp_path_factory.mktemp("src")
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for path in _tracked_package_files():
        (src / path).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(ROOT / path, src / path)
    out = tmp_path_factory.mktemp("dist")
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(out), str(src)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    [path] = list(out.glob("reident_airflow-*.whl"))
    return zipfile.ZipFile(path)


def test_every_tracked_package_file_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    names = set(wheel.namelist())
    missing = sorted(_tracked_package_files() - names)
    assert not missing, f"left out of the wheel: {missing}"
    # the files pip users need beyond the code, named so a rename shows here too
    for path in (
        "reident_airflow/py.typed",
        "reident_airflow/data/adult.csv",
        "reident_airflow/data/hierarchies/adult_hierarchy_age.csv",
        "reident_airflow/schemas/reident.assessment.v1.schema.json",
    ):
        assert path in names, path


def test_nothing_but_the_package_is_in_the_wheel(wheel: zipfile.ZipFile) -> None:
    tops = {Path(name).parts[0] for name in wheel.namelist()}
    assert {t for t in tops if not t.endswith(".dist-info")} == {"reident_airflow"}


def test_the_wheel_declares_the_cli_and_the_airflow_provider(wheel: zipfile.ZipFile) -> None:
    [name] = [n for n in wheel.namelist() if n.endswith(".dist-info/entry_points.txt")]
    entry_points = configparser.ConfigParser()
    entry_points.read_string(wheel.read(name).decode("utf-8"))
    assert entry_points["console_scripts"]["reident"] == "reident_airflow.cli:main"
    assert (
        entry_points["apache_airflow_provider"]["provider_info"]
        == "reident_airflow.get_provider_info:get_provider_info"
    )
