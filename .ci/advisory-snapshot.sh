#!/usr/bin/env bash
# Refreshes .ci/advisory-db, the RustSec advisories `cargo deny check advisories` runs against
# in CI (which cannot fetch the database): the advisories of every crate named in the lock
# files, copied from a checkout of the RustSec advisory database, and the commit they come
# from (.ci/advisory-db/SNAPSHOT).
#
#   bash .ci/advisory-snapshot.sh PATH/TO/advisory-db    (a git checkout or bare clone)
set -euo pipefail
cd "$(dirname "$0")/.."
src="$1"
dest=.ci/advisory-db
locks=""
for l in Cargo.lock python/Cargo.lock fuzz/Cargo.lock; do
  [ -f "$l" ] && locks="$locks $l"
done
crates=$(awk '/^name = /{gsub(/"/, "", $3); print $3}' $locks | sort -u)
rm -rf "$dest"
mkdir -p "$dest/crates"
if git -C "$src" rev-parse HEAD >/dev/null 2>&1; then
  commit=$(git -C "$src" rev-parse HEAD)
  date=$(git -C "$src" log -1 --format=%cs HEAD)
  for c in $crates; do
    if git -C "$src" ls-tree -d HEAD "crates/$c" | grep -q .; then
      mkdir -p "$dest/crates/$c"
      for f in $(git -C "$src" ls-tree --name-only HEAD "crates/$c/"); do
        git -C "$src" show "HEAD:$f" > "$dest/$f"
      done
    fi
  done
else
  echo "$src: not a git checkout of the advisory database" >&2
  exit 1
fi
printf 'RustSec advisory-db %s (%s): the advisories of the crates in Cargo.lock, python/Cargo.lock and fuzz/Cargo.lock.\nLicense: CC0-1.0 (the database'"'"'s).\n' "$commit" "$date" > "$dest/SNAPSHOT"
echo "$(find "$dest/crates" -name '*.md' | wc -l) advisories of $(ls "$dest/crates" | wc -l) crates, from $commit ($date)"
