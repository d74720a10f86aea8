#!/usr/bin/env bash
# evalys (Batsim's analysis library, from PyPI) loads fleetsim's batsim_jobs.csv unmodified,
# and its utilisation over the measurement window equals summary.json's allocated occupancy.
# Usage: .ci/evalys.sh path/to/fleetsim   (run from the repository root, traces in
# FLEETSIM_TRACE_DIR). Runs: the default scenario (two cells, global GPU numbering across
# them) and philly-quota (preemptive: one row per run), each with outputs = ["csv", "batsim"].
set -euo pipefail
bin="$1"
work="out/ci/evalys"
rm -rf "$work"
mkdir -p "$work"
venv="$work/venv"
if ! python3 -m venv "$venv" 2>/dev/null; then
  # Debian ships venv separately.
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq && $SUDO apt-get install -y -qq python3-venv >/dev/null
  rm -rf "$venv"
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install --quiet --disable-pip-version-check "evalys==4.0.7"
root="$(pwd)"
for s in default philly-quota; do
  printf 'extends = "%s/scenarios/%s.toml"\n[metrics]\noutputs = ["csv", "batsim"]\n' \
    "$root" "$s" > "$work/$s.toml"
  "$bin" run "$work/$s.toml" --quiet --out "$work/$s"
  "$venv/bin/python" .ci/evalys_check.py "$work/$s"
done
rm -rf "$venv"
echo "evalys: batsim_jobs.csv loads unmodified and its utilisation equals allocated occupancy"
