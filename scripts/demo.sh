#!/usr/bin/env bash
# Set everything up, then run the main job on its embedded default: assess the bundled sample
# (UCI Adult as shipped with ARX) against a release gate, and print the report.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
exec .venv/bin/reident assess reident_airflow/data/adult.csv --sep ';' \
  --qi sex,age,race --region usa \
  --max-average-risk 0.05 --max-records-at-risk 0.05 "$@"
