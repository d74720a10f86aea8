"""Loads a fleetsim run's batsim_jobs.csv with the real evalys, unmodified, and checks that
evalys's utilisation over the run's measurement window equals summary.json's allocated
occupancy (every GPU held, lost work included: what a Batsim row's allocation counts).

Usage: python evalys_check.py RUN_DIR

Window arithmetic. summary.json's window is [start_s, end_s] (seconds from t = 0); fleetsim's
allocated occupancy = allocated_gpu_s / available_gpu_s with available_gpu_s = G * (end_s - start_s)
for a fleet of G GPUs and no node down. evalys's utilisation is a step function of the number
of GPUs held (each row counts its allocated_resources from starting_time to finish_time);
JobSet.utilisation holds it as (time, load) steps: load GPUs from each time to the next. Its
integral over the window is the sum over steps of load * |[t_i, t_{i+1}] ∩ [start_s, end_s]|
(evalys's own mean_utilisation(begin, end) does this but inserts the window bounds with
float(Series), which current pandas refuses; it is used as a cross-check over
[first event, last event], which needs no insertion). Then
utilisation = integral / (G * (end_s - start_s)), G from resource_bounds=(0, G - 1).
Times are written with millisecond precision and evalys rounds to 6 decimals, so the two
agree to float rounding: we require |difference| < 1e-9 relative on the GPU-seconds.
"""
import json
import os
import sys

from evalys.jobset import JobSet

run = sys.argv[1]
summary = json.load(open(os.path.join(run, "summary.json")))
gpus = summary["fleet"]["gpus"]
w = summary["window"]
assert summary["held_on_failed_nodes_gpu_s"] == 0.0, "the check needs a run without failed-node graces"

# Loaded unmodified: the default (bounds from the ids seen) and with the fleet's bounds.
js_default = JobSet.from_csv(os.path.join(run, "batsim_jobs.csv"))
assert js_default.MaxProcs <= gpus, (js_default.MaxProcs, gpus)
js = JobSet.from_csv(os.path.join(run, "batsim_jobs.csv"), resource_bounds=(0, gpus - 1))
assert js.MaxProcs == gpus, (js.MaxProcs, gpus)

util = js.utilisation.reset_index()
times, loads = util.time.tolist(), util.load.tolist()
integral = 0.0
total = 0.0
for i in range(len(times) - 1):
    lo, hi = max(times[i], w["start_s"]), min(times[i + 1], w["end_s"])
    total += loads[i] * (times[i + 1] - times[i])
    if hi > lo:
        integral += loads[i] * (hi - lo)
# Cross-check with evalys's own mean over all its events.
whole = js.mean_utilisation() * (times[-1] - times[0])
assert abs(whole - total) <= 1e-9 * max(total, 1.0), (whole, total)
evalys_occupancy = integral / (gpus * (w["end_s"] - w["start_s"]))
print(f"rows {len(js.df)}, GPUs {gpus}, window [{w['start_s']}, {w['end_s']}] s")
print(f"evalys allocated GPU-s {integral:.3f}, fleetsim {summary['allocated_gpu_s']:.3f}")
print(f"evalys utilisation {evalys_occupancy:.9f}, fleetsim allocated occupancy {summary['allocated_occupancy']:.9f}")
assert abs(integral - summary["allocated_gpu_s"]) <= 1e-9 * summary["allocated_gpu_s"] + 1e-6, \
    (integral, summary["allocated_gpu_s"])
assert abs(evalys_occupancy - summary["allocated_occupancy"]) < 1e-9, (
    evalys_occupancy,
    summary["allocated_occupancy"],
)
killed = int((js.df.final_state == "COMPLETED_KILLED").sum())
print(f"COMPLETED_KILLED rows (preempted runs and runs cut at the end): {killed}")
print("evalys: utilisation matches allocated occupancy")
