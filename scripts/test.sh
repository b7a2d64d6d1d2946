#!/usr/bin/env bash
# Set everything up, then run the full test suite with the linters (what CI runs).
#
# The tests marked `spark` (a JVM each: sessions, a Connect and a Thrift server) run in a
# second pytest process beside the others; their output follows the others'. Arguments go to
# both processes. REIDENT_TESTS_SERIAL=1 runs one process instead.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
echo "== ruff" && .venv/bin/ruff check . && .venv/bin/ruff format --check --quiet reident_airflow tests dags bench
echo "== mypy" && .venv/bin/mypy
if [ "${REIDENT_TESTS_SERIAL:-}" = "1" ]; then
    echo "== pytest"
    # pytest's exit 5 (no test collected) is non-zero and therefore fails this script too
    exec .venv/bin/pytest "$@"
fi

spark_log=$(mktemp)
trap 'rm -f "$spark_log"' EXIT
echo "== pytest: the Spark tests run in a second process; their output follows"
# at a lower priority: the JVMs take the CPU the other tests leave, not the CPU they need
nice -n 10 .venv/bin/pytest -m spark "$@" >"$spark_log" 2>&1 &
spark_pid=$!
set +e
.venv/bin/pytest -m "not spark" "$@"
main=$?
wait "$spark_pid"
spark=$?
set -e
echo "== pytest -m spark"
cat "$spark_log"
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
echo "pytest: other tests exit $main, Spark tests exit $spark"
