"""Every Python block of the README runs, each in a fresh interpreter (so no block leans on another's state)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
BLOCKS = re.findall(r"^```python\n(.*?)^```", (ROOT / "README.md").read_text(encoding="utf-8"), re.S | re.M)
# optional extras a block may need; without them the block must fail on exactly that import
OPTIONAL = ("dask",)


def test_the_readme_has_python_blocks():
    assert len(BLOCKS) >= 3


@pytest.mark.parametrize("index", range(len(BLOCKS)))
def test_readme_block_runs_in_a_fresh_process(index, tmp_path):
    block = BLOCKS[index]
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    missing = [m for m in OPTIONAL if re.search(rf"^import {m}\b|^from {m}\b", block, re.M)
               and importlib.util.find_spec(m) is None]
    if missing:
        assert done.returncode != 0 and f"No module named '{missing[0]}'" in done.stderr, done.stderr[-2000:]
    else:
        assert done.returncode == 0, f"README block {index + 1} failed:\n{block}\n{done.stderr[-3000:]}"
