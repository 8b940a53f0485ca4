"""Warnings and errors instead of silent empties (issue 34): a filter value no chunk holds, gold items that
name nothing, the cold index build apart from per-question latency, drill-down by question text, a graph
extracted by another model than the configured one, and long sources cut into extraction calls."""

from __future__ import annotations

import time
import warnings

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import NotFoundError, ParameterError
from crux_nb.models import OfflineModel
from crux_nb.models.offline import EXTRACT_BATCH_CHARS


@pytest.fixture()
def grouped():
    kb = crux_nb.knowledge_base(id="grouped")
    kb.add_text("a.md", "# Launch\n\nThe launch statement moved to May.", metadata={"group": "statement"})
    kb.add_text("b.md", "# Plan\n\nThe launch plan is ready.", metadata={"group": "plan"})
    return kb


def test_a_filter_value_no_chunk_holds_warns_with_the_closest_values(grouped):
    with pytest.warns(UserWarning, match=r"no chunk has 'group' = 'statment'.*\(closest: 'statement'\)"):
        assert len(grouped.recipe().retrieve("launch", filter={"group": "statment"})) == 0
    with pytest.warns(UserWarning, match=r"no chunk has 'source_id' = 'zzz'.*\(values: 'a.md', 'b.md'\)"):
        grouped.recipe().retrieve("launch", filter={"source_id": "zzz"})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a value some chunk holds: no warning
        hits = grouped.recipe().retrieve("launch", filter={"group": "statement"})
    assert [h.source.id for h in hits] == ["a.md"]


def test_gold_items_that_name_nothing_are_an_error_naming_them(grouped):
    questions = pd.DataFrame({"id": ["q1", "q2"], "question": ["When is the launch?", "Is the plan ready?"],
                              "gold": [["chunk:nope:c0000", "a.md"],
                                       [{"source_id": "missing.md", "phrase": "plan is ready"}]]})
    with pytest.raises(NotFoundError, match=r"2 gold item\(s\).*'chunk:nope:c0000' \(question 'q1'\), "
                                            r"'missing.md' \(question 'q2'\)"):
        crux_nb.evaluate({"bm25": grouped.recipe()}, questions)
    good = questions.assign(gold=[["chunk:a.md:c0000"], [{"source_id": "b.md", "phrase": "plan is ready"}]])
    assert crux_nb.evaluate({"bm25": grouped.recipe()}, good).summary()["recall@1"].iloc[0] == 1.0


class _ColdRecipe:
    """A recipe whose first call pays a build (as a lexical index built on first use)."""

    def __init__(self):
        self.calls = 0

    def retrieve_with_trace(self, query):
        self.calls += 1
        time.sleep(0.3 if self.calls == 1 else 0.001)
        return type("Result", (), {"hits": [], "trace": None})()


def test_the_cold_build_is_apart_from_per_question_latency():
    questions = pd.DataFrame({"question": ["one?", "two?", "three?"], "gold": [["a"], ["a"], ["a"]]})
    ev = crux_nb.evaluate({"cold": _ColdRecipe()}, questions)
    row = ev.summary().loc["cold"]
    assert row["cold_ms"] >= 300 and row["latency_p95_ms"] < 150
    assert ev.to_frame()["cold"].tolist() == [True, False, False]


def test_drilldown_takes_the_question_text(grouped):
    questions = pd.DataFrame({"question": ["When is the launch?", "Is the plan ready?"], "gold": [["a.md"], ["b.md"]]})
    ev = crux_nb.evaluate({"bm25": grouped.recipe()}, questions)
    assert ev.drilldown("Is the plan ready?").question_id == "q002"
    assert ev.drilldown("  is the PLAN  ready? ").question_id == "q002"  # case and spacing as typed
    assert ev.drilldown("q001").question_id == "q001"
    with pytest.raises(ParameterError, match="a question id .*its text"):
        ev.drilldown("Where is the launch?")


def test_open_notes_a_graph_from_another_extractor(tmp_path):
    kb = crux_nb.knowledge_base(id="stale")
    kb.add_text("a.md", "# People\n\nAda Lovelace met Charles Babbage in London. Ada Lovelace wrote notes.")
    kb.extract_entities(OfflineModel(name="older"), progress=False)
    kb.save(tmp_path / "old")
    with pytest.warns(UserWarning, match=r"entity graph of 1 source\(s\) was extracted by a model with fingerprint "
                                         r".*not by the configured model \('offline'"):
        crux_nb.open(tmp_path / "old")
    kb.extract_entities(progress=False)  # today's offline model: the graph is current
    kb.save(tmp_path / "new")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        crux_nb.open(tmp_path / "new")


def test_a_long_source_is_cut_into_extraction_calls():
    sentence = "Ada Lovelace met Charles Babbage in London to discuss the Analytical Engine. "
    text = "\n\n".join(sentence * 12 for _ in range(int(2.2 * EXTRACT_BATCH_CHARS / (12 * len(sentence)))))
    kb = crux_nb.knowledge_base(id="long")
    kb.add_text("long.md", text)
    result = kb.extract_entities(progress=False)
    assert result.calls == 3 and result.sources_extracted == 1  # 2.2 batches of text -> 3 calls
    assert "Ada Lovelace" in set(kb.entities["canonical_name"])
