"""Shared fixtures. System components (shared data, Chromium, model servers) skip when absent,
unless CRUX_REQUIRE_SYSTEM=1 (set by .ci/run), which turns those skips into failures."""

from __future__ import annotations

import atexit
import os
import shutil
import tempfile
from pathlib import Path

import pytest

import crux_nb
from crux_nb.datasets import load_sample
from crux_nb.testing import require_system  # noqa: F401  (tests import it from here)

from browser_stack import artifacts, browser, jupyter_lab  # noqa: F401  (session fixtures for every folder)

# crux_nb.open's disk cache of derived indexes (crux_nb.store.array_cache): one of the test run's own, set before
# anything runs (notebook kernels inherit it), so no test reads an entry another run or the user left; removed
# when the run ends
os.environ["CRUX_NB_CACHE_DIR"] = tempfile.mkdtemp(prefix="crux_nb-test-cache-")
atexit.register(shutil.rmtree, os.environ["CRUX_NB_CACHE_DIR"], True)

ROOT = Path(__file__).resolve().parents[1]
SHARED_DATA = ROOT.parent / "shared" / "data"


@pytest.fixture(scope="session")
def shared_data() -> Path:
    require_system(SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}")
    return SHARED_DATA


@pytest.fixture(scope="session")
def sample_kb():
    """The bundled sample corpus (do not mutate: build your own for changes)."""
    return load_sample()


@pytest.fixture(scope="session")
def saved_sample(tmp_path_factory) -> Path:
    """A folder holding the sample corpus with its offline entity graph, saved once (open it; never save to it)."""
    folder = tmp_path_factory.mktemp("saved") / "lumen"
    kb = load_sample()
    kb.extract_entities(progress=False)
    kb.save(folder)
    return folder


@pytest.fixture
def kb():
    return crux_nb.knowledge_base(id="t")
