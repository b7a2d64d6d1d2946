"""Progress on stderr (issue 19): a long run says what it is doing, a quick one prints
nothing, ``--quiet`` silences it, stdout is the same either way; ``--report`` takes only an
HTML name and the run says where the report went."""

from __future__ import annotations

import io
import json
import os
import re
import time
from pathlib import Path

import pytest

from reident_airflow.commands import common
from reident_airflow.commands.common import Progress
from tests.cli._cli import one_line_error, run
from tests.conftest import oracle_data

ADULT = str(oracle_data("adult.csv"))
LINE = re.compile(r"^reident (assess|direct-match) \[ *\d+\.\d\ds\] ")


# ------------------------------------------------------------------------------ the mechanism
def test_a_quick_run_prints_nothing() -> None:
    err = io.StringIO()
    progress = Progress("assess", err, quiet=False, delay=5.0)
    progress("reading")
    progress("grouping")
    progress.close()
    assert err.getvalue() == ""


def test_a_step_longer_than_the_delay_is_shown_while_it_runs() -> None:
    err = io.StringIO()
    progress = Progress("assess", err, quiet=False, delay=0.05)
    progress("reading and grouping big.csv")
    deadline = time.monotonic() + 10
    while not err.getvalue() and time.monotonic() < deadline:  # the step is still under way
        time.sleep(0.01)
    shown = err.getvalue()
    progress("computing the measures")
    progress.close()
    lines = err.getvalue().splitlines()
    assert shown.endswith("reading and grouping big.csv ...\n"), shown
    assert lines[1].endswith("] computing the measures") and lines[2].endswith("] done")
    assert all(line.startswith("reident assess [") for line in lines)


def test_quiet_shows_nothing_and_an_error_ends_without_done() -> None:
    err = io.StringIO()
    progress = Progress("assess", err, quiet=True, delay=0.0)
    progress("reading")
    progress.close()
    assert err.getvalue() == ""
    args = type("Args", (), {"quiet": False})()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(common, "PROGRESS_DELAY", 1e-9)
        with pytest.raises(KeyError), Progress.of("assess", args, err) as shown:
            time.sleep(0.05)  # the timer fires
            shown("reading")
            raise KeyError("boom")
    assert err.getvalue().splitlines()[-1].endswith("] reading")  # no "done" after an error


# ------------------------------------------------------------------------------ the commands
def test_assess_shows_its_phases_and_stdout_does_not_change(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    argv = ("assess", ADULT, "--sep", ";", "--qi", "sex,age,race", "--min-k", "5", "--json", "-")
    code_quiet, out_quiet, err_quiet = run(*argv, "--quiet")
    monkeypatch.setattr(common, "PROGRESS_DELAY", 1e-9)  # as if the run were long
    code, out, err = run(*argv)
    assert (code, code_quiet) == (1, 1)
    doc, doc_quiet = json.loads(out), json.loads(out_quiet)
    assert doc["k"] == 1 and doc["input"]["sha256"] == doc_quiet["input"]["sha256"]
    doc["input"]["taken_at"] = doc_quiet["input"]["taken_at"]  # the only part that differs
    assert doc == doc_quiet
    # the advice on the k breach is a result, not progress: --quiet leaves it alone
    [advice] = err_quiet.splitlines()
    assert advice.startswith("reident: advice: 191 of 528 classes")
    lines = err.splitlines()
    assert lines[-1] == advice
    assert all(LINE.match(line) for line in lines[:-1]), err
    steps = [LINE.sub("", line) for line in lines[:-1]]
    assert steps[-6:] == [
        # Adult on sex, age and race: 30,162 records in 528 classes (tests/data/arx/arx_C1.json)
        "grouped 30,162 records into 528 classes",
        "computing the measures",
        f"k = 1 < 5: reading {ADULT} again for the advice",
        f"fingerprinting {ADULT}",
        "writing the outputs",
        "done",
    ]
    assert steps[0].startswith(f"reading and grouping {ADULT} on 3 QIs")


def test_direct_match_shows_its_phases(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    original = tmp_path / "o.csv"
    original.write_text("id,a\n1,x\n2,y\n3,z\n", encoding="utf-8")
    monkeypatch.setattr(common, "PROGRESS_DELAY", 1e-9)
    code, out, err = run("direct-match", str(original), str(original), "--key", "id")
    steps = [LINE.sub("", line) for line in err.splitlines()]
    assert code == 1 and "protection" in out.lower()
    # the timer may wake up after the first step has begun: it then shows it with "..."
    assert steps[0] in {"reading ORIGINAL", "reading ORIGINAL ..."}
    assert steps[1:] == [
        "reading AVATAR (3 records in ORIGINAL)",
        "comparing 3 records",
        "writing the outputs",
        "done",
    ]


# ---------------------------------------------------------------------------------- --report
@pytest.mark.parametrize("name", ["out.pdf", "out.html.txt", "report"])
def test_report_refuses_a_name_that_is_not_html(tmp_path: Path, name: str) -> None:
    code, _, err = run("assess", ADULT, "--qi", "sex", "--report", str(tmp_path / name))
    line = one_line_error(code, err)
    assert "--report" in line and "must end in .html or .htm" in line
    assert not (tmp_path / name).exists()


def test_report_location_goes_to_stderr(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    argv = ("assess", ADULT, "--sep", ";", "--qi", "sex", "--json", "-")
    code, out, err = run(*argv, "--report", "reports/r.HTM")
    where = os.path.join(str(tmp_path), "reports", "r.HTM")
    assert code == 0 and json.loads(out)["records"] == 30162
    assert err == f"reident: report written to {where}\n"
    assert Path(where).read_text(encoding="utf-8").lstrip().lower().startswith("<!doctype html")
    assert run(*argv, "--report", "reports/r.HTM", "--quiet")[2] == ""
