"""One fresh interpreter for every test that needs a process without ``reident_airflow.gx``.

What the fail-closed and registration tests check happens in a process that has not imported
the package: GE's registries are empty of it, and a saved suite loses its expectations. Each
such case used to start its own interpreter (a GE import each, 15-30 s on a loaded machine);
now one interpreter runs them all, in two phases:

1. before ``import reident_airflow.gx``: GE's registries, each saved context's checkpoint and
   the suite file read by plain GE (``ExpectationSuite(**json)`` and ``batch.validate``);
2. after it: the registries again, the checkpoints again, and
   :func:`~reident_airflow.gx.checkpoint.check_context` on each context.

Every case reports whether the package was imported when it ran, so a case cannot silently
run in the wrong phase. Each case runs on its own copy of a context, so no run sees what
another wrote. The contexts are saved by the test process itself (which has imported the
package): saving is not what is tested, loading is.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import great_expectations as gx

from reident_airflow.gx import EXPECTATION_TYPES, METRIC_NAMES, is_guard, load_suite
from tests.conftest import ROOT

__all__ = ["SUITE", "UNIQUE", "run_fresh", "save_context"]

SUITE = ROOT / "expectations" / "adult_release.suite.json"
#: every record unique on sex, age, race: k = 1
UNIQUE = "sex,age,race\nMale,30,White\nFemale,40,Black\nMale,50,Asian-Pac-Islander\n"

SCRIPT = """
import json, shutil, sys
import great_expectations as gx
import pandas as pd
from great_expectations.checkpoint.actions import _VALIDATION_ACTION_REGISTRY
from great_expectations.expectations import registry

TYPES, METRICS = {types!r}, {metrics!r}
contexts, suite_file = json.loads(sys.argv[1]), sys.argv[2]


def imported():
    return "reident_airflow.gx" in sys.modules


def registries():
    expectations = [n for n in TYPES if n in registry._registered_expectations]
    metrics = {{
        n: sorted(registry._registered_metrics[n]["providers"])
        for n in METRICS if n in registry._registered_metrics
    }}
    try:
        action = _VALIDATION_ACTION_REGISTRY.get("reident_alert").__name__
    except Exception:
        action = None
    return repr((expectations, metrics, action))


def run(root):
    context = gx.get_context(mode="file", project_root_dir=root)
    out = {{"loaded": len(context.suites.get("adult_release").expectations)}}
    try:
        result = context.checkpoints.get("release_gate").run()
    except Exception as exc:
        out.update(success=None, error=type(exc).__name__, message=str(exc))
    else:
        [validation] = result.run_results.values()
        out.update(success=result.success, evaluated=len(validation.results))
    out["reident_imported"] = imported()
    return out


def plain(path):
    suite = gx.ExpectationSuite(**json.loads(open(path, encoding="utf-8").read()))
    frame = pd.DataFrame({{"sex": ["Male"], "age": ["30"], "race": ["White"]}})
    source = gx.get_context(mode="ephemeral").data_sources.add_pandas("p")
    batch = source.add_dataframe_asset("a").add_batch_definition_whole_dataframe("w")
    out = {{"loaded": len(suite.expectations)}}
    try:
        data = batch.get_batch(batch_parameters={{"dataframe": frame}})
        out["success"] = data.validate(suite).success
    except Exception as exc:
        out["error"] = type(exc).__name__
    out["reident_imported"] = imported()
    return out


def check(root):
    from reident_airflow.gx import SuiteIncompleteError, check_context

    context = gx.get_context(mode="file", project_root_dir=root)
    try:
        return {{"counts": check_context(context)}}
    except SuiteIncompleteError as exc:
        return {{"error": str(exc)}}


out = {{"registries_before": registries()}}
out["without"] = {{kind: run(contexts["without"][kind]) for kind in ("guarded", "bare")}}
out["without"]["plain"] = plain(suite_file)
import reident_airflow.gx
out["registries_after"] = registries()
out["with"] = {{kind: run(contexts["with"][kind]) for kind in ("guarded", "bare")}}
out["check"] = {{kind: check(contexts["check"][kind]) for kind in ("guarded", "bare")}}
print(json.dumps(out))
"""


def save_context(root: Path, *, guarded: bool) -> Path:
    """A file context at ``root``: the example suite and a checkpoint on a k = 1 CSV.

    ``guarded=False`` saves the suite as it was before the guard existed: the guard is taken
    out of the saved file.
    """
    root.mkdir(parents=True, exist_ok=True)
    (root / "release.csv").write_text(UNIQUE, encoding="utf-8")
    context = gx.get_context(mode="file", project_root_dir=str(root))
    suite = context.suites.add(load_suite(SUITE))
    source = context.data_sources.add_pandas_filesystem("files", base_directory=root)
    batch = source.add_csv_asset("release").add_batch_definition_path("one", path="release.csv")
    definition = context.validation_definitions.add(
        gx.ValidationDefinition(name="release", data=batch, suite=suite)
    )
    context.checkpoints.add(gx.Checkpoint(name="release_gate", validation_definitions=[definition]))
    if not guarded:  # every reident expectation now brings the guard: remove it from the file
        saved = root / "gx" / "expectations" / f"{suite.name}.json"
        data = json.loads(saved.read_text(encoding="utf-8"))
        data["expectations"] = [e for e in data["expectations"] if not is_guard(e)]
        saved.write_text(json.dumps(data, indent=2), encoding="utf-8")
    return root


def run_fresh(folder: Path) -> dict[str, Any]:
    """Save a guarded and a bare context under ``folder`` and run every case on its own copy."""
    saved = {
        kind: save_context(folder / "saved" / kind, guarded=kind == "guarded")
        for kind in ("guarded", "bare")
    }
    contexts: dict[str, dict[str, str]] = {}
    for phase in ("without", "with", "check"):
        contexts[phase] = {}
        for kind, root in saved.items():
            copy = folder / phase / kind
            shutil.copytree(root, copy)
            contexts[phase][kind] = str(copy)
    code = SCRIPT.format(types=EXPECTATION_TYPES, metrics=METRIC_NAMES)
    done = subprocess.run(
        [
            sys.executable,
            "-W",
            "ignore::DeprecationWarning",
            "-c",
            code,
            json.dumps(contexts),
            str(SUITE),
        ],
        capture_output=True,
        text=True,
        env={**os.environ, "GX_ANALYTICS_ENABLED": "false"},
        cwd=ROOT,
        timeout=600,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    out: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return out
