#!/usr/bin/env bash
# Create bench/.venv with the peer tools of bench/requirements.txt (DuckDB, polars, pandas, ...).
# Our own code is benchmarked in the project venv (.venv at the repo root), never in this one.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
if [[ ! -x "$here/.venv/bin/python" ]]; then
    "$python" -m venv "$here/.venv"
fi
"$here/.venv/bin/python" -m pip install --quiet --upgrade pip
"$here/.venv/bin/python" -m pip install --quiet -r "$here/requirements.txt"
"$here/.venv/bin/python" -c "import duckdb, pandas, polars; print('bench/.venv ready: duckdb', duckdb.__version__, '/ polars', polars.__version__, '/ pandas', pandas.__version__)"
