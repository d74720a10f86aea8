#!/usr/bin/env bash
# cargo deny check: licenses, bans (duplicates), sources, and advisories from the snapshot
# committed in .ci/advisory-db (CI cannot fetch the RustSec database). Installs cargo-deny
# with `cargo install --locked` when missing (that time counts in CI's).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v cargo-deny >/dev/null 2>&1; then
  start=$(date +%s)
  cargo install --locked cargo-deny --quiet
  echo "cargo-deny installed in $(( $(date +%s) - start )) s"
fi
cargo deny --version
# cargo-deny reads its copy of the database at db-path/<name derived from the URL>, a git
# repository: make one from the snapshot, committed at the snapshot's date (the database
# commit it comes from is in .ci/advisory-db/SNAPSHOT).
db=target/advisory-dbs/advisory-db-3157b0e258782691
rm -rf target/advisory-dbs
mkdir -p "$db"
cp -r .ci/advisory-db/. "$db/"
when=$(sed -n 's/^RustSec advisory-db [0-9a-f]* (\([0-9-]*\)).*/\1/p' .ci/advisory-db/SNAPSHOT)
git -C "$db" init -q
git -C "$db" add -A
GIT_AUTHOR_DATE="${when}T00:00:00Z" GIT_COMMITTER_DATE="${when}T00:00:00Z" \
  git -C "$db" -c user.name=ci -c user.email=ci@localhost commit -q -m "snapshot of $when"
echo "advisories: $(head -1 .ci/advisory-db/SNAPSHOT)"
# --offline: the database is the snapshot; cargo metadata reads every platform's crates, so
# fetch them first (crates.io).
cargo fetch --locked --quiet
cargo deny --offline check
