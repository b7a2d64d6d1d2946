#!/usr/bin/env bash
# Set everything up, then run the full test suite with the linters (what CI runs).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/services.sh
echo "== ruff" && .venv/bin/ruff check . && .venv/bin/ruff format --check --quiet reident_airflow tests dags bench
echo "== mypy" && .venv/bin/mypy
echo "== pytest"
# pytest's exit 5 (no test collected) is non-zero and therefore fails this script too
exec .venv/bin/pytest "$@"
