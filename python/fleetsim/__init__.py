"""fleetsim from Python: run scenarios, compare policies and sweep parameters in-process.

The simulations are the engine's own library functions (the ones the ``fleetsim`` command
calls), with the same determinism: the same scenario, overrides and seed give identical
tables, in any process. The GIL is released while the engine runs, so runs in a
``concurrent.futures.ThreadPoolExecutor`` use several cores.

Tables are ``pyarrow.Table`` objects built from the engine's Arrow buffers without a copy
(``.to_pandas()``, ``polars.from_arrow(t)``), with the column types of ``jobs.parquet`` and
``timeseries.parquet`` (``docs/src/reference/outputs.md``, "Output columns").
"""

from __future__ import annotations

import json
import math
import os
import tempfile
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import pyarrow as pa

from . import _native
from ._native import FleetsimError, RunError, ScenarioError, TraceError

__all__ = [
    "run",
    "compare",
    "sweep",
    "Result",
    "SweepResult",
    "FleetsimError",
    "ScenarioError",
    "TraceError",
    "RunError",
]
__version__: str = _native.__version__


class Result:
    """One run's outputs.

    Attributes:
        summary: ``summary.json`` as a dict (the same document ``fleetsim run`` writes).
        jobs: one row per job (the columns of ``jobs.csv``), or ``None`` for an inflation
            scenario.
        timeseries: one row per interval (the columns of ``timeseries.csv``), or ``None`` for
            an inflation scenario.
    """

    __slots__ = ("summary", "jobs", "timeseries")

    def __init__(self, summary: dict, jobs: pa.Table | None, timeseries: pa.Table | None):
        self.summary = summary
        self.jobs = jobs
        self.timeseries = timeseries

    def __repr__(self) -> str:
        n = None if self.jobs is None else self.jobs.num_rows
        return f"<fleetsim.Result scenario={self.summary.get('scenario')!r} jobs={n}>"


class SweepResult:
    """A sweep's outputs.

    Attributes:
        runs: ``runs.csv`` as a table (one row per run: its parameters, seed and metrics).
        out: the folder the sweep wrote (``runs.csv``, ``report.html``, ``runs/…``).
    """

    __slots__ = ("runs", "out")

    def __init__(self, runs: pa.Table, out: Path):
        self.runs = runs
        self.out = out

    def __repr__(self) -> str:
        return f"<fleetsim.SweepResult runs={self.runs.num_rows} out={str(self.out)!r}>"


def _toml_value(v: Any) -> str:
    """A Python value as a TOML literal (the VALUE of the CLI's ``--set PATH=VALUE``)."""
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise ValueError(f"override value {v!r}: TOML has no such number here")
        return repr(v)
    if isinstance(v, str):
        return json.dumps(v)
    if isinstance(v, Mapping):
        return "{ " + ", ".join(f"{json.dumps(str(k))} = {_toml_value(x)}" for k, x in v.items()) + " }"
    if isinstance(v, (list, tuple)):
        return "[" + ", ".join(_toml_value(x) for x in v) + "]"
    raise TypeError(f"override value {v!r}: expected bool, int, float, str, list or dict")


def _overrides(overrides: Mapping[str, Any] | None) -> list[str]:
    if overrides is None:
        return []
    if not isinstance(overrides, Mapping):
        raise TypeError("overrides: expected a dict of dotted path -> value")
    return [f"{k}={_toml_value(v)}" for k, v in overrides.items()]


def _scenario(scenario: str | os.PathLike[str]) -> tuple[str, bool]:
    """(text or path, is_path): a path-like, or a string with neither a newline nor ``=``,
    names a file; any other string is TOML text."""
    if isinstance(scenario, os.PathLike):
        return os.fspath(scenario), True
    if not isinstance(scenario, str):
        raise TypeError("scenario: expected a path or TOML text")
    if "\n" in scenario or "=" in scenario:
        return scenario, False
    return scenario, True


def _dir(d: str | os.PathLike[str] | None) -> str | None:
    return None if d is None else os.fspath(d)


def run(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
) -> Result:
    """Runs one scenario in this process and returns its outputs in memory.

    Args:
        scenario: a scenario file (path) or its TOML text. Relative paths inside TOML text
            resolve against the current directory.
        overrides: dotted path -> value, applied in order as ``fleetsim run --set`` would,
            e.g. ``{"policy.placement": "fgd", "metrics.warmup_s": 3600}``.
        seed: the seed of every random stream (default: the scenario's ``seed``).
        trace_dir: where ``public_path`` traces are (default: ``$FLEETSIM_TRACE_DIR``, else
            ``traces/public``).

    Returns:
        A :class:`Result` with ``summary`` (dict), ``jobs`` and ``timeseries``
        (``pyarrow.Table``). Same arguments, same tables.

    Raises:
        ScenarioError: the scenario or an override is invalid (``file``, ``line``, ``field``
            attributes say where, each ``None`` when unknown).
        TraceError: an input file cannot be read or has a bad field (same attributes).
        RunError: the run could not be carried out.
    """
    text, is_path = _scenario(scenario)
    summary, jobs, ts = _native.run(text, is_path, _overrides(overrides), seed, _dir(trace_dir))
    return Result(
        json.loads(summary),
        None if jobs is None else pa.table(jobs),
        None if ts is None else pa.table(ts),
    )


def compare(
    scenario: str | os.PathLike[str],
    policies: str | Sequence[str],
    seeds: int = 5,
    baseline: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> dict:
    """Compares policies on common random numbers, as ``fleetsim compare``.

    Args:
        scenario: a scenario file (path) or its TOML text.
        policies: the CLI's ``--policies``: a comma-separated string or a list of variants
            (``"worst-fit"``, ``"placement=first-fit"``, ``"fast=worst-fit+backfill=easy"``).
        seeds: number of seeds: the scenario's seed, +1, … (every policy runs each).
        baseline: label of the policy differences are taken against (default: the first).
        overrides: dotted path -> value for every run (the CLI's ``--set``).
        trace_dir: as in :func:`run`.
        out: folder for the comparison's files (default: a temporary folder, removed).
        threads: worker threads (default: rayon's, ``RAYON_NUM_THREADS`` or the cores).

    Returns:
        ``compare.json`` as a dict: ``policies`` (per variant, per metric: ``values`` per
        seed, ``mean``, ``sd`` and ``diff``, the paired difference to the baseline with its
        95 % confidence interval), ``seeds``, ``baseline``, ``method``.

    Raises:
        ScenarioError, TraceError, RunError: as :func:`run`.
    """
    text, is_path = _scenario(scenario)
    pol = policies if isinstance(policies, str) else ",".join(policies)
    ov = _overrides(overrides)
    if out is not None:
        return json.loads(
            _native.compare(text, is_path, pol, seeds, ov, os.fspath(out), baseline, _dir(trace_dir), threads)
        )
    with tempfile.TemporaryDirectory(prefix="fleetsim-compare-") as d:
        return json.loads(
            _native.compare(text, is_path, pol, seeds, ov, os.path.join(d, "out"), baseline, _dir(trace_dir), threads)
        )


def _read_runs(path: Path) -> pa.Table:
    import pyarrow.csv as pcsv

    # Text columns stay text (a parameter value such as "best-fit" or "1e3").
    return pcsv.read_csv(path)


def sweep(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seeds: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    shard: tuple[int, int] | None = None,
) -> SweepResult:
    """Runs the scenario's ``[sweep]`` (every combination of its axes, each seed), as
    ``fleetsim sweep``.

    Args:
        scenario: a scenario file (path) or its TOML text, with a ``[sweep]`` table.
        overrides: dotted path -> value for every run (the CLI's ``--set``).
        seeds: number of seeds (default: the sweep's ``seeds``).
        trace_dir: as in :func:`run`.
        out: folder for the sweep's files (default: a temporary folder; ``runs`` is read
            before it is removed and ``SweepResult.out`` then no longer exists).
        threads: worker threads (default: rayon's).
        shard: ``(I, N)`` runs only shard ``I`` of ``N`` (1-based), as ``fleetsim sweep
            --shard I/N``: run ``r`` (0-based, cartesian order) belongs to shard
            ``r mod N + 1``; ``fleetsim merge`` (or :func:`fleetsim.ray.sweep`) joins the
            shards' folders. Default: every run.

    Returns:
        A :class:`SweepResult` whose ``runs`` table is ``runs.csv`` (run order and values as
        the CLI writes them, whatever the thread count; with ``shard``, that shard's rows).

    Raises:
        ScenarioError, TraceError, RunError: as :func:`run` (``ScenarioError`` for a
            shard outside ``1 ≤ I ≤ N``).
    """
    text, is_path = _scenario(scenario)
    ov = _overrides(overrides)
    if out is not None:
        o = Path(out)
        _native.sweep(text, is_path, ov, os.fspath(o), seeds, _dir(trace_dir), threads, shard)
        return SweepResult(_read_runs(o / "runs.csv"), o)
    with tempfile.TemporaryDirectory(prefix="fleetsim-sweep-") as d:
        o = Path(d) / "out"
        _native.sweep(text, is_path, ov, os.fspath(o), seeds, _dir(trace_dir), threads, shard)
        return SweepResult(_read_runs(o / "runs.csv"), o)
