"""scripts/release.sh --check: the version comes from the tag and must be pyproject's, and the
release notes are the CHANGELOG's section of that version (on a throwaway repository)."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

CHANGELOG = """# Changelog

## [Unreleased]

### Added
- not released yet

## [1.2.3] - 2026-12-01

### Fixed
- the gate reads the tagged thing

## [1.2.2] - 2026-11-01

### Added
- older
"""


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git not installed")
    (tmp_path / "scripts").mkdir()
    shutil.copy2(ROOT / "scripts" / "release.sh", tmp_path / "scripts" / "release.sh")
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\nversion = "1.2.3"\n')
    (tmp_path / "CHANGELOG.md").write_text(CHANGELOG)
    (tmp_path / ".gitignore").write_text("dist/\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A", ".")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "release")
    _git(tmp_path, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v1.2.3", "-m", "x")
    return tmp_path


def _check(repo: Path, tag: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        ["bash", "scripts/release.sh", tag, "--check"],
        cwd=repo,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable},
        check=False,
    )


def test_the_notes_are_the_tagged_versions_section(repo: Path) -> None:
    done = _check(repo, "v1.2.3")
    assert done.returncode == 0, done.stderr
    notes = (repo / "dist" / "RELEASE_NOTES.md").read_text()
    assert notes == "### Fixed\n- the gate reads the tagged thing\n"


def test_a_tag_that_is_not_pyprojects_version_is_refused(repo: Path) -> None:
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v1.2.4", "-m", "x")
    done = _check(repo, "v1.2.4")
    assert done.returncode == 2
    assert "pyproject.toml's version is 1.2.3, the tag says 1.2.4" in done.stderr


def test_a_version_without_a_changelog_section_is_refused(repo: Path) -> None:
    (repo / "CHANGELOG.md").write_text(CHANGELOG.replace("## [1.2.3] - 2026-12-01", "## [x]"))
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", "drop")
    _git(repo, "tag", "-d", "v1.2.3")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "tag", "-a", "v1.2.3", "-m", "x")
    done = _check(repo, "v1.2.3")
    assert done.returncode == 2
    assert "no '## [1.2.3]' section" in done.stderr


@pytest.mark.parametrize("tag", ["1.2.3", "v1.2", "v1.2.3rc1", ""])
def test_a_tag_not_of_the_form_vxyz_is_refused(repo: Path, tag: str) -> None:
    assert _check(repo, tag).returncode == 2


def test_an_untagged_head_is_refused(repo: Path) -> None:
    (repo / "extra.txt").write_text("x")
    _git(repo, "add", "extra.txt")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "after")
    done = _check(repo, "v1.2.3")
    assert done.returncode == 2
    assert "HEAD is not v1.2.3" in done.stderr
