"""``reident`` against a database that is down (issue 19): exit 2 and one line naming the
backend, host, port and database and the driver's reason -- not "unexpected
OperationalError", and never the password. The port is one of 127.0.0.1 nothing listens on."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli._cli import one_line_error, run

PASSWORD = "S3cr3t-pw"


def _url(scheme: str, port: int) -> str:
    return f"{scheme}://etl:{PASSWORD}@127.0.0.1:{port}/test"


def _check(line: str, backend: str, port: int) -> None:
    assert line.startswith(
        f"reident: error: could not connect to the {backend} database 'test' on "
        f"127.0.0.1:{port} as user 'etl': "
    ), line
    assert "refused" in line.lower() and "unexpected" not in line
    assert PASSWORD not in line


@pytest.mark.parametrize("scheme", ["postgresql", "mysql"])
def test_assess(closed_port: int, scheme: str) -> None:
    code, out, err = run("assess", _url(scheme, closed_port), "--table", "t", "--qi", "a")
    _check(one_line_error(code, err), scheme, closed_port)
    assert out == ""


def test_datafly_and_direct_match(closed_port: int, tmp_path: Path) -> None:
    hierarchy = tmp_path / "h.csv"
    hierarchy.write_text("x;*\n", encoding="utf-8")
    url = _url("postgresql", closed_port)
    code, _, err = run(
        "datafly", url, "--table", "t", "--qi", "a", "--k", "2", "--quiet",
        "--hierarchy", f"a={hierarchy}", "--output", str(tmp_path / "o.csv"),
    )  # fmt: skip
    _check(one_line_error(code, err), "postgresql", closed_port)
    code, _, err = run(
        "direct-match", url, url, "--original-table", "o", "--avatar-table", "a", "--key", "id"
    )
    _check(one_line_error(code, err), "postgresql", closed_port)
    original = tmp_path / "o.csv"
    original.write_text("id,a\n1,x\n", encoding="utf-8")
    code, _, err = run("direct-match", str(original), url, "--avatar-table", "a", "--key", "id")
    _check(one_line_error(code, err), "postgresql", closed_port)
