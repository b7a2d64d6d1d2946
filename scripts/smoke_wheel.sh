#!/usr/bin/env bash
# Build the sdist and the wheel, install the wheel into a fresh virtual environment exactly as
# docs/install.md tells a pip user to, and check what a user sees first:
#   - `airflow providers list` shows reident-airflow;
#   - `reident --version`, and `reident assess` on the bundled sample passes and breaches;
#   - `import reident_airflow.gx` registers the expectations;
#   - the release_gate DAG (`airflow dags test`) passes, and breaches with raw ages.
# Nothing of the repository is on the path of the fresh environment: only the wheel, its
# extras and the DAG file copied into a new Airflow home.
#
# Usage: bash scripts/smoke_wheel.sh [--keep]
#   PYTHON     the interpreter of the fresh environment (default python3; 3.11 to 3.13)
#   --keep     leave the temporary folder (its path is printed) for a look afterwards
#   SMOKE_DIST_DIR  when set, the sdist and the wheel are copied there once every check passed
#              (scripts/release.sh uses it: the release is the file that was tested)
#   SMOKE_BUILD_PYTHON  an interpreter that has `build` installed, to build with instead of a
#              new tool environment (scripts/test.sh passes .venv's: the dev extra has `build`)
# scripts/test.sh runs it beside the test suite, at the lowest priority (docs/install.md,
# "Checking a build").
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
PYTHON="${PYTHON:-python3}"
keep=0
[ "${1:-}" = "--keep" ] && keep=1

work="$(mktemp -d -t reident-smoke.XXXXXX)"
cleanup() { if [ "$keep" = 1 ]; then echo "smoke: kept $work" >&2; else rm -rf "$work"; fi; }
trap cleanup EXIT
step() { echo "== smoke: $*" >&2; }
# pip's notes about index locations configured on this machine are noise, not errors
quiet_pip() { "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
fail() { echo "smoke: FAILED: $*" >&2; exit 1; }
start=$SECONDS

# -- 1. build: sdist and wheel, with `build` from a tool environment (or SMOKE_BUILD_PYTHON) -
step "python -m build (sdist and wheel) into $work/dist"
builder="${SMOKE_BUILD_PYTHON:-}"
if [ -z "$builder" ]; then
  "$PYTHON" -m venv "$work/tools"
  quiet_pip "$work/tools/bin/pip" install --quiet -c constraints.txt build
  builder="$work/tools/bin/python"
fi
# from a copy of the tracked files (as they are in the work tree): the build writes no
# egg-info into the checkout while scripts/test.sh's tests read the package's metadata there
# (outside a git checkout, from the folder itself)
src=.
if git rev-parse --is-inside-work-tree >/dev/null 2>&1; then
  src="$work/src"
  mkdir "$src"
  git ls-files -z | xargs -0 sh -c 'for f; do [ -e "$f" ] && printf "%s\0" "$f"; done' sh |
    tar --null -T - -cf - | tar -xf - -C "$src"
fi
"$builder" -m build --outdir "$work/dist" "$src" >"$work/build.log" 2>&1 ||
  { tail -n 30 "$work/build.log" >&2; fail "python -m build"; }
wheel="$(ls "$work"/dist/reident_airflow-*.whl)"
ls "$work"/dist/reident_airflow-*.tar.gz >/dev/null || fail "no sdist in dist/"
echo "smoke: built $(basename "$wheel") and $(basename "$(ls "$work"/dist/*.tar.gz)")" >&2

# -- 2. install: docs/install.md, "In a new virtual environment" -------------------------------
step "fresh venv; pip install \"$(basename "$wheel")[airflow,gx]\" -c constraints.txt"
"$PYTHON" -m venv "$work/venv"
quiet_pip "$work/venv/bin/pip" install --quiet -c constraints.txt "$wheel[airflow,gx]"
bin="$work/venv/bin"
# the installed package, not the repository's folder, must be what runs
cd "$work"
where="$("$bin/python" -c 'import reident_airflow; print(reident_airflow.__file__)')"
case "$where" in "$work"/venv/*) ;; *) fail "reident_airflow imported from $where" ;; esac

# -- 3. the command line on the bundled sample --------------------------------------------------
step "reident --version; reident assess on the bundled sample"
"$bin/reident" --version
sample="$("$bin/python" -c 'from importlib.resources import files; print(files("reident_airflow") / "data/adult.csv")')"
"$bin/reident" assess "$sample" --sep ';' --qi sex,race --min-k 5 --no-ranking --quiet |
  head -n 1 | grep -qx "Re-identification risk: PASSED" || fail "assess --qi sex,race did not pass"
set +e
"$bin/reident" assess "$sample" --sep ';' --qi sex,age,race --min-k 5 --no-ranking --quiet \
  >"$work/breach.txt" 2>/dev/null
rc=$?
set -e
[ "$rc" = 1 ] || fail "assess --qi sex,age,race exited $rc, not 1 (a breach)"
head -n 1 "$work/breach.txt" | grep -qx "Re-identification risk: BREACHED" ||
  fail "assess --qi sex,age,race did not report a breach"
echo "smoke: reident assess passed on sex,race (exit 0), breached on sex,age,race (exit 1)" >&2

# -- 4. the Great Expectations expectations ----------------------------------------------------
step "import reident_airflow.gx"
"$bin/python" - <<'EOF'
import great_expectations as gx
from great_expectations.expectations.registry import get_expectation_impl

import reident_airflow.gx as reident_gx  # registers the expectations

loaded = [get_expectation_impl(name).__name__ for name in reident_gx.EXPECTATION_TYPES]
print(f"smoke: great_expectations {gx.__version__}: {len(loaded)} reident expectations load")
EOF

# -- 5. Airflow: the provider and the release_gate DAG -----------------------------------------
step "airflow providers list; airflow dags test release_gate"
export AIRFLOW_HOME="$work/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$AIRFLOW_HOME/dags"
export AIRFLOW_CONN_REIDENT_STAGING="{\"conn_type\": \"sqlite\", \"host\": \"$work/staging.db\"}"
mkdir -p "$AIRFLOW__CORE__DAGS_FOLDER"
cp "$root/dags/release_gate.py" "$AIRFLOW__CORE__DAGS_FOLDER/"
"$bin/airflow" db migrate >"$work/db.log" 2>&1 || { tail -n 30 "$work/db.log" >&2; fail "airflow db migrate"; }
"$bin/airflow" providers list >"$work/providers.txt" 2>&1
grep -q "^reident-airflow " "$work/providers.txt" || { cat "$work/providers.txt" >&2; fail "provider not listed"; }
grep "^reident-airflow " "$work/providers.txt" >&2

run_gate() { # $1: expected state, $2: expected exit code, then the arguments of `dags test`
  local want_state=$1 want_rc=$2 log="$work/gate-$1.log" rc state
  shift 2
  set +e
  "$bin/airflow" dags test release_gate "$@" >"$log" 2>&1
  rc=$?
  set -e
  state=$(grep -o "state=[a-z_]*, run_type" "$log" | tail -n 1 | cut -d= -f2 | cut -d, -f1)
  if [ "$state" != "$want_state" ] || [ "$rc" != "$want_rc" ]; then
    tail -n 40 "$log" >&2
    fail "release_gate $*: state ${state:-unknown}, exit $rc (expected $want_state, exit $want_rc)"
  fi
  echo "smoke: release_gate $*: $state (exit $rc)" >&2
}
run_gate success 0
run_gate failed 1 -c '{"generalize_age": false}'
grep -q "ReidentificationBreach: " "$work/gate-failed.log" || fail "the failed run names no breach"

if [ -n "${SMOKE_DIST_DIR:-}" ]; then
  mkdir -p "$SMOKE_DIST_DIR"
  cp "$work"/dist/reident_airflow-* "$SMOKE_DIST_DIR/"
fi
echo "smoke: OK in $((SECONDS - start)) s" >&2
