# %% [markdown]
# # Does letting small jobs pass a blocked queue head shorten the waits on a smaller fleet?
#
# A capacity planner's question, answered end to end with the `fleetsim` Python package
# (`pip install ./python`): Microsoft's Philly cluster (public trace `philly/`, ATC'19) is
# to run on a quarter of its machines. Under strict FIFO a large gang at the head of the
# queue blocks everyone behind it; best-effort FIFO lets the jobs that fit start. How much
# does that change the mean wait, and is the difference larger than the seed-to-seed noise?
# Each seed draws a different 90 % sample of two weeks of jobs (Oct 1-15, 2017); both
# policies run on the same draws (common random numbers), so the comparison is paired:
# per-seed differences, their mean and a 95 % Student-t confidence interval.
#
# Run as a script (CI does: `.ci/python.sh`) or cell by cell in an editor that reads `# %%`
# cells. Needs the public traces: `FLEETSIM_TRACE_DIR` (or `--trace-dir`) naming the folder
# that holds `philly/`.

# %%
import argparse
import math
import os
import statistics
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402
import polars as pl  # noqa: E402

import fleetsim  # noqa: E402

parser = argparse.ArgumentParser(description=__doc__)
parser.add_argument("--out", default="out/planner-notebook", help="folder for the plot and the table")
parser.add_argument("--trace-dir", default=os.environ.get("FLEETSIM_TRACE_DIR"))
parser.add_argument("--seeds", type=int, default=5)
parser.add_argument("--fleet-scale", type=float, default=0.25)
args, _ = parser.parse_known_args()
out = Path(args.out)
out.mkdir(parents=True, exist_ok=True)

# %% [markdown]
# ## The scenario
# Philly's official machine list and job trace, one queue, best-fit placement;
# `[transforms]` keeps `fleet_scale` of every (cell, model) group of machines, the jobs
# submitted in the first half of October 2017, and a seeded 90 % sample of them.

# %%
SCENARIO = f"""
name = "philly-planner"
description = "Philly, {args.fleet_scale:.0%} of its machines, Oct 1-15 2017, 90 % job samples"
seed = 1

[[fleet.cells]]
name = "philly"
machine_list = {{ format = "philly", public_path = "philly/cluster_machine_list.csv", philly_models_by_gpu_mem_gb = {{ 12 = "K80", 24 = "P40" }} }}

[workload]
trace = {{ format = "philly", public_path = "philly/philly_jobs_pollux.csv" }}
queues = "single"

[policy]
queue_order = "fifo"
queueing_strategy = "strict-fifo"
placement = "best-fit"
cell_selection = "first-fit"

[transforms]
fleet_scale = {args.fleet_scale}
sample_fraction = 0.9
window = {{ start_s = 2294959, end_s = 3504559 }}   # 2017-10-01 .. 2017-10-15 (t = 0: first submit)

[metrics]
timeseries_interval_s = 21600
"""
POLICIES = {"strict-fifo": "strict-fifo", "best-effort-fifo": "best-effort-fifo"}
BASE, ALT = POLICIES
SEEDS = list(range(1, args.seeds + 1))

# %% [markdown]
# ## The runs
# Two policies × the seeds, four at a time: the engine releases the GIL, so a thread pool
# runs them on every core.

# %%
t0 = time.perf_counter()


def one(policy_seed):
    policy, seed = policy_seed
    r = fleetsim.run(SCENARIO, overrides={"policy.queueing_strategy": POLICIES[policy]}, seed=seed,
                     trace_dir=args.trace_dir)
    return policy, seed, r


with ThreadPoolExecutor(max_workers=4) as pool:
    results = list(pool.map(one, [(p, s) for p in POLICIES for s in SEEDS]))
print(f"{len(results)} runs in {time.perf_counter() - t0:.1f} s")

rows = [
    {
        "policy": p,
        "seed": s,
        "jobs": r.summary["jobs"]["submitted"],
        "mean_wait_s": r.summary["wait_s"]["mean"],
        "p99_wait_s": r.summary["wait_s"]["p99"],
        "occupancy": r.summary["occupancy"],
    }
    for p, s, r in results
]
table = pl.DataFrame(rows).sort(["policy", "seed"])
print(table)
table.write_csv(out / "runs.csv")

# %% [markdown]
# ## Paired comparison
# d_i = wait(best-effort, seed i) − wait(strict, seed i); 95 % CI = mean(d) ± t(0.975, n−1)·sd(d)/√n.

# %%
# Student t quantiles t(0.975, df) for df = 1..30 (tables), normal beyond.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145, 2.131,
        2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042]


def paired(metric: str) -> dict:
    by = {(r["policy"], r["seed"]): r[metric] for r in rows}
    d = [by[(ALT, s)] - by[(BASE, s)] for s in SEEDS]
    n = len(d)
    mean = statistics.fmean(d)
    sd = statistics.stdev(d) if n > 1 else 0.0
    t = T975[n - 2] if 2 <= n <= 31 else 1.960
    half = t * sd / math.sqrt(n) if n > 1 else math.nan
    return {"metric": metric, "diffs": d, "mean": mean, "lo": mean - half, "hi": mean + half}


waits = paired("mean_wait_s")
occ = paired("occupancy")
for c in (waits, occ):
    print(f"{c['metric']}: {ALT} − {BASE} per seed {[round(x, 4) for x in c['diffs']]}, "
          f"mean {c['mean']:.4g}, 95 % CI [{c['lo']:.4g}, {c['hi']:.4g}]")

# The package's own comparison (fleetsim.compare, the CLI's `compare`) agrees.
variants = [f"{label}=queueing_strategy={q}" for label, q in POLICIES.items()]
cmp = fleetsim.compare(SCENARIO, variants, seeds=len(SEEDS), trace_dir=args.trace_dir)
alt = next(p for p in cmp["policies"] if p["label"] == ALT)["metrics"]["wait_s.mean"]["diff"]
assert math.isclose(alt["mean_diff"], waits["mean"], rel_tol=1e-9), (alt, waits)
assert math.isclose(alt["ci_low"], waits["lo"], rel_tol=1e-3) and math.isclose(alt["ci_high"], waits["hi"], rel_tol=1e-3)
print(f"fleetsim.compare agrees: mean difference {alt['mean_diff']:.1f} s, CI [{alt['ci_low']:.1f}, {alt['ci_high']:.1f}] s")

# %% [markdown]
# ## Answer and plot

# %%
if waits["hi"] < 0:
    verdict = f"{ALT} cuts the mean wait by {-waits['mean']:.0f} s (95 % CI {-waits['hi']:.0f} to {-waits['lo']:.0f} s)"
elif waits["lo"] > 0:
    verdict = f"{ALT} lengthens the mean wait by {waits['mean']:.0f} s (95 % CI {waits['lo']:.0f} to {waits['hi']:.0f} s)"
else:
    verdict = f"no difference the seeds can resolve (mean {waits['mean']:+.0f} s, CI [{waits['lo']:.0f}, {waits['hi']:.0f}] s)"
print(f"On {args.fleet_scale:.0%} of Philly's machines: {verdict}.")

fig, (a, b) = plt.subplots(1, 2, figsize=(10, 4))
for p, marker in zip(POLICIES, "os"):  # noqa: B905
    sub = table.filter(pl.col("policy") == p)
    a.plot(sub["seed"], sub["mean_wait_s"] / 60, marker=marker, label=p)
a.set_xlabel("seed (job sample)")
a.set_ylabel("mean wait (min)")
a.set_title("mean wait per seed")
a.legend()
b.bar(SEEDS, [x / 60 for x in waits["diffs"]], color="tab:gray")
b.axhline(waits["mean"] / 60, color="tab:red", label="mean difference")
b.axhspan(waits["lo"] / 60, waits["hi"] / 60, color="tab:red", alpha=0.15, label="95 % CI")
b.set_xlabel("seed")
b.set_ylabel(f"{ALT} − {BASE} (min)")
b.set_title("paired difference")
b.legend()
fig.suptitle(f"Philly on {args.fleet_scale:.0%} of its machines: {verdict}", fontsize=9)
fig.tight_layout()
fig.savefig(out / "wait_difference.png", dpi=100)
print(f"wrote {out / 'wait_difference.png'} and {out / 'runs.csv'}")
