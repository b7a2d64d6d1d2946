#!/usr/bin/env bash
# Build the documentation site (MkDocs, mkdocs.yml) with warnings as errors: a broken link, a
# missing anchor, a page left out of the nav or a docstring griffe cannot parse fails the build.
# Usage: bash scripts/docs.sh [SITE_DIR]   (default build/site, ignored by git)
set -euo pipefail
cd "$(dirname "$0")/.."
site_dir="${1:-build/site}"
exec .venv/bin/mkdocs build --strict --clean --site-dir "$site_dir"
