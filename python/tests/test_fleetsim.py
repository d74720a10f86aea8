"""The Python package: run / compare / sweep, tables equal to the CLI's files, errors with
file / line / field, determinism across processes, and runs in a thread pool."""

import csv
import math
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pyarrow as pa
import pytest

import fleetsim

# Four jobs on one 4-GPU node, strict FIFO (the arithmetic is in the test below).
SMALL = """
name = "small"
[policy]
queueing_strategy = "strict-fifo"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
[workload]
trace = {{ format = "native", path = "{trace}" }}
queues = "single"
"""
JOBS = "id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,a,2,100\nJ2,0,b,4,50\nJ3,10,a,1,20\n"


@pytest.fixture()
def small(tmp_path: Path) -> str:
    t = tmp_path / "jobs.csv"
    t.write_text(JOBS)
    return SMALL.format(trace=t.as_posix())


def test_run_toml_text_hand_computed(small: str) -> None:
    # Strict FIFO: J1 0-100; J2 (4 GPUs) waits for J1: 100-150; J3 behind J2: 150-170.
    # Waits 0, 100, 140 -> mean 80; makespan 170.
    r = fleetsim.run(small)
    assert r.summary["scenario"] == "small"
    assert r.summary["wait_s"]["mean"] == 80.0
    assert r.summary["makespan_s"] == 170.0
    jobs = {row["name"]: row for row in r.jobs.to_pylist()}
    assert (jobs["J2"]["starting_time"], jobs["J2"]["finish_time"]) == (100.0, 150.0)
    assert (jobs["J3"]["waiting_time"], jobs["J3"]["bounded_slowdown"]) == (140.0, 8.0)
    assert jobs["J3"]["requested_time"] is None
    assert r.jobs.schema.field("job_id").type == pa.int64()
    assert r.jobs.schema.field("measured").type == pa.bool_()
    assert r.timeseries.schema.field("time_s").type == pa.float64()


def test_tables_convert_to_pandas_and_polars(small: str) -> None:
    import polars as pl

    r = fleetsim.run(small)
    assert len(r.jobs.to_pandas()) == 3
    df = pl.from_arrow(r.jobs)
    assert df.schema["submission_time"] == pl.Float64
    # Two runs read separately concatenate: the types do not depend on the data.
    both = pl.concat([df, pl.from_arrow(fleetsim.run(small, {"policy.queueing_strategy": "best-effort-fifo"}).jobs)])
    assert both.height == 6


def test_overrides_change_the_run(small: str) -> None:
    # Best-effort FIFO lets J3 pass the blocked J2: J3 runs 10-30, waits 0, 100, 0.
    r = fleetsim.run(small, overrides={"policy.queueing_strategy": "best-effort-fifo"})
    jobs = {row["name"]: row for row in r.jobs.to_pylist()}
    assert (jobs["J3"]["starting_time"], jobs["J3"]["finish_time"]) == (10.0, 30.0)
    assert r.summary["wait_s"]["max"] == 100.0


def _read_csv(path: Path) -> tuple[list[str], list[list[str]]]:
    with open(path, newline="") as f:
        rows = list(csv.reader(f))
    return rows[0], rows[1:]


def _same_table(table: pa.Table, path: Path) -> None:
    header, rows = _read_csv(path)
    assert table.column_names == header
    assert table.num_rows == len(rows)
    cols = [table.column(i).to_pylist() for i in range(table.num_columns)]
    for c, name in enumerate(header):
        typ = table.schema.field(c).type
        for i, row in enumerate(rows):
            text, v = row[c], cols[c][i]
            if text == "" and v is None:
                continue
            if pa.types.is_floating(typ):
                # Ratios are rounded to 6 (or 4) decimals in the CSV; times and GPUs exact. Half
                # a unit of the 4th decimal, and a hair for a value printed at the half-way
                # point (1.72275 written 1.7228: the double is just above the half).
                assert v is not None and math.isclose(v, float(text), abs_tol=5.000001e-5), (name, i, v, text)
            elif pa.types.is_integer(typ):
                assert v == int(text), (name, i)
            elif pa.types.is_boolean(typ):
                assert v == (text == "1"), (name, i)
            else:
                assert v == text, (name, i, v, text)


def _need(binary: Path | None) -> None:
    """Skips without the CLI's release binary, except in CI (CI=true), where that fails."""
    if binary is None:
        if os.environ.get("CI") == "true":
            pytest.fail("no CLI binary: $FLEETSIM_BIN, or cargo build --release")
        pytest.skip("no release binary (cargo build --release)")


def test_tables_equal_the_cli_files(repo: Path, tmp_path: Path, fleetsim_bin: Path | None) -> None:
    _need(fleetsim_bin)
    scenario = repo / "scenarios" / "default.toml"
    subprocess.run([fleetsim_bin, "run", scenario, "--quiet", "--seed", "3", "--out", tmp_path / "o"], check=True)
    r = fleetsim.run(scenario, seed=3)
    _same_table(r.jobs, tmp_path / "o" / "jobs.csv")
    _same_table(r.timeseries, tmp_path / "o" / "timeseries.csv")
    import json

    assert r.summary == json.loads((tmp_path / "o" / "summary.json").read_text())


# One static node, an autoscaled group, a serving service and an SLO: the table carries the
# `slo_*`, `autoscaling_*` and `serving_*` columns of `timeseries.csv` too.
MOVING = """
name = "moving"
[policy]
queueing_strategy = "best-effort-fifo"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
[[fleet.cells.autoscaling]]
name = "burst"
min_nodes = 0
max_nodes = 2
node = {{ accelerator = "H100", gpus = 4 }}
provisioning_delay = {{ distribution = "fixed", s = 60 }}
price_per_node_hour = 2.0
scale_down_idle_s = 120
[workload]
trace = {{ format = "native", path = "{trace}" }}
queues = "single"
[metrics]
timeseries_interval_s = 100
[[metrics.slo]]
name = "p95-1min"
kind = "wait_quantile"
quantile = 0.95
target_s = 60
[serving]
end_s = 600
[[serving.services]]
name = "chat"
replica = {{ gpus = 4 }}
demand = {{ kind = "table", points = [[0, 0], [100, 1], [400, 0]] }}
autoscaler = {{ target_utilization = 1.0, scale_up_delay_s = 20, scale_down_delay_s = 50 }}
"""


def test_moving_fleet_columns_equal_the_cli_files(tmp_path: Path, fleetsim_bin: Path | None) -> None:
    _need(fleetsim_bin)
    t = tmp_path / "jobs.csv"
    t.write_text(JOBS)
    scenario = tmp_path / "moving.toml"
    scenario.write_text(MOVING.format(trace=t.as_posix()))
    subprocess.run([fleetsim_bin, "run", scenario, "--quiet", "--out", tmp_path / "o"], check=True)
    r = fleetsim.run(scenario)
    for c in (
        "slo_p95-1min_attainment",
        "autoscaling_nodes_up",
        "autoscaling_pending_for_capacity_jobs",
        "serving_chat_desired_replicas",
        "serving_chat_running_replicas",
    ):
        assert c in r.timeseries.column_names, c
    _same_table(r.timeseries, tmp_path / "o" / "timeseries.csv")
    _same_table(r.jobs, tmp_path / "o" / "jobs.csv")


def test_bad_field_raises_scenario_error_with_place(tmp_path: Path, small: str) -> None:
    p = tmp_path / "bad.toml"
    # SMALL has 13 lines (the first empty, the last `queues = "single"`): [metrics] is
    # line 14, warmup_s line 15.
    p.write_text(small + "[metrics]\nwarmup_s = -5\n")
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.run(p)
    assert (e.value.file, e.value.line, e.value.field) == (str(p), 15, "metrics.warmup_s")
    assert "must be a number" in str(e.value)


def test_missing_section_names_it(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\n[metrics]\nwarmup_s = 5\n')
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.run(p)
    assert (e.value.file, e.value.line, e.value.field) == (str(p), 1, "fleet")


def test_unknown_key_raises_with_line_and_field(tmp_path: Path) -> None:
    p = tmp_path / "bad.toml"
    p.write_text('name = "x"\n[policy]\nplacemnt = "best-fit"\n')
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.run(p)
    assert (e.value.file, e.value.line, e.value.field) == (str(p), 3, "policy.placemnt")


def test_bad_override_names_the_field(small: str) -> None:
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.run(small, overrides={"policy.placement": "no-such-policy"})
    assert "no-such-policy" in str(e.value)
    assert isinstance(e.value, fleetsim.FleetsimError)


def test_bad_trace_field_raises_trace_error(tmp_path: Path) -> None:
    t = tmp_path / "jobs.csv"
    t.write_text("id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,a,2,100\nJ2,zero,b,4,50\n")
    with pytest.raises(fleetsim.TraceError) as e:
        fleetsim.run(SMALL.format(trace=t.as_posix()))
    assert (e.value.file, e.value.line, e.value.field) == (str(t), 3, "submit_s")


def test_missing_scenario_file() -> None:
    with pytest.raises(fleetsim.ScenarioError) as e:
        fleetsim.run("no/such/scenario.toml")
    assert e.value.file == "no/such/scenario.toml"


DETERMINISM = """
import hashlib, sys
import pyarrow as pa, pyarrow.ipc as ipc
import fleetsim
r = fleetsim.run(sys.argv[1], overrides={"policy.placement": "worst-fit"}, seed=7)
for t in (r.jobs, r.timeseries):
    sink = pa.BufferOutputStream()
    with ipc.new_stream(sink, t.schema) as w:
        w.write_table(t)
    print(hashlib.sha256(sink.getvalue().to_pybytes()).hexdigest())
"""


def test_same_seed_same_tables_across_processes(repo: Path) -> None:
    scenario = str(repo / "scenarios" / "default.toml")
    outs = [
        subprocess.run([sys.executable, "-c", DETERMINISM, scenario], capture_output=True, text=True, check=True).stdout
        for _ in range(2)
    ]
    assert outs[0] == outs[1] and len(outs[0].split()) == 2
    # A different seed gives a different workload.
    r7 = fleetsim.run(scenario, overrides={"policy.placement": "worst-fit"}, seed=7)
    r8 = fleetsim.run(scenario, overrides={"policy.placement": "worst-fit"}, seed=8)
    assert not r7.jobs.equals(r8.jobs)


def test_compare_paired_differences(small: str) -> None:
    c = fleetsim.compare(small, ["strict=queueing_strategy=strict-fifo", "be=queueing_strategy=best-effort-fifo"], seeds=2)
    assert [p["label"] for p in c["policies"]] == ["strict", "be"]
    assert c["baseline"] == "strict"
    # A trace with no seeded transform: both seeds give the same waits. Mean wait 80 vs
    # (0 + 100 + 0) / 3 = 33.33 s: difference -46.67 on every seed, a zero-width interval.
    strict = c["policies"][0]["metrics"]["wait_s.mean"]
    be = c["policies"][1]["metrics"]["wait_s.mean"]
    assert strict["values"] == [80.0, 80.0]
    assert be["values"] == pytest.approx([100 / 3, 100 / 3])
    assert be["diff"]["mean_diff"] == pytest.approx(100 / 3 - 80)
    assert (be["diff"]["ci_low"], be["diff"]["ci_high"]) == pytest.approx((100 / 3 - 80, 100 / 3 - 80))


def test_compare_matches_cli(repo: Path, tmp_path: Path, fleetsim_bin: Path | None) -> None:
    _need(fleetsim_bin)
    import json

    scenario = repo / "scenarios" / "sample-small.toml"
    subprocess.run(
        [fleetsim_bin, "compare", scenario, "--policies", "best-fit,worst-fit", "--seeds", "2", "--out", tmp_path / "c"],
        check=True,
        capture_output=True,
    )
    c = fleetsim.compare(scenario, "best-fit,worst-fit", seeds=2, threads=1)
    assert c == json.loads((tmp_path / "c" / "compare.json").read_text())


def _sweep_text(repo: Path) -> str:
    # The default scenario, one day of arrivals instead of a week, two placements x 2 seeds.
    text = (repo / "scenarios" / "default.toml").read_text()
    assert "duration_s = 604800" in text
    return text.replace("duration_s = 604800", "duration_s = 86400") + (
        '\n[sweep]\nseeds = 2\n[[sweep.axes]]\nparam = "policy.placement"\nvalues = ["best-fit", "worst-fit"]\n'
    )


def test_sweep_runs_every_point_deterministically(repo: Path, tmp_path: Path) -> None:
    SWEEP = _sweep_text(repo)
    a = fleetsim.sweep(SWEEP, threads=1, out=tmp_path / "a")
    b = fleetsim.sweep(SWEEP, threads=2, out=tmp_path / "b")
    # 2 placements x 2 seeds.
    assert a.runs.num_rows == 4
    assert (tmp_path / "a" / "runs.csv").read_bytes() == (tmp_path / "b" / "runs.csv").read_bytes()
    assert a.runs.equals(b.runs)
    # Without out: a temporary folder; the table is read before it goes.
    c = fleetsim.sweep(SWEEP)
    assert c.runs.equals(a.runs)


def test_thread_pool_of_four_beats_serial(repo: Path) -> None:
    """Runs release the GIL: four runs in a thread pool overlap in time, and on a machine
    with a free second core they finish faster than one after another.

    Two checks. (1) Overlap, independent of machine load: every pooled run's interval
    [start, end) intersects another's for at least half its length (with the GIL held they
    would run one after another, overlapping ~0). (2) Speed: best of three tries > 1.3x.
    A timing cannot be judged when other processes take the cores, so (2) is asserted only
    when the serial phase got a whole core (its process CPU time >= 0.9 of its wall time),
    the pool got at least 1.6 cores (CPU time >= 1.6 of its wall time: a busy second core
    cannot give a speedup) and more than one core exists; otherwise the figures are printed
    and (1) stands alone.
    """
    # The default fleet and workload over 8 weeks of arrivals (about 67,000 jobs): long
    # enough runs (about 1 s each on an idle core) for the pool's overhead not to matter.
    text = (repo / "scenarios" / "default.toml").read_text()
    scenario = text.replace("duration_s = 604800", "duration_s = 4838400")
    seeds = [11, 12, 13, 14]
    fleetsim.run(scenario, seed=10)  # warm up

    def timed(seed: int) -> tuple[float, float, dict]:
        start = time.perf_counter()
        summary = fleetsim.run(scenario, seed=seed).summary
        return start, time.perf_counter(), summary

    best = 0.0
    judged = False
    for attempt in range(3):
        c0, t0 = time.process_time(), time.perf_counter()
        serial = [fleetsim.run(scenario, seed=s).summary for s in seeds]
        c1, t1 = time.process_time(), time.perf_counter()
        with ThreadPoolExecutor(max_workers=4) as pool:
            spans = list(pool.map(timed, seeds))
        c2, t2 = time.process_time(), time.perf_counter()
        assert [s for _, _, s in spans] == serial
        for i, (a0, a1, _) in enumerate(spans):
            overlap = max(
                max(0.0, min(a1, b1) - max(a0, b0))
                for j, (b0, b1, _) in enumerate(spans)
                if j != i
            )
            assert overlap >= 0.5 * (a1 - a0), (
                f"run {i} overlapped others for {overlap:.2f} s of {a1 - a0:.2f} s: "
                "the GIL is not released while a run executes"
            )
        cpu_share = (c1 - c0) / (t1 - t0)
        pool_share = (c2 - c1) / (t2 - t1)
        speedup = (t1 - t0) / (t2 - t1)
        print(
            f"4 runs: serial {t1 - t0:.2f} s (CPU {cpu_share:.2f} of wall), pool of 4 threads "
            f"{t2 - t1:.2f} s (CPU {pool_share:.2f} of wall), speedup {speedup:.2f}x "
            f"({os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f})"
        )
        # Judged only when the serial phase had a whole core and the pool at least 1.6:
        # another process on the second core (a build beside the tests) is not a defect.
        if cpu_share >= 0.9 and pool_share >= 1.6 and (os.cpu_count() or 1) > 1:
            judged = True
            best = max(best, speedup)
            if best > 1.3:
                break
    if judged:
        assert best > 1.3, f"best speedup {best:.2f}x of a pool of 4 over serial"
    else:
        print("speed not judged: the phases never had their cores (machine busy)")


def test_elastic_jobs_run_as_the_cli_runs_them(repo: Path, tmp_path: Path, fleetsim_bin: Path | None) -> None:
    # scenarios/elastic/beside-rigid.toml, worked out by hand in tests/integration/elastic.rs:
    # E (2..8 GPUs) shrinks for R1 at 100, grows back at 600, is evicted by R2 at 1000 and
    # ends at 1565; it held 8,120 GPU-s over 2 resizes.
    scenario = repo / "scenarios" / "elastic" / "beside-rigid.toml"
    r = fleetsim.run(scenario)
    e = r.summary["elastic"]
    assert (e["allocator"], e["jobs"], e["completed"], e["reallocations"]) == ("grow-idle", 1, 1, 2)
    assert math.isclose(e["gpu_hours"], 8120 / 3600)
    assert e["job_lengths"].startswith("modelled")
    jobs = {row["name"]: row for row in r.jobs.to_pylist()}
    assert (jobs["E"]["finish_time"], jobs["E"]["preemptions"]) == (1565.0, 1)
    _need(fleetsim_bin)
    subprocess.run([fleetsim_bin, "run", scenario, "--quiet", "--out", tmp_path / "o"], check=True)
    _same_table(r.jobs, tmp_path / "o" / "jobs.csv")
    import json

    assert r.summary == json.loads((tmp_path / "o" / "summary.json").read_text())
