"""fleetsim.ray: a sweep fanned out as Ray tasks equals the serial sweep (rows, order,
values, and runs.csv byte for byte); without Ray, importing it says how to install it."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

import fleetsim

# CI (.ci/python.sh) installs ray and sets this, so a missing ray fails there.
REQUIRED = os.environ.get("FLEETSIM_REQUIRE_RAY") == "1"

try:
    import ray
except ImportError:
    ray = None
    if REQUIRED:
        raise

needs_ray = pytest.mark.skipif(ray is None, reason="ray is not installed (pip install ray)")


def test_import_without_ray_names_the_install_command() -> None:
    # `import ray` made to fail (a None entry in sys.modules), in a fresh interpreter.
    code = (
        "import sys; sys.modules['ray'] = None\n"
        "import fleetsim\n"
        "try:\n"
        "    import fleetsim.ray\n"
        "except ImportError as e:\n"
        "    print(e)\n"
        "else:\n"
        "    print('imported')\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "pip install ray" in r.stdout, r.stdout + r.stderr


def test_shard_of_a_sweep(repo: Path, traces: Path) -> None:
    # No Ray needed: the binding's shard parameter. 18 runs (3 x 3 x 2, one seed); shard 2/5
    # holds the runs r with r mod 5 = 1: 1, 6, 11, 16.
    scen = repo / "scenarios" / "sweep-example.toml"
    ov = {"workload.synthetic.duration_s": 86400}
    s = fleetsim.sweep(scen, overrides=ov, seeds=1, trace_dir=traces, shard=(2, 5))
    assert s.runs.column("run_index").to_pylist() == [1, 6, 11, 16]
    with pytest.raises(fleetsim.ScenarioError, match="1 ≤ I ≤ N"):
        fleetsim.sweep(scen, overrides=ov, seeds=1, trace_dir=traces, shard=(0, 3))


def names(d: Path) -> list[str]:
    """Every file under ``d``, relative, sorted."""
    return sorted(p.relative_to(d).as_posix() for p in d.rglob("*") if p.is_file())


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    try:
        yield ray
    finally:
        ray.shutdown()


@needs_ray
def test_ray_sweep_equals_serial(repo: Path, traces: Path, tmp_path: Path, local_ray) -> None:
    import fleetsim.ray as fray

    scen = repo / "scenarios" / "sweep-example.toml"
    t0 = time.time()
    serial = fleetsim.sweep(scen, trace_dir=traces, out=tmp_path / "serial", threads=1)
    t1 = time.time()
    # 36 runs on 5 shards: shards 1 holds runs 0, 5, …, 35 (8 runs), shards 2-5 hold 7 each,
    # so the merge interleaves shards of unequal size.
    fanned = fray.sweep(scen, trace_dir=traces, out=tmp_path / "ray", num_shards=5)
    t2 = time.time()
    print(f"\nsweep-example: serial {t1 - t0:.2f} s, Ray 5 shards on 2 CPUs {t2 - t1:.2f} s")
    assert serial.runs.num_rows == 36
    assert fanned.runs.column_names == serial.runs.column_names
    assert fanned.runs.equals(serial.runs)
    assert (tmp_path / "ray" / "runs.csv").read_bytes() == (tmp_path / "serial" / "runs.csv").read_bytes()
    # The whole merged folder (sweep.json, report.html, every run's folder and marker) is the
    # serial sweep's, file for file: the shards came back through the object store unchanged.
    s_dir, r_dir = tmp_path / "serial", tmp_path / "ray"
    assert names(r_dir) == names(s_dir)
    assert len(names(s_dir)) > 36
    for rel in names(s_dir):
        assert (r_dir / rel).read_bytes() == (s_dir / rel).read_bytes(), rel


@needs_ray
def test_ray_sweep_default_shards_and_overrides(repo: Path, traces: Path, local_ray) -> None:
    import fleetsim.ray as fray

    scen = repo / "scenarios" / "sweep-example.toml"
    ov = {"workload.synthetic.duration_s": 86400}
    serial = fleetsim.sweep(scen, overrides=ov, seeds=1, trace_dir=traces)
    # Default: one shard per CPU of the cluster (2 here), out in a temporary folder.
    fanned = fray.sweep(scen, overrides=ov, seeds=1, trace_dir=traces)
    assert fanned.runs.num_rows == 18  # 3 placements x 3 rates x 2 scales x 1 seed
    assert fanned.runs.equals(serial.runs)


@needs_ray
def test_ray_sweep_rejects_bad_num_shards(repo: Path, traces: Path, local_ray) -> None:
    import fleetsim.ray as fray

    scen = repo / "scenarios" / "sweep-example.toml"
    for n in (0, 37):
        with pytest.raises(ValueError, match="from 1 to the sweep's 36 runs"):
            fray.sweep(scen, trace_dir=traces, num_shards=n)


@needs_ray
def test_ray_sweep_task_error_keeps_its_class(tmp_path: Path, local_ray) -> None:
    import fleetsim.ray as fray

    # The plan (driver side) reads no trace; the runs (in the tasks) fail on its bad row. (A
    # missing `path` is a ScenarioError naming the field, also raised in the task.)
    bad = tmp_path / "jobs.csv"
    bad.write_text("id,submit_s,tenant,num_gpu,runtime_s\nJ1,0,a,2,100\nJ2,zero,b,4,50\n")
    scen = f"""
name = "bad-trace"
[[fleet.cells]]
name = "c"
[[fleet.cells.nodes]]
names = ["n1"]
accelerator = "H100"
gpus = 4
[workload]
trace = {{ format = "native", path = "{bad.as_posix()}" }}
[sweep]
seeds = 2
"""
    with pytest.raises(fleetsim.TraceError) as e:
        fray.sweep(scen, num_shards=2)
    # The task's exception itself, as the serial sweep raises it (1 run per shard).
    assert type(e.value) is fleetsim.TraceError
    assert (e.value.file, e.value.line, e.value.field) == (str(bad), 3, "submit_s")
    assert str(e.value) == "1 of 1 runs failed; complete runs are kept (rerun with --resume)"
    assert isinstance(e.value.__cause__, ray.exceptions.RayTaskError)
