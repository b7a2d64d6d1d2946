#!/usr/bin/env bash
# Set everything up, then run the main job on its embedded default: the release_gate DAG with
# `airflow dags test`, on a SQLite metadata database and a SQLite staging database seeded from
# the bundled sample (UCI Adult), and print the verdict. Extra arguments go to `airflow dags
# test`, e.g.  bash scripts/demo.sh -c '{"generalize_age": false}'   (a breaching release).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
root="$PWD"
mkdir -p var
export AIRFLOW_HOME="$root/var/airflow"
export AIRFLOW__CORE__LOAD_EXAMPLES=False
export AIRFLOW__CORE__DAGS_FOLDER="$root/dags"
export AIRFLOW_CONN_REIDENT_STAGING="{\"conn_type\": \"sqlite\", \"host\": \"$root/var/staging.db\"}"
echo "demo: preparing Airflow's metadata database in var/airflow (log: var/airflow-db.log)" >&2
.venv/bin/airflow db migrate >var/airflow-db.log 2>&1 || { tail -n 30 var/airflow-db.log >&2; exit 2; }
echo "demo: airflow dags test release_gate $* (log: var/release_gate.log)" >&2
set +e
.venv/bin/airflow dags test release_gate "$@" >var/release_gate.log 2>&1
rc=$?
set -e
# the verdict: the assessment summary the gate task logged, and a breach if there was one
awk '/Re-identification risk: /{show=1; sub(/^.*\] /, "")} show && /^[0-9]{4}-[0-9]{2}-[0-9]{2}T/ && !/Re-identification risk: /{show=0} show' \
  var/release_gate.log | grep -v '^ \[airflow\.'
grep -h "ReidentificationBreach: " var/release_gate.log | sed 's/^.*ReidentificationBreach: /BREACH: /' | head -n 1 || true
state=$(grep -o "state=[a-z_]*, run_type" var/release_gate.log | tail -n 1 | cut -d= -f2 | cut -d, -f1)
echo "release_gate run: ${state:-unknown} (exit $rc)"
exit "$rc"
