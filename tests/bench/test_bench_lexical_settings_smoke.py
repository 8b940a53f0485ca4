"""Smoke test for ``bench/lexical_settings.py``: the ``--small`` run prints one row per setting with Recall@5 and
Recall@10 per corpus, marks the default, and writes a complete summary comparing it with today's behaviour."""

from __future__ import annotations

from pathlib import Path

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "lexical_settings.py"


def test_small_run_writes_table_and_summary(tmp_path):
    out = tmp_path / "lexical_settings_small.md"
    proc, text = run_small(SCRIPT, out)
    assert "## Results" in proc.stdout
    table = [line for line in text.split("## Results", 1)[1].splitlines() if line.startswith("|")]
    header = [c.strip() for c in table[0].strip("|").split("|")]
    assert header[:3] == ["setting", "pyref R@5", "pyref R@10"] and header[-2:] == ["mean R@5", "mean R@10"]
    assert {"sample R@5", "sample R@10"} <= set(header)  # carol and musique too when the shared data is there
    rows = {c[0]: c[1:] for c in ([x.strip() for x in line.strip("|").split("|")] for line in table[2:])}
    assert any(name.startswith("today: bm25s split") for name in rows)
    assert sum(name.endswith("[default]") for name in rows) == 1
    for cells in rows.values():
        assert len(cells) == len(header) - 1 and all(0.0 <= float(c) <= 1.0 for c in cells)
        assert all(float(r5) <= float(r10) for r5, r10 in zip(cells[0::2], cells[1::2]))
    summary = load_summary(out)
    assert summary_problems(summary, "lexical_settings") == []
    assert {r["measure"] for r in summary} >= {"pyref Recall@5, default lexical settings",
                                               "sample Recall@10, default lexical settings"}
    assert all(r["baseline_name"].startswith("today") and 0 <= r["ours"] <= 1 for r in summary)
