"""Smoke test for ``bench/models_quality.py``'s report files: the ``--small`` run writes a Markdown report
with the printed table and a summary JSON (recall against the hand lists, grounding against its 100 % target).

tests/models/test_bench_smoke.py checks the measured values themselves (through ``--json``).
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench_summary import by_measure, load_summary, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "models_quality.py"


@pytest.fixture(scope="module")
def small_run(tmp_path_factory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("bench") / "models_quality_small.md"
    proc = subprocess.run([sys.executable, "-m", "bench.models_quality", "--small", "--json", "--out", str(out)], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr[-4000:]
    return out, json.loads(proc.stdout.strip().splitlines()[-1])  # --json stays the last stdout line


def test_small_run_writes_a_markdown_report(small_run):
    out, result = small_run
    text = out.read_text(encoding="utf-8")
    assert text.startswith("# Offline model quality (small)")
    header = next(line for line in text.splitlines() if line.startswith("| corpus "))
    assert [c.strip() for c in header.strip("|").split("|")][:6] == ["corpus", "chunks", "listed", "gold", "found",
                                                                     "recall"]
    for row in result["rows"]:
        assert re.search(rf"^\| {re.escape(row['corpus'])} +\|", text, flags=re.M), row["corpus"]


def test_small_run_writes_a_summary(small_run):
    out, result = small_run
    rows = load_summary(out)
    assert summary_problems(rows, "models_quality") == []
    got = by_measure(rows)
    measured = [r for r in result["rows"] if not r.get("skipped")]
    assert measured, "no corpus was measured"
    assert len(rows) == sum(bool(r["gold"]) + (r["grounded"] is not None) for r in measured)
    for r in measured:
        recall = got[f"entity recall, {r['corpus']} (hand-listed entities found, count)"]
        assert (recall["ours"], recall["baseline"], recall["verdict"], recall["target"]) == (r["found"], r["gold"],
                                                                                              "info", None)
        assert recall["ratio"] == pytest.approx(r["recall"], abs=1e-4)
        grounding = got[f"report grounding, {r['corpus']} (share of {r['findings']} findings)"]
        assert (grounding["ours"], grounding["baseline"], grounding["target"]) == (r["grounded"], None, "ours == 1")
        assert grounding["verdict"] == ("pass" if r["grounded"] == 1.0 else "miss")
