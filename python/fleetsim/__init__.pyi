"""Type stubs of the fleetsim package (see fleetsim/__init__.py for the docs)."""

import os
from pathlib import Path
from typing import Any, Mapping, Sequence

import pyarrow as pa

__version__: str

class FleetsimError(Exception):
    """Any error of fleetsim; ``file``, ``line`` (1-based) and ``field`` say where the input
    is at fault, each ``None`` when unknown."""

    file: str | None
    line: int | None
    field: str | None

class ScenarioError(FleetsimError):
    """The scenario, an override or a study's arguments are invalid."""

class TraceError(FleetsimError):
    """An input file cannot be read or has a bad field."""

class RunError(FleetsimError):
    """A run could not be carried out."""

class Result:
    """One run's outputs."""

    summary: dict[str, Any]
    jobs: pa.Table | None
    timeseries: pa.Table | None
    def __init__(self, summary: dict, jobs: pa.Table | None, timeseries: pa.Table | None) -> None: ...

class SweepResult:
    """A sweep's outputs: ``runs.csv`` as a table and the folder written."""

    runs: pa.Table
    out: Path
    def __init__(self, runs: pa.Table, out: Path) -> None: ...

def run(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seed: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
) -> Result:
    """Runs one scenario in this process (GIL released) and returns its outputs."""

def compare(
    scenario: str | os.PathLike[str],
    policies: str | Sequence[str],
    seeds: int = 5,
    baseline: str | None = None,
    overrides: Mapping[str, Any] | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    threads: int | None = None,
) -> dict[str, Any]:
    """Compares policies on common random numbers (``fleetsim compare``); ``compare.json``."""

def sweep(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seeds: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    threads: int | None = None,
    shard: tuple[int, int] | None = None,
) -> SweepResult:
    """Runs the scenario's ``[sweep]`` (``fleetsim sweep``; ``shard=(I, N)``: ``--shard I/N``)."""
