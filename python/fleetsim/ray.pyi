"""Type stubs of fleetsim.ray (see fleetsim/ray.py for the docs)."""

import os
from typing import Any, Mapping

from . import SweepResult

def sweep(
    scenario: str | os.PathLike[str],
    overrides: Mapping[str, Any] | None = None,
    seeds: int | None = None,
    trace_dir: str | os.PathLike[str] | None = None,
    out: str | os.PathLike[str] | None = None,
    num_shards: int | None = None,
    threads: int | None = 1,
) -> SweepResult:
    """Runs the scenario's ``[sweep]`` as ``num_shards`` Ray tasks (``--shard I/N`` each) and
    merges them (``fleetsim merge``): the serial :func:`fleetsim.sweep`'s result."""
