"""The relevance ranking's source-name match (``expand_relations(title_weight=)``, issue 31 round 5): a candidate
whose source the query names gains ``title_weight`` x the share of the name it holds, and can come from deeper in
the retrieve step's ranking than the budget."""

from __future__ import annotations

import pytest

from crux_nb.errors import ParameterError
from crux_nb.retrieval import expand_relations, retrieve
from crux_nb.retrieval.expand.titles import TITLE_WEIGHT, source_names
from crux_nb.testing import make_kb

QUERY = "How does break end a loop early?"


def statements():
    """One-chunk sources named after Python statements: BM25 ranks `for` and `while` (more `loop`) above `break`,
    the source the query names."""
    return make_kb(chunks=[("for", "c0", 0, "The for statement runs its loop body once per item of the loop iterable."),
                           ("while", "c0", 0, "The while statement repeats its loop body while the loop condition holds."),
                           ("break", "c0", 0, "Ends the nearest enclosing loop, skipping its else clause."),
                           ("pass", "c0", 0, "A null operation: nothing happens.")])


def test_a_chunk_of_the_source_the_query_names_outranks_a_more_relevant_one():
    kb = statements()
    plain = [h.source.id for h in kb.recipe(steps=[retrieve(limit=3)]).retrieve(QUERY)]
    assert plain[2] == "break"  # BM25 alone: third
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1)]).retrieve_with_trace(QUERY)
    assert [h.source.id for h in hits] == [plain[0], "break"]
    details = trace.step("expand-relations").details
    assert details["title_weight"] == TITLE_WEIGHT
    (record,) = details["filled"]  # from the retrieve tail, read deeper than the budget of one
    assert record.via == "retrieve" and hits[1].provenance.ranks == {"retrieve": 3}
    assert record.reason.title == pytest.approx(TITLE_WEIGHT)  # the query holds the whole name
    assert record.score == pytest.approx(record.reason.relevance + record.reason.title)
    assert record.reason.to_dict()["title"] == pytest.approx(TITLE_WEIGHT)


def test_title_weight_zero_is_the_ranking_by_relevance():
    kb = statements()
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1, title_weight=0)]).retrieve_with_trace(QUERY)
    plain = kb.recipe(steps=[retrieve(limit=2)]).retrieve(QUERY)
    assert [h.source.id for h in hits] == [h.source.id for h in plain]
    (record,) = trace.step("expand-relations").details["filled"]
    assert record.reason.title == 0.0 and "title" not in record.reason.to_dict()


def test_a_name_token_every_source_shares_weighs_little():
    kb = make_kb(chunks=[(name, "c0", 0, "Variables and their scopes.")
                         for name in ("command/set", "command/unset", "manual/cmake-language.7")])
    names = source_names(kb.state)
    rows = {sid: row for row, sid in enumerate(kb.state.chunks["source_id"])}
    both = names.match("the set command", [rows["command/set"], rows["command/unset"]])
    assert both[0] == pytest.approx(1.0)  # the whole name
    assert 0 < both[1] < 0.5  # only `command`, which two of three names hold
    assert names.match("the set command", [rows["manual/cmake-language.7"]]).tolist() == [0.0]
    assert names.match("nothing named", list(rows.values())).tolist() == [0.0, 0.0, 0.0]
    assert source_names(kb.state) is names  # built once per state


@pytest.mark.parametrize("value", [-0.1, "high", float("nan")])
def test_title_weight_is_validated(value):
    with pytest.raises(ParameterError, match="title_weight"):
        expand_relations(title_weight=value)


def test_title_weight_is_the_relevance_rankings_and_shows_when_changed():
    with pytest.raises(ParameterError, match="title_weight"):
        expand_relations(ranking="upstream", title_weight=0.3)
    assert "title_weight" not in repr(expand_relations())
    step = expand_relations(limit=2, title_weight=0.5)
    assert "title_weight=0.5" in repr(step) and step.to_dict()["config"]["title_weight"] == 0.5
    assert expand_relations().titles == TITLE_WEIGHT and expand_relations(ranking="upstream").titles == 0.0
