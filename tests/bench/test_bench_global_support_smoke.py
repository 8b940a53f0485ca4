"""Smoke test for ``bench/global_support.py``: the question file is balanced, and the ``--small`` run (the
sample corpus) reports the separation with the corpus idf against the map without it."""

from __future__ import annotations

import csv
from collections import Counter
from pathlib import Path

from bench_summary import by_measure, load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "global_support.py"


def test_questions_are_ten_of_each_kind_per_corpus():
    with open(ROOT / "bench" / "global_support_questions.csv", newline="", encoding="utf-8") as fh:
        rows = list(csv.DictReader(fh))
    assert Counter((r["corpus"], r["kind"]) for r in rows) == {
        (c, k): 10 for c in ("sample", "carol", "python") for k in ("answerable", "unanswerable")}
    assert len({r["question"] for r in rows}) == len(rows)


def test_global_support_small(tmp_path):
    out = tmp_path / "global_support_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "## Answerable flagged / unanswerable passed, by threshold" in text and "| sample |" in text
    rows = load_summary(out)
    assert summary_problems(rows, "global_support") == []
    measures = by_measure(rows)
    passed = measures["unanswerable passed at 0.25, scan all, detailed (of 10)"]
    flagged = measures["answerable flagged at 0.25, scan all, detailed (of 10)"]
    # the idf lets fewer unanswerable questions through than the map without it, at no more false alarms
    assert passed["ours"] < passed["baseline"] and flagged["ours"] <= flagged["baseline"] + 1
