#!/usr/bin/env bash
# Set everything up, then run the full test suite with the linters (what CI runs).
#
# The tests marked `spark` (a JVM each: sessions, a Connect and a Thrift server) run in a
# second pytest process beside the others; their output follows the others'. Arguments go to
# both processes. REIDENT_TESTS_SERIAL=1 runs one process instead.
#
# Without arguments (the full suite: what CI runs) the wheel's smoke test runs beside pytest,
# at the lowest priority: scripts/smoke_wheel.sh builds the sdist and the wheel, installs the
# wheel into a fresh virtual environment as docs/install.md says and runs it there; a failing
# smoke test fails this script. REIDENT_SMOKE=1 runs it with arguments too, REIDENT_SMOKE=0
# never.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh

smoke_log=$(mktemp)
spark_log=$(mktemp)
smoke_pid=
# a smoke test still running when this script stops early (ruff, mypy) is stopped with it
cleanup() {
    if [ -n "$smoke_pid" ] && kill -0 "$smoke_pid" 2>/dev/null; then
        kill -- "-$smoke_pid" 2>/dev/null || true
        wait "$smoke_pid" 2>/dev/null || true
    fi
    rm -f "$smoke_log" "$spark_log"
}
trap cleanup EXIT
if [ "${REIDENT_SMOKE:-$([ "$#" -eq 0 ] && echo 1 || echo 0)}" = "1" ]; then
    # nice 19: the build, pip and Airflow take the CPU the tests leave; `build` from .venv;
    # a process group of its own (setsid), so that cleanup stops pip and Airflow too
    SMOKE_BUILD_PYTHON="$PWD/.venv/bin/python" setsid nice -n 19 bash scripts/smoke_wheel.sh \
        >"$smoke_log" 2>&1 &
    smoke_pid=$!
fi
# the smoke test's exit code once it is done, and its output (0 when it did not run)
smoke_result() {
    [ -n "$smoke_pid" ] || return 0
    local code=0
    wait "$smoke_pid" || code=$?
    echo "== smoke test of the wheel (scripts/smoke_wheel.sh)"
    cat "$smoke_log"
    return "$code"
}

# one command per line: under `set -e` a failure inside an `a && b && c` list that is not its
# last command would not stop the script
echo "== ruff"
.venv/bin/ruff check .
.venv/bin/ruff format --check --quiet reident_airflow tests dags bench
echo "== mypy"
.venv/bin/mypy
if [ "${REIDENT_TESTS_SERIAL:-}" = "1" ]; then
    echo "== pytest"
    # pytest's exit 5 (no test collected) is non-zero and therefore fails this script too
    set +e
    .venv/bin/pytest "$@"
    main=$?
    smoke_result
    smoke=$?
    set -e
    [ "$main" -eq 0 ] || exit "$main"
    [ "$smoke" -eq 0 ] || { echo "smoke test of the wheel failed (exit $smoke)" >&2; exit "$smoke"; }
    exit 0
fi

echo "== pytest: the Spark tests run in a second process; their output follows"
# at a lower priority: the JVMs take the CPU the other tests leave, not the CPU they need
nice -n 10 .venv/bin/pytest -m spark "$@" >"$spark_log" 2>&1 &
spark_pid=$!
# The full suite (no arguments) runs the other tests on REIDENT_TEST_WORKERS pytest-xdist
# workers (2 by default; 0 runs them in this process): much of their time is spent waiting
# on servers, subprocesses and Airflow, not on the CPU.
workers=()
if [ "$#" -eq 0 ] && [ "${REIDENT_TEST_WORKERS:-2}" != "0" ]; then
    workers=(-n "${REIDENT_TEST_WORKERS:-2}")
fi
set +e
.venv/bin/pytest -m "not spark" "${workers[@]}" "$@"
main=$?
wait "$spark_pid"
spark=$?
set -e
echo "== pytest -m spark"
cat "$spark_log"
set +e
smoke_result
smoke=$?
set -e
# exit 5 is "no test collected": fine for one half (arguments may select only the other),
# a failure when neither half ran a test
if [ "$main" -eq 5 ] && [ "$spark" -eq 5 ]; then
    echo "pytest: no test collected" >&2
    exit 5
fi
for code in "$main" "$spark"; do
    if [ "$code" -ne 0 ] && [ "$code" -ne 5 ]; then
        echo "pytest failed (other tests: exit $main; Spark tests: exit $spark)" >&2
        exit "$code"
    fi
done
if [ "$smoke" -ne 0 ]; then
    echo "smoke test of the wheel failed (exit $smoke)" >&2
    exit "$smoke"
fi
echo "pytest: other tests exit $main, Spark tests exit $spark"
