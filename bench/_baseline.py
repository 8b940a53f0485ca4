"""Earlier code beside this checkout's, for benchmarks that time both in one run: ``git archive`` of a ref
(default :data:`BEFORE_ISSUE_35`) unpacked once into ``bench/out/baseline-<commit>``, and one side of a
measurement run as a subprocess with ``PYTHONPATH`` set to a checkout (so each side imports its own ``crux_nb``)."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
import tarfile
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "bench" / "out"
# The last commit of main before issue 35's work was merged (34d784a's first parent). The issue-35 benchmarks
# compare against "today's code" as it was when the issue was filed; once merged, ``main`` *is* the new code
# (and a CI clone may have no local ``main`` at all), so they pin this commit; ``--baseline REF`` overrides it.
BEFORE_ISSUE_35 = "fe656db"
# main just before the traversal index was built in bulk (merge of branch travidx): bench/traversal_build.py's
# baseline; it reads the saved-parts layout, which fe656db cannot
BEFORE_BULK_TRAVERSAL_INDEX = "7291b3a"
# main before the graph's indexes were built from one factorisation of the refs, in the background from the start
# of the open (issue 35, open part, 2026-12-05): bench/open_first.py's baseline
BEFORE_SHARED_FACTORISATION = "3a2edf3"
# main before BM25 tokenization split ASCII text by str.translate (issue 35, 2026-12-06): bench/tokenize_cost.py's
# baseline
BEFORE_FAST_TOKENIZE = "a6c9ea6"


def checkout(ref: str = BEFORE_ISSUE_35) -> Path:
    """A directory holding ``ref``'s tree (made once per commit; needs the repository's history)."""
    found = subprocess.run(["git", "rev-parse", "--verify", f"{ref}^{{commit}}"], cwd=ROOT, capture_output=True,
                           text=True)
    if found.returncode:
        raise RuntimeError(f"no commit {ref!r} in {ROOT} (a shallow clone? the baseline needs the history): "
                           f"{found.stderr.strip()}")
    commit = found.stdout.strip()
    target = OUT / f"baseline-{commit[:12]}"
    if not (target / "crux_nb").is_dir():
        archive = subprocess.run(["git", "archive", commit], cwd=ROOT, check=True, capture_output=True).stdout
        OUT.mkdir(parents=True, exist_ok=True)
        # unpacked beside the target, then renamed: a benchmark running at the same time never sees half a tree
        partial = Path(tempfile.mkdtemp(prefix=f"{target.name}-", dir=OUT))
        with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
            tar.extractall(partial, filter="data")
        try:
            partial.rename(target)
        except OSError:  # another process got there first (its tree is the same commit's)
            shutil.rmtree(partial, ignore_errors=True)
    return target


def run_side(code: Path, script: Path, args: list[str], *, env: dict | None = None) -> dict:
    """Run ``script`` (a bench file of this checkout) with ``crux_nb`` imported from ``code``; its last stdout
    line is JSON, returned."""
    environ = {**os.environ, "PYTHONPATH": str(code), **(env or {})}
    done = subprocess.run([sys.executable, str(script), *args], env=environ, capture_output=True, text=True)
    if done.returncode:  # the side's traceback, not only its exit status
        raise RuntimeError(f"{script.name} {' '.join(args)} with crux_nb from {code} failed:\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1])


def frame_digests(frames: dict, *, index: bool = False) -> dict[str, str]:
    """A short hash of every column of ``frames`` (table name -> DataFrame), keyed ``table.column``; with
    ``index`` each column's hash covers the row labels too.

    Per column, so results of two code versions compare over the columns both have: later work may add a
    column (``entities.raw_type``) without changing what the benchmark compares. A side imports this as
    ``from _baseline import frame_digests`` (the script's own folder), since its ``bench`` package may be the
    baseline's, older than this file."""
    import hashlib

    import pandas as pd

    out = {}
    for table, frame in frames.items():
        for column in frame.columns:
            values = pd.util.hash_pandas_object(frame[column].astype(str), index=index).values
            out[f"{table}.{column}"] = hashlib.sha256(values.tobytes()).hexdigest()[:12]
    return out


def digest_differences(ours: dict[str, str], theirs: dict[str, str]) -> list[str]:
    """The ``table.column`` keys both sides have whose hashes differ (empty: the same results)."""
    if not set(ours) & set(theirs):
        return ["no column in common"]
    return sorted(k for k in set(ours) & set(theirs) if ours[k] != theirs[k])
