"""Smoke test for ``bench/lexical_incremental.py``: the ``--small`` run finishes (it asserts the incremental
scores equal bm25s') and writes a complete table and summary. Timings are reported, never asserted."""

from __future__ import annotations

import re
from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "lexical_incremental.py"


def test_small_run_writes_table_and_summary(tmp_path):
    out = tmp_path / "lexical_incremental_small.md"
    proc, text = run_small(SCRIPT, out)
    assert "## Results" in proc.stdout and "scores identical" in text and "400 documents" in text
    row = next(line for line in text.splitlines() if line.startswith("| next query after adding"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert all(float(c) > 0 for c in cells[1:4]) and re.fullmatch(r"pass|miss", cells[-1])
    rows = load_summary(out)
    assert summary_problems(rows, "lexical_incremental") == []
    change = next(r for r in rows if r["measure"].startswith("next query"))
    assert change["baseline"] > 0 and change["target"] == "ratio < 0.25" and change["verdict"] == cells[-1]
