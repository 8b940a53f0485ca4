"""Smoke test for ``bench/first_call.py``: the ``--small`` run (two fresh processes, the first with an empty numba
cache: compiling dominates, about a minute on a loaded 2-core machine) writes its table and summary, and the
compiled traversal became ready in both processes. Timings are reported; only the summary's verdicts are
checked against its own figures (the target is the machine's business)."""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "first_call.py"
PROCESSES = ("fresh install (empty numba cache)", "later process (cache filled)")


def test_first_call_small(tmp_path):
    out = tmp_path / "first_call_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "A 1,000-chunk, 12,500-edge graph" in text
    table = [[c.strip() for c in line.strip("|").split("|")] for line in text.splitlines()
             if line.startswith("| ") and any(p in line for p in PROCESSES)]
    assert sorted((r[0], r[1]) for r in table) == sorted((p, c) for p in PROCESSES for c in ("expand", "reach"))
    for row in table:  # every query ran and the compiled loop was ready after at least one call
        assert float(row[2]) > 0 and int(row[5]) >= 1 and float(row[6]) > 0, row
    rows = load_summary(out)
    assert summary_problems(rows, "first_call") == []
    targets = [r for r in rows if r["target"]]
    assert len(targets) == 4 and all(r["measure"].endswith("slowest call until compiled (s)") for r in targets)
    assert all(r["ours"] > 0 and r["verdict"] == ("pass" if r["ours"] < 1 else "miss") for r in targets)
    assert [r[-1] for r in table] == [r["verdict"] for r in targets]
