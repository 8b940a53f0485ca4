"""Smoke test for ``bench/store_cost.py``: the ``--small`` run (10k chunks / 50k edges; build + save, open + first
query, add_text + save, a source with edges + save, a removal + save, each step in a fresh process, for this
checkout and the code before issue 35) writes its table and summary with both sides' figures, and the same knowledge base on both sides. Timings are reported,
never asserted; bytes written are checked for sense (a save after one small source writes less than a full save
on this checkout, where parts are reused)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_summary import by_measure, load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "store_cost.py"
SIZE = ", 10,000 chunks / 50,000 edges"


def test_store_cost_small(tmp_path):
    out = tmp_path / "store_cost_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "10,000 chunks, 50,000 edges" in text and "| code before issue 35 (fe656db) | this checkout |" in text
    rows = load_summary(out)
    assert summary_problems(rows, "store_cost") == []
    assert all(r["measure"].endswith(SIZE) for r in rows)
    m = {k.removesuffix(SIZE): v for k, v in by_measure(rows).items()}
    # the code before issue 35 compiled nothing in the background: no wait to measure there
    waited = m.pop("then waited for the compiled traversal (s)")
    assert waited["ours"] >= 0 and waited["baseline"] is None
    assert all(r["ours"] > 0 and r["baseline"] > 0 for r in m.values())
    targeted = {k for k, r in m.items() if r["target"]}
    shares = ["save after one small source, share of a full save's bytes",
              "save after one small source with 100 edges, share of a full save's bytes",
              "save after removing one source with its edges, share of a full save's bytes"]
    assert targeted == {"open + first query (s)", "warm query p95 (ms)", "one small add_text (s)", *shares}
    for measure in shares:  # parts reused here (edges beside their chunks); the old code rewrote everything
        assert m[measure]["ours"] < 0.5 and m[measure]["baseline"] > 0.9, measure
    share = m[shares[0]]
    assert share["ours"] * m["full save written (MB)"]["ours"] == pytest.approx(
        m["save after it, written (MB)"]["ours"], rel=1e-3)
