"""Smoke test for ``bench/edit_cost.py``: the ``--small`` run (10k chunks / 50k edges, this checkout and the code
before issue 35 in their own processes; the script exits non-zero unless both sides' frames hash equal after every
edit) writes a table and summary with one row per edit, both sides timed. Timings are reported, never asserted."""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "edit_cost.py"
EDITS = ("add_text (a new source)", "add_text (replace a source)", "remove (one source)", "add_edges (5 edges")


def test_edit_cost_small(tmp_path):
    out = tmp_path / "edit_cost_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "frames hashed equal" in text and "code before issue 35 (fe656db)" in text
    rows = load_summary(out)
    assert summary_problems(rows, "edit_cost") == []
    assert len(rows) == len(EDITS) and all(r["measure"].startswith(e) for r, e in zip(rows, EDITS))
    assert all(r["measure"].endswith(", 10,000 chunks / 50,000 edges (s)") for r in rows)
    assert all(r["ours"] > 0 and r["baseline"] > 0 and r["target"].startswith("ours < 1 ") for r in rows)
    table = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
             if line.startswith("| 10,000 / 50,000")]
    assert [r[-1] for r in table] == [r["verdict"] for r in rows]
