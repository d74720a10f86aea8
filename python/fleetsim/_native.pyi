"""The native module (Rust, pyo3); use the functions of ``fleetsim`` instead."""

from typing import Any

__version__: str

class FleetsimError(Exception):
    file: str | None
    line: int | None
    field: str | None

class ScenarioError(FleetsimError): ...
class TraceError(FleetsimError): ...
class RunError(FleetsimError): ...

class ArrowStream:
    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any: ...

def run(
    scenario: str, is_path: bool, overrides: list[str], seed: int | None = None, trace_dir: str | None = None
) -> tuple[str, ArrowStream | None, ArrowStream | None]: ...
def compare(
    scenario: str,
    is_path: bool,
    policies: str,
    seeds: int,
    overrides: list[str],
    out: str,
    baseline: str | None = None,
    trace_dir: str | None = None,
    threads: int | None = None,
) -> str: ...
def sweep(
    scenario: str,
    is_path: bool,
    overrides: list[str],
    out: str,
    seeds: int | None = None,
    trace_dir: str | None = None,
    threads: int | None = None,
    shard: tuple[int, int] | None = None,
) -> int: ...
def sweep_runs(scenario: str, is_path: bool, overrides: list[str], seeds: int | None = None) -> int: ...
def merge(inputs: list[str], out: str) -> int: ...
