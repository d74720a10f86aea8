#!/usr/bin/env bash
# The book: `mdbook build docs` (mdBook installed with `cargo install --locked` when missing;
# that time counts in CI's), then every internal link of the built HTML checked: the page it
# names exists and so does its #anchor. Links to other sites are not followed (CI has no
# network).
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v mdbook >/dev/null 2>&1; then
  start=$(date +%s)
  cargo install --locked mdbook --version "^0.5" --quiet
  echo "mdbook installed in $(( $(date +%s) - start )) s"
fi
mdbook --version
[ -f docs/book.toml ] || { echo "no docs/book.toml" >&2; exit 1; }
rm -rf docs/book
mdbook build docs
python3 .ci/linkcheck.py docs/book
