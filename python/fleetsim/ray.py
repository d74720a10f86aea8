"""A sweep fanned out as Ray tasks: one task per shard, merged into one table.

``fleetsim.ray.sweep(scenario, num_shards=N)`` runs shard ``I/N`` of the scenario's
``[sweep]`` in Ray task ``I`` (the engine's ``fleetsim sweep --shard I/N``: run ``r``, 0-based
in cartesian order, belongs to shard ``r mod N + 1``), ships each shard's folder back to the
driver and joins them with the engine's ``fleetsim merge``. The result is the serial
:func:`fleetsim.sweep`'s: the same rows in the same order with the same values, and a
``runs.csv`` byte-identical to it.

Ray is optional: ``import fleetsim`` does not need it; importing this module without Ray
raises an ``ImportError`` that says ``pip install ray``. Without a running Ray,
:func:`sweep` calls ``ray.init()`` (a local cluster on this machine); to use a cluster,
call ``ray.init(address=...)`` first. The workers need the ``fleetsim`` package and the
scenario's input files at the same paths (a shared file system); the outputs come back
through Ray's object store, so the workers need no shared output folder.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Mapping

try:
    import ray as _ray
except ImportError as e:  # pragma: no cover - exercised by a subprocess in the tests
    raise ImportError(
        "fleetsim.ray needs Ray, which is not installed: pip install ray "
        "(or pip install './python[ray]')"
    ) from e

from . import SweepResult, _dir, _native, _overrides, _read_runs, _scenario

__all__ = ["sweep"]


def _run_shard(
    text: str,
    is_path: bool,
    overrides: list[str],
    seeds: int | None,
    trace_dir: str | None,
    threads: int | None,
    shard: tuple[int, int],
) -> dict[str, bytes]:
    """One Ray task: shard ``shard = (I, N)`` of the sweep into a temporary folder, returned
    as its files (path relative to the folder -> bytes), in sorted order."""
    with tempfile.TemporaryDirectory(prefix=f"fleetsim-shard-{shard[0]}-") as d:
        out = Path(d) / "out"
        _native.sweep(text, is_path, overrides, os.fspath(out), seeds, trace_dir, threads, shard)
        files = sorted(p for p in out.rglob("*") if p.is_file())
        return {p.relative_to(out).as_posix(): p.read_bytes() for p in files}


def _write_shard(files: dict[str, bytes], to: Path) -> None:
    for rel, data in files.items():
        p = to / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)


def sweep(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seeds: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    num_shards: int | None = None,
    threads: int | None = 1,
) -> SweepResult:
    """Runs the scenario's ``[sweep]`` as ``num_shards`` Ray tasks and merges them, giving
    the same result as :func:`fleetsim.sweep`.

    Args:
        scenario: a scenario file (path; made absolute here, so the workers find it) or its
            TOML text (paths inside TOML text resolve against each worker's current
            directory: write them absolute).
        overrides: dotted path -> value for every run (the CLI's ``--set``).
        seeds: number of seeds (default: the sweep's ``seeds``).
        trace_dir: where ``public_path`` traces are (default: ``$FLEETSIM_TRACE_DIR`` of
            this process, passed to the workers; else ``traces/public``).
        out: folder for the merged sweep (``runs.csv``, ``report.html``, ``runs/…``; default:
            a temporary folder, removed after ``runs`` is read).
        num_shards: number of Ray tasks, ``1 ≤ num_shards ≤`` the number of runs (default:
            the cluster's CPUs, at most the number of runs).
        threads: engine worker threads per task (default 1, matching the 1 CPU each task
            reserves; ``None``: rayon's default on the worker).

    Returns:
        A :class:`fleetsim.SweepResult` whose ``runs`` table equals the serial sweep's.

    Raises:
        ValueError: ``num_shards`` out of range.
        ScenarioError, TraceError, RunError: as :func:`fleetsim.sweep`, also when raised in
            a task (the task's exception itself, with its ``file``, ``line`` and ``field``;
            the ``ray.exceptions.RayTaskError`` is its ``__cause__``). A run's own messages
            go to the worker's stderr (shown by Ray unless ``log_to_driver=False``).
    """
    text, is_path = _scenario(scenario)
    if is_path:
        text = os.path.abspath(text)
    ov = _overrides(overrides)
    td = _dir(trace_dir) if trace_dir is not None else os.environ.get("FLEETSIM_TRACE_DIR")
    if td is not None:
        td = os.path.abspath(td)
    total = _native.sweep_runs(text, is_path, ov, seeds)
    if not _ray.is_initialized():
        _ray.init()
    if num_shards is None:
        cpus = int(_ray.cluster_resources().get("CPU", 1))
        num_shards = max(1, min(total, cpus))
    if isinstance(num_shards, bool) or not isinstance(num_shards, int) or not 1 <= num_shards <= total:
        raise ValueError(f"num_shards: expected an integer from 1 to the sweep's {total} runs, got {num_shards!r}")
    task = _ray.remote(num_cpus=threads or 1)(_run_shard)
    refs = [task.remote(text, is_path, ov, seeds, td, threads, (i, num_shards)) for i in range(1, num_shards + 1)]
    with tempfile.TemporaryDirectory(prefix="fleetsim-ray-") as d:
        inputs = []
        first_error: BaseException | None = None
        # Every task is waited for (as the serial sweep runs every run before it reports
        # failures), and the error of the first failed shard is raised: the same one each time.
        for i, ref in enumerate(refs, start=1):
            try:
                files = _ray.get(ref)
            except _ray.exceptions.RayTaskError as e:
                if first_error is None:
                    first_error = e
                continue
            shard_dir = Path(d) / f"shard-{i}"
            _write_shard(files, shard_dir)
            inputs.append(os.fspath(shard_dir))
        if first_error is not None:
            # The task's own exception (ScenarioError, TraceError, …, with its file, line and
            # field), as the serial sweep raises it; the Ray error as its cause.
            cause = getattr(first_error, "cause", None)
            if isinstance(cause, BaseException):
                raise cause from first_error
            raise first_error
        if out is not None:
            o = Path(out)
            _native.merge(inputs, os.fspath(o))
            return SweepResult(_read_runs(o / "runs.csv"), o)
        o = Path(d) / "out"
        _native.merge(inputs, os.fspath(o))
        return SweepResult(_read_runs(o / "runs.csv"), o)
