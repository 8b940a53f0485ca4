"""Main's code beside this checkout's, for benchmarks that time both in one run: ``git archive`` of a ref
(default ``main``) unpacked once into ``bench/out/baseline-<commit>``, and one side of a measurement run as a
subprocess with ``PYTHONPATH`` set to a checkout (so each side imports its own ``crux_nb``)."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import tarfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"


def checkout(ref: str = "main") -> Path:
    """A directory holding ``ref``'s tree (made once per commit)."""
    commit = subprocess.run(["git", "rev-parse", ref], cwd=ROOT, check=True, capture_output=True,
                            text=True).stdout.strip()
    target = OUT / f"baseline-{commit[:12]}"
    if not (target / "crux_nb").is_dir():
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        target.mkdir(parents=True, exist_ok=True)
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(target, filter="data")
    return target


def run_side(code: Path, script: Path, args: list[str], *, env: dict | None = None) -> dict:
    """Run ``script`` (a bench file of this checkout) with ``crux_nb`` imported from ``code``; its last stdout
    line is JSON, returned."""
    environ = {**os.environ, "PYTHONPATH": str(code), **(env or {})}
    done = subprocess.run([sys.executable, str(script), *args], env=environ, check=True, capture_output=True,
                          text=True)
    return json.loads(done.stdout.strip().splitlines()[-1])
