#!/usr/bin/env bash
# A real Slurm job array on this machine: installs Debian's slurm-wlm and munge when missing,
# writes a one-node slurm.conf (this host on 127.0.0.1, its CPUs, ports 16817/16818, every file
# under a temporary directory), starts munged, slurmctld and slurmd, submits the documented
# docs/cluster/sweep.sbatch with `sbatch --array=0-14:2` (8 tasks: 0-based and stepped, so
# `--shard slurm` must number them 1..8 from SLURM_ARRAY_TASK_*), waits, merges the shards with
# `fleetsim merge` and compares runs.csv with the unsharded sweep byte for byte. Every daemon it
# started is stopped on exit, whatever happens. It fails (exit 1) when Slurm cannot be installed
# or started: it never skips.
#
#   bash .ci/slurm.sh [FLEETSIM_BINARY]     (default target/release/fleetsim; run from the repo)
set -euo pipefail
cd "$(dirname "$0")/.."
repo=$PWD
bin=$(realpath "${1:-target/release/fleetsim}")
scenario=scenarios/sweep-example.toml
array=0-14:2
tasks=8
timeout_s=${FLEETSIM_SLURM_TIMEOUT_S:-900}
start=$(date +%s)

fail() {
  echo "slurm: FAILED: $*" >&2
  exit 1
}
[ -x "$bin" ] || fail "no fleetsim binary at $bin (cargo build --release first)"

if ! command -v slurmctld >/dev/null 2>&1 || ! command -v slurmd >/dev/null 2>&1 \
  || ! command -v munged >/dev/null 2>&1 || ! command -v sbatch >/dev/null 2>&1; then
  command -v apt-get >/dev/null 2>&1 || fail "slurm-wlm/munge missing and no apt-get to install them"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  echo "slurm: installing slurm-wlm and munge"
  $SUDO apt-get update -qq || fail "apt-get update"
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq slurm-wlm munge >/dev/null \
    || fail "apt-get install slurm-wlm munge"
fi
[ "$(id -u)" -eq 0 ] || fail "the one-node Slurm runs its daemons as root (SlurmUser=root)"

work=$(mktemp -d /tmp/fleetsim-slurm.XXXXXX)
chmod 700 "$work"
pids=()
cleanup() {
  local rc=$?
  for p in "${pids[@]}"; do
    kill "$p" 2>/dev/null || true
  done
  for p in "${pids[@]}"; do
    for _ in $(seq 50); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -9 "$p" 2>/dev/null || true
  done
  if [ "$rc" -ne 0 ]; then
    for f in "$work"/log/*; do
      [ -f "$f" ] && { echo "---- $f (last 30 lines)" >&2; tail -n 30 "$f" >&2; }
    done
  fi
  rm -rf "$work"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

mkdir -p "$work"/{etc,log,state,spool,munge,out}
# munge: its own key, socket and files, so it never meets a system munged.
head -c 1024 /dev/urandom >"$work/munge/munge.key"
chmod 400 "$work/munge/munge.key"
sock=$work/munge/munge.socket
munged --foreground --force --socket="$sock" --key-file="$work/munge/munge.key" \
  --log-file="$work/log/munged.log" --pid-file="$work/munge/munged.pid" \
  --seed-file="$work/munge/munged.seed" >>"$work/log/munged.out" 2>&1 &
pids+=($!)
for _ in $(seq 100); do [ -S "$sock" ] && break; sleep 0.1; done
munge -n --socket="$sock" | unmunge --socket="$sock" >/dev/null || fail "munged does not answer"

host=$(hostname -s)
cpus=$(nproc)
conf=$work/etc/slurm.conf
cat >"$conf" <<EOF
ClusterName=fleetsim-ci
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=16817
SlurmdPort=16818
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$sock
CredType=cred/munge
StateSaveLocation=$work/state
SlurmdSpoolDir=$work/spool
SlurmctldPidFile=$work/state/slurmctld.pid
SlurmdPidFile=$work/spool/slurmd.pid
SlurmctldLogFile=$work/log/slurmctld.log
SlurmdLogFile=$work/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MinJobAge=600
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=2048 State=UNKNOWN
PartitionName=ci Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$conf
slurmctld -D -f "$conf" >>"$work/log/slurmctld.out" 2>&1 &
pids+=($!)
slurmd -D -f "$conf" -N "$host" >>"$work/log/slurmd.out" 2>&1 &
pids+=($!)
ready=""
for _ in $(seq 120); do
  state=$(sinfo -h -N -o '%T' 2>/dev/null | head -n 1 || true)
  case "$state" in idle*) ready=1; break ;; esac
  sleep 0.5
done
[ -n "$ready" ] || fail "node $host not idle after 60 s (state: ${state:-none})"
echo "slurm: $(sinfo -V), node $host idle with $cpus CPUs after $(($(date +%s) - start)) s"

# The documented script, as a user submits it; the command line overrides its #SBATCH sizes
# (8 CPUs, 16G) to fit this machine.
out=$work/out/sweep
jid=$(sbatch --parsable --array="$array" --cpus-per-task=1 --mem=256M --time=00:30:00 \
  --chdir="$repo" --output="$work/log/task-%A_%a.log" \
  --export=ALL,SCENARIO="$scenario",OUT="$out",FLEETSIM="$bin" docs/cluster/sweep.sbatch) \
  || fail "sbatch"
jid=${jid%%;*}
echo "slurm: submitted job array $jid (--array=$array)"
while [ -n "$(squeue -h -j "$jid" -o '%i' 2>/dev/null)" ]; do
  [ $(($(date +%s) - start)) -lt "$timeout_s" ] || fail "job $jid still queued after ${timeout_s} s"
  sleep 1
done
states=$(scontrol -o show job "$jid" | grep -o 'JobState=[A-Z_]*' | sort | uniq -c | tr -s ' ')
echo "slurm: tasks finished:$states"
n_ok=$(scontrol -o show job "$jid" | grep -c 'JobState=COMPLETED .*ExitCode=0:0' || true)
[ "$n_ok" -eq "$tasks" ] || fail "$n_ok of $tasks array tasks COMPLETED with exit 0:$states"
shards=("$out"-shard-*)
[ "${#shards[@]}" -eq "$tasks" ] || fail "${#shards[@]} shard directories, expected $tasks"
for log in "$work"/log/task-*.log; do
  grep -q "shard [1-8]/8:" "$log" || fail "$log: not a shard of 8: $(tail -n 3 "$log")"
done
echo "slurm: shard sizes: $(cat "$work"/log/task-*.log | grep -o 'shard [0-9]*/8: [0-9]* of' | sort | tr '\n' ' ')"

# An uneven list array has no shard numbering: every task must refuse it (exit 2), not guess.
lid=$(sbatch --parsable --array=1,2,4 --cpus-per-task=1 --mem=64M --chdir="$repo" \
  --output="$work/log/list-%A_%a.log" \
  --wrap "env | grep ^SLURM_ARRAY_TASK_ | sort | tr '\\n' ' '; echo; $bin sweep $scenario --shard slurm --out $work/out/list-%a")
lid=${lid%%;*}
while [ -n "$(squeue -h -j "$lid" -o '%i' 2>/dev/null)" ]; do
  [ $(($(date +%s) - start)) -lt "$timeout_s" ] || fail "job $lid still queued after ${timeout_s} s"
  sleep 1
done
n_refused=$(scontrol -o show job "$lid" | grep -c 'ExitCode=2:0' || true)
[ "$n_refused" -eq 3 ] || fail "--array=1,2,4: $n_refused of 3 tasks exited 2: $(cat "$work"/log/list-*.log)"
echo "slurm: --array=1,2,4 refused by all 3 tasks; task 2 saw: $(head -n 1 "$work"/log/list-*_2.log)"
grep -h "bad shard" "$work"/log/list-*_2.log | head -n 1

"$bin" merge "${shards[@]}" --out "$work/out/merged"
"$bin" sweep "$scenario" --out "$work/out/serial"
for f in runs.csv report.html; do
  cmp "$work/out/serial/$f" "$work/out/merged/$f" || fail "$f of the Slurm array differs from the serial sweep"
done
echo "slurm: merged job array $jid equals the serial sweep byte for byte ($(($(date +%s) - start)) s in all)"
