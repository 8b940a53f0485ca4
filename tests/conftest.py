"""Shared fixtures. System components (shared data, Chromium, model servers) skip when absent,
unless CRUX_REQUIRE_SYSTEM=1 (set by .ci/run), which turns those skips into failures."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import crux_nb
from crux_nb.datasets import load_sample

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


def require_system(available: bool, reason: str) -> None:
    """Skip with ``reason`` when a system component is missing; fail instead in CI."""
    if available:
        return
    if os.environ.get("CRUX_REQUIRE_SYSTEM") == "1":
        pytest.fail(f"required system component missing (CRUX_REQUIRE_SYSTEM=1): {reason}")
    pytest.skip(reason)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    require_system(SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def sample_kb():
    """The bundled sample corpus (do not mutate: build your own for changes)."""
    return load_sample()


@pytest.fixture
def kb():
    return crux_nb.knowledge_base(id="t")
