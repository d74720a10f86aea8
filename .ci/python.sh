#!/usr/bin/env bash
# The Python package (called by .ci/run after the cargo stages): ONE wheel built with
# `maturin build --release` (the command the book gives users), installed from the wheel with
# the notebook extra into a fresh venv (no compiler involved), then pytest (with every Python
# snippet of the docs, run as written) and the planner notebook script. The venvs are removed
# after.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
export FLEETSIM_TRACE_DIR="${FLEETSIM_TRACE_DIR:-$(cd .. && pwd)/shared/traces}"
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
  || { echo "the Python package needs CPython >= 3.11 ($PY)" >&2; exit 1; }
if ! "$PY" -m venv --help >/dev/null 2>&1; then
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv >/dev/null
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-python.XXXXXX")"
trap 'rm -rf "$work"' EXIT

# 1. The wheel: maturin from PyPI in a build venv, the release profile of python/Cargo.toml.
# The build goes to the workspace's target folder (one folder on a tight disk).
start=$(date +%s)
"$PY" -m venv "$work/build"
"$work/build/bin/pip" install --quiet --disable-pip-version-check "maturin>=1.9,<2"
CARGO_TARGET_DIR="$root/target" "$work/build/bin/maturin" build --release \
  --manifest-path python/Cargo.toml --out "$work/dist" --quiet
wheel=$(ls "$work"/dist/fleetsim-*.whl)
echo "wheel built in $(( $(date +%s) - start )) s: $(basename "$wheel")"

# 2. A user's install: the wheel with the notebook extra (polars, pandas, matplotlib) and
# the test extra; nothing is compiled (--only-binary refuses any source build).
start=$(date +%s)
"$PY" -m venv "$work/venv"
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --upgrade pip
"$work/venv/bin/pip" install --quiet --disable-pip-version-check --only-binary :all: \
  "$wheel[notebook,test]"
echo "wheel installed with [notebook,test] in $(( $(date +%s) - start )) s"
# Ray for tests/test_ray.py (fleetsim.ray); the variable makes its skip-when-missing a failure.
start=$(date +%s)
"$work/venv/bin/pip" install --quiet --disable-pip-version-check "$wheel[ray]"
echo "ray installed in $(( $(date +%s) - start )) s"
export FLEETSIM_REQUIRE_RAY=1

# 3. The tests compare the tables with the files of the CLI binary .ci/run built;
# python/tests/test_docs.py runs every Python snippet of the book and the README as written
# (.ci/doc_snippets.py).
export FLEETSIM_BIN="${FLEETSIM_BIN:-$root/target/ci/fleetsim}"
# From the repository root: `python -m pytest` puts the working folder on sys.path (and Ray
# workers inherit the driver's), and from python/ the source folder `fleetsim/`, which has
# no built module, would shadow the installed package.
"$work/venv/bin/python" -m pytest python/tests -q -s -p no:cacheprovider
start=$(date +%s)
"$work/venv/bin/python" examples/planner_notebook.py --out out/planner-notebook
echo "planner notebook ran in $(( $(date +%s) - start )) s"
