#!/usr/bin/env bash
# Create (or refresh) the project's virtual environment in .venv/ with every pinned dependency.
# Idempotent: re-running only installs what changed in constraints.txt or pyproject.toml.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
stamp=.venv/.reident-setup-stamp
want="$(cat constraints.txt pyproject.toml | sha256sum | cut -d' ' -f1)"
if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x .venv/bin/reident ]; then
  exit 0
fi
if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv with $($PYTHON --version)" >&2
  "$PYTHON" -m venv .venv
fi
# pip's notes about index locations configured on this machine are noise, not errors
quiet_pip() { .venv/bin/python -m pip "$@" 2> >(grep -v "is ignored: it is neither a file nor a directory" >&2); }
quiet_pip install --quiet --disable-pip-version-check --upgrade "pip>=24" >&2
echo "setup: installing reident-airflow and its pinned dependencies (constraints.txt)" >&2
quiet_pip install --quiet --disable-pip-version-check \
  -c constraints.txt -e ".[airflow,gx,db,report,spark,lineage,http,slack,docs,dev]" >&2
echo "$want" > "$stamp"
