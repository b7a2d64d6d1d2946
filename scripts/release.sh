#!/usr/bin/env bash
# Prepare a release from a tag: check it, write its notes, build and smoke-test the wheel.
# Publishes nothing unless --publish is given.
#
# Usage: bash scripts/release.sh vX.Y.Z [--check | --publish]
#   (no flag)   check, then build the sdist and the wheel into dist/ and run
#               scripts/smoke_wheel.sh on them; dist/RELEASE_NOTES.md holds the notes
#   --check     only the checks and the notes (no build)
#   --publish   as without a flag, then upload dist/* with twine to TWINE_REPOSITORY_URL
#               (TWINE_USERNAME / TWINE_PASSWORD as twine reads them)
# Checks (exit 2 when one fails): the tag is vX.Y.Z and exists, HEAD is the tagged commit and
# the work tree is clean, pyproject.toml's version is X.Y.Z, CHANGELOG.md has a non-empty
# `## [X.Y.Z]` section; with --publish, pyproject.toml declares a Documentation URL (Airflow
# shows it as the provider's documentation).
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
die() { echo "release: $*" >&2; exit 2; }

tag="${1:-}"
mode="${2:-build}"
[[ "$tag" =~ ^v([0-9]+\.[0-9]+\.[0-9]+)$ ]] || die "usage: release.sh vX.Y.Z [--check | --publish]"
version="${BASH_REMATCH[1]}"
case "$mode" in build | --check | --publish) ;; *) die "unknown option: $mode" ;; esac

git rev-parse -q --verify "refs/tags/$tag" >/dev/null || die "no tag $tag (git tag -a $tag)"
[ "$(git rev-parse "$tag^{commit}")" = "$(git rev-parse HEAD)" ] ||
  die "HEAD is not $tag: check out the tag (git checkout $tag)"
[ -z "$(git status --porcelain)" ] || die "the work tree has uncommitted changes"

declared="$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"]["version"])')"
[ "$declared" = "$version" ] || die "pyproject.toml's version is $declared, the tag says $version"

# the notes: the CHANGELOG's `## [X.Y.Z]` section, up to the next `## ` heading, without the
# blank lines around it
mkdir -p dist
notes=dist/RELEASE_NOTES.md
awk -v head="## [$version]" '
  index($0, head) == 1 { inside = 1; next }
  inside && /^## / { exit }
  inside { print }
' CHANGELOG.md | awk 'NF { if (!seen) first = NR; seen = 1; last = NR } { line[NR] = $0 }
  END { for (i = first; seen && i <= last; i++) print line[i] }' >"$notes"
grep -q '[^[:space:]]' "$notes" || die "CHANGELOG.md has no '## [$version]' section, or it is empty"
echo "release: $tag: notes in $notes ($(wc -l <"$notes") lines)" >&2

if [ "$mode" = --publish ]; then
  docs_url="$("$PYTHON" -c 'import tomllib; print(tomllib.load(open("pyproject.toml", "rb"))["project"].get("urls", {}).get("Documentation", ""))')"
  [ -n "$docs_url" ] || die "pyproject.toml declares no [project.urls] Documentation"
  [ -n "${TWINE_REPOSITORY_URL:-}" ] || die "--publish needs TWINE_REPOSITORY_URL"
fi
[ "$mode" = --check ] && exit 0

# build and smoke-test: the same wheel and sdist go to dist/
rm -f dist/reident_airflow-*
SMOKE_DIST_DIR="$PWD/dist" PYTHON="$PYTHON" bash scripts/smoke_wheel.sh
ls dist/reident_airflow-"$version"-py3-none-any.whl dist/reident_airflow-"$version".tar.gz >/dev/null ||
  die "dist/ does not hold the $version wheel and sdist"

if [ "$mode" = --publish ]; then
  tools="$(mktemp -d -t reident-twine.XXXXXX)"
  trap 'rm -rf "$tools"' EXIT
  "$PYTHON" -m venv "$tools"
  "$tools/bin/pip" install --quiet twine
  "$tools/bin/twine" upload --repository-url "$TWINE_REPOSITORY_URL" \
    dist/reident_airflow-"$version"-py3-none-any.whl dist/reident_airflow-"$version".tar.gz
  echo "release: $tag uploaded to $TWINE_REPOSITORY_URL" >&2
else
  echo "release: $tag built and smoke-tested in dist/; nothing published (--publish uploads)" >&2
fi
