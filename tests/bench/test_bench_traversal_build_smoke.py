"""Smoke test for ``bench/traversal_build.py``: the ``--small`` run (10k chunks / 50k edges; this checkout and the
code before the bulk build, each in its own process; the script exits non-zero unless both sides' traversal index
arrays hash equal) writes a table and a summary with both sides timed. Timings are reported, never asserted."""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "traversal_build.py"


def test_traversal_build_small(tmp_path):
    out = tmp_path / "traversal_build_small.md"
    _proc, text = run_small(SCRIPT, out, "--repeats", "1")
    assert "the arrays hash equal" in text and "code before the bulk build (7291b3a)" in text
    rows = load_summary(out)
    assert summary_problems(rows, "traversal_build") == []
    assert len(rows) == 3 and all(r["measure"].endswith(", 10,000 chunks / 50,000 edges") for r in rows)
    assert all(r["ours"] > 0 and r["baseline"] > 0 for r in rows)
    build = [r for r in rows if r["measure"].startswith("reader.traversal_index build")]
    assert len(build) == 1 and build[0]["verdict"] == ("pass" if build[0]["ours"] <= build[0]["baseline"] else "miss")
    table = [line for line in text.splitlines() if line.startswith("| reader.traversal_index build")]
    assert len(table) == 1 and table[0].rstrip(" |").endswith(build[0]["verdict"])
