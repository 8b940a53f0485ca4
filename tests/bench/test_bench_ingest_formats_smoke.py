"""Smoke test for ``bench/ingest_formats.py``: the ``--small`` run reads CMake's reStructuredText help and the
HTML, notebooks and PDFs made from it, and writes a complete table and summary. Timings are reported, never
asserted."""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

from crux_nb.testing import require_system

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "ingest_formats.py"


def test_small_run_writes_table_and_summary(tmp_path):
    try:
        import cmake  # noqa: F401
    except ImportError:
        require_system(False, "cmake (the dev extra) ships the help pages this benchmark reads")
    out = tmp_path / "ingest_formats_small.md"
    _, text = run_small(SCRIPT, out)
    for label in ("reStructuredText", "HTML", "Jupyter notebook", "PDF", "Markdown"):
        row = next(line for line in text.splitlines() if line.startswith(f"| {label}"))
        cells = [c.strip() for c in row.strip("|").split("|")]
        assert int(cells[1]) > 0 and float(cells[4]) > 0, row  # files read, MB/s
    assert "| this branch |" in text
    rows = load_summary(out)
    assert summary_problems(rows, "ingest_formats") == []
    share = next(r for r in rows if r["measure"].startswith("share of files"))
    assert share["ours"] == 100.0  # Help/command holds only .rst pages: every one is read
