"""Paths shared by the tests: the repository's scenarios and the public traces."""

import os
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def traces() -> Path:
    return Path(os.environ.get("FLEETSIM_TRACE_DIR", REPO.parent / "shared" / "traces"))


@pytest.fixture(scope="session")
def fleetsim_bin() -> Path | None:
    """The CLI binary: `$FLEETSIM_BIN` (CI sets it to its `ci`-profile build), else the
    release build in `$CARGO_TARGET_DIR` or `target/` (`cargo build --release`)."""
    if os.environ.get("FLEETSIM_BIN"):
        return Path(os.environ["FLEETSIM_BIN"])
    for d in (os.environ.get("CARGO_TARGET_DIR"), str(REPO / "target")):
        if d and (Path(d) / "release" / "fleetsim").exists():
            return Path(d) / "release" / "fleetsim"
    return None
