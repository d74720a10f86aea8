#!/usr/bin/env bash
# The Python package's tests (called by .ci/run after the cargo tests): a fresh venv, the
# package built from python/ by pip (maturin from PyPI, the release profile), the test
# dependencies from PyPI (and ray, for fleetsim.ray), pytest, the planner notebook script;
# the venv is removed after.
set -euo pipefail
cd "$(dirname "$0")/.."
export FLEETSIM_TRACE_DIR="${FLEETSIM_TRACE_DIR:-$(cd .. && pwd)/shared/traces}"
PY="${PYTHON:-python3}"
"$PY" -c 'import sys; assert sys.version_info >= (3, 11), sys.version' \
  || { echo "the Python package needs CPython >= 3.11 ($PY)" >&2; exit 1; }
venv="$(mktemp -d "${TMPDIR:-/tmp}/fleetsim-venv.XXXXXX")"
trap 'rm -rf "$venv"' EXIT
"$PY" -m venv "$venv"
"$venv/bin/pip" install --quiet --upgrade pip
# The build goes to the workspace's target folder (no second folder on a tight disk; the
# package's feature set differs from the workspace's, so most crates are compiled again).
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$PWD/target}"
start=$(date +%s)
# The README's install command.
"$venv/bin/pip" install --quiet ./python
echo "python package built and installed in $(( $(date +%s) - start )) s"
"$venv/bin/pip" install --quiet pytest pyarrow polars pandas matplotlib
# Ray for tests/test_ray.py (fleetsim.ray); the variable makes its skip-when-missing a failure.
start=$(date +%s)
"$venv/bin/pip" install --quiet ray
echo "ray installed in $(( $(date +%s) - start )) s"
export FLEETSIM_REQUIRE_RAY=1
# tests/test_fleetsim.py compares the tables with the files of the CLI's release binary
# ($CARGO_TARGET_DIR/release/fleetsim, built by .ci/run before).
# From the repository root: `python -m pytest` puts the working folder on sys.path (and Ray
# workers inherit the driver's), and from python/ the source folder `fleetsim/`, which has
# no built module, would shadow the installed package.
"$venv/bin/python" -m pytest python/tests -q -s -p no:cacheprovider
start=$(date +%s)
"$venv/bin/python" examples/planner_notebook.py --out out/planner-notebook
echo "planner notebook ran in $(( $(date +%s) - start )) s"
