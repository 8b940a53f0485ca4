"""Smoke test for ``bench/add_edges.py``: the ``--small`` run finishes, both paths agreed (the script
exits non-zero otherwise) and its summary holds a positive time for each path.

Timings are reported, never asserted (they depend on the machine).
"""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "add_edges.py"


def _timing_problems(rows: list[dict]) -> list[str]:
    problems = []
    measures = [r["measure"] for r in rows]
    for prefix in ("add_edges, ", "add_entities, "):
        if not any(m.startswith(prefix) for m in measures):
            problems.append(f"no {prefix!r} row")
    for row in rows:
        if not all(isinstance(row[k], (int, float)) and row[k] > 0 for k in ("ours", "baseline")):
            problems.append(f"{row['measure']}: no positive timing for both paths")
    return problems


def test_add_edges_small(tmp_path):
    out = tmp_path / "add_edges_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "| add_edges, 25,000 edges (s)" in text and "rejected by both" in text
    rows = load_summary(out)
    assert summary_problems(rows, "add_edges") == []
    assert _timing_problems(rows) == []
    broken = [dict(rows[0], baseline=None)] + rows[1:]
    assert _timing_problems(broken) and _timing_problems([r for r in rows if "add_edges" not in r["measure"]])
