"""Smoke test for ``bench/entity_quality.py``: the ``--small`` run (the Carol's first 40,000 characters)
finishes and reports recall and a junk share for the rule extractor; the scoring helpers can fail."""

from __future__ import annotations

import sys
from pathlib import Path

import pandas as pd
import pytest

from crux_nb.testing import require_system
from bench_summary import by_measure, load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "entity_quality.py"
CAROL = ROOT.parent / "shared" / "data" / "christmas-carol"
sys.path.insert(0, str(ROOT / "bench"))

pytestmark = pytest.mark.shared_data


def test_entity_quality_small(tmp_path):
    require_system(CAROL.is_dir(), "the shared Christmas Carol data is missing")
    out = tmp_path / "entity_quality_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "carol / rules" in text
    rows = load_summary(out)
    assert summary_problems(rows, "entity_quality") == []
    measures = {m: r for m, r in by_measure(rows).items() if m.startswith("carol: rules")}
    recall = next(r for m, r in measures.items() if m.endswith("character recall"))
    assert 0 < recall["ours"] <= 1
    assert any(m.endswith("entities") and r["ours"] > 0 for m, r in measures.items())


def test_scoring_helpers_can_fail():
    from entity_quality import character_scores, junk_scores, sample

    entities = pd.DataFrame({"canonical_name": ["Scrooge", "Mr. Scrooge", "AND"], "aliases": [("Ebenezer Scrooge",), (), ()]})
    scores = character_scores(entities, {"Scrooge": {"scrooge", "mr. scrooge"}, "Belle": {"belle"}})
    assert scores["recall"] == 0.5 and scores["missing"] == ["Belle"] and scores["split"] == ["Scrooge"]
    labels = {("x", "AND"): "junk", ("x", "Scrooge"): "ok"}
    js = junk_scores("x", ["AND", "Scrooge", "Unread"], labels)
    assert js["junk_share"] == 0.5 and js["unlabelled"] == ["Unread"]
    assert sample(list(range(10)), 5) == [0, 2, 4, 6, 8]


def test_corpora_option_parses_and_rejects():
    import argparse

    from entity_quality import CORPORA, _names

    parse = _names(CORPORA)
    assert parse("cmake, pyref") == ("cmake", "pyref")
    for bad in ("cmake,nope", " , "):
        with pytest.raises(argparse.ArgumentTypeError):
            parse(bad)


def test_cmake_labels_are_ok_or_junk_once_each():
    from entity_quality import BENCH, load_labels

    labels = load_labels(BENCH / "cmake_entity_labels.csv")
    with (BENCH / "cmake_entity_labels.csv").open(encoding="utf-8") as fh:
        n_rows = sum(1 for _ in fh) - 1
    assert len(labels) == n_rows >= 50  # one label per (extractor, name): a repeated row would hide a relabel
    assert set(labels.values()) <= {"ok", "junk"}
