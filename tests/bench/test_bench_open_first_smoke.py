"""Smoke test for ``bench/open_first.py``: the ``--small`` run (10k chunks / 50k edges built and saved by this
checkout, then opened and queried in fresh processes alternated with the baseline commit, this checkout both with
an empty cache of the graph's indexes, reopening, and opening the generation it saved after an edit) writes its table and summary with every side's figures.
Timings are reported, never asserted."""

from __future__ import annotations

from pathlib import Path

from bench_summary import by_measure, load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "open_first.py"


def test_open_first_small(tmp_path):
    out = tmp_path / "open_first_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "10,000 chunks, 50,000 edges" in text and "| code at 3a2edf3 | this checkout, first open | this checkout, reopened | this checkout, after its save |" in text
    assert "its save took" in text
    rows = load_summary(out)
    assert summary_problems(rows, "open_first") == []
    m = {k.removesuffix(" (median of 2)"): v for k, v in by_measure(rows).items()}
    names = ("open + first query (s)", "open (s)", "first query (s)", "CPU, open + first query (s)",
             "system CPU (s)", "peak RSS (MB)")
    assert set(m) == {name + label for name in names for label in ("", ", reopened", ", after its save")}
    assert all(r["ours"] > 0 and r["baseline"] > 0 for r in m.values())
    for label in ("", ", reopened", ", after its save"):
        both = m["open + first query (s)" + label]
        assert both["target"] and both["verdict"] in ("pass", "miss")
        parts = m["open (s)" + label]["ours"] + m["first query (s)" + label]["ours"]
        assert parts > 0.5 * both["ours"]  # medians of parts: near their sum's median, never far below
