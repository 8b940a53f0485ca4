"""The relevance ranking's joint pool: graph candidates compete with the retrieve step's next candidates, a
structural neighbour earns its place by relevance alone, and a short expansion says why (issue 31)."""

from __future__ import annotations

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import ParameterError
from crux_nb.retrieval import expand_relations, retrieve
from crux_nb.retrieval.expand.joint import DOCUMENT_GRAPH_WEIGHT as GRAPH_WEIGHT
from crux_nb.testing import make_kb


def ids(hits):
    return [h.chunk_id for h in hits]


def mentions(kb, pairs, source="s"):
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:{source}:{c}", "to_ref": f"entity:{e}", "type": "mentions",
                                "evidence": [f"chunk:{source}:{c}"]} for c, e in pairs]))


def separate_sources():
    """Six one-chunk sources, no shared entity: the graph reaches nothing (each source is one chunk)."""
    texts = ["gateway launch plan gateway", "gateway launch", "launch notes", "gateway owner", "launch gateway review",
             "unrelated words"]
    return make_kb(chunks=[(f"d{i}", "c0", 0, t) for i, t in enumerate(texts)])


def test_with_no_graph_candidate_the_retrieve_tail_fills_the_budget():
    kb = separate_sources()
    plain = kb.recipe(steps=[retrieve(limit=5)]).retrieve("gateway launch")
    hits, trace = kb.recipe(steps=[retrieve(limit=2), expand_relations(limit=3)]).retrieve_with_trace("gateway launch")
    assert [h.source.id for h in hits] == [h.source.id for h in plain]  # equal budget, equal top-k
    details = trace.step("expand-relations").details
    assert details["expansions"] == () and len(details["filled"]) == 3
    for rank, (hit, record) in enumerate(zip(hits[2:], details["filled"]), start=3):
        assert hit.provenance.graph is None and hit.provenance.ranks == {"retrieve": rank}
        assert record.via == "retrieve" and record.ref == str(hit.ref) and record.edges == ()
        assert record.reason.graph == 0.0 and record.reason.relevance == record.score > 0


def test_graph_and_title_weight_zero_reproduce_retrieve_at_equal_budget_on_the_sample():
    kb = crux_nb.datasets.load_sample()
    kb.extract_entities(progress=False)
    plain = kb.recipe(steps=[retrieve(limit=5)])
    joint = kb.recipe(steps=[retrieve(limit=3), expand_relations(limit=2, graph_weight=0, title_weight=0)])
    questions = crux_nb.datasets.load_sample_questions()["question"]
    for question in questions:  # relevance alone: the graph's candidates and the tail rank exactly as retrieve does
        assert [str(h.ref) for h in joint.retrieve(question)] == [str(h.ref) for h in plain.retrieve(question)]


def one_source():
    """One source of five chunks in order; 'seed' matches the query, its neighbours differ in relevance."""
    rows = [("s", "before", 0, "unrelated opening words"), ("s", "seed", 1, "gateway launch gateway launch"),
            ("s", "after", 2, "the gateway"), ("s", "far", 3, "nothing here"), ("s", "linked", 4, "nothing either")]
    kb = make_kb(chunks=rows + [("t", "other", 0, "gateway launch review of the gateway")])
    return kb


def test_a_structural_neighbour_without_relevance_is_left_out_and_the_trace_says_why():
    kb = one_source()
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=3, compete=False, types=["sequence"])]
                            ).retrieve_with_trace("gateway launch")
    assert ids(hits) == ["seed", "after"]  # 'before' is adjacent but the query is not about it
    step = trace.step("expand-relations")
    assert step.details["skipped"]["gated"] == 1
    (warning,) = [w for w in step.warnings if w.startswith("expand_relations added")]
    assert "added 1 of 3 hits" in warning and "1 structural neighbours with no relevance" in warning
    assert "compete=True would let the retrieve step's next candidates fill the budget" in warning


def test_a_structural_neighbour_competes_on_relevance_alone():
    kb = one_source()
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1, types=["sequence"])]
                            ).retrieve_with_trace("gateway launch")
    # 'after' is adjacent to the best hit but less relevant than the other source's chunk: adjacency adds nothing
    assert [str(h.ref) for h in hits] == ["chunk:s:seed", "chunk:t:other"]
    assert trace.step("expand-relations").details["filled"][0].ref == "chunk:t:other"


def test_an_entity_link_lifts_a_candidate_over_an_equally_relevant_tail_chunk():
    rows = [("s", "seed", 0, "gateway launch gateway"), ("s", "x", 1, "gateway review"), ("s", "y", 2, "gateway review")]
    kb = make_kb(chunks=rows)
    mentions(kb, [("seed", "keystone"), ("y", "keystone")])
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1, types=["mentions"])]
                            ).retrieve_with_trace("gateway launch")
    assert ids(hits) == ["seed", "y"]  # x and y tie on relevance; y shares a specific entity with the hit
    record = trace.step("expand-relations").details["expansions"][0]
    assert record.via == "graph" and record.path == ("chunk:s:seed", "entity:keystone", "chunk:s:y")
    assert record.score == pytest.approx(record.reason.relevance + GRAPH_WEIGHT * 0.5 ** 0.5)  # graph 1/2 via keystone
    assert kb.recipe(steps=[retrieve(limit=2)]).retrieve("gateway launch")[1].chunk_id == "x"  # retrieve's own order


def test_a_filter_applies_to_the_tail_too():
    kb = make_kb(chunks=[(f"d{i}", "c0", 0, t) for i, t in enumerate(["gateway launch", "gateway", "launch", "gateway"])],
                 metadata={"d0": {"team": "a"}, "d1": {"team": "b"}, "d2": {"team": "a"}, "d3": {"team": "b"}})
    hits = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=3)]).retrieve("gateway launch",
                                                                                     filter={"team": "a"})
    assert [h.source.id for h in hits] == ["d0", "d2"]


def test_when_the_retrieve_step_has_nothing_more_the_warning_says_so():
    kb = separate_sources()
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=20)]).retrieve_with_trace("owner")
    assert len(hits) == 1
    (warning,) = trace.step("expand-relations").warnings
    assert warning == ("expand_relations added 0 of 20 hits: 0 candidates in all; the retrieve step ranked no "
                       "further chunk.")


@pytest.mark.parametrize("kwargs, name", [({"compete": "yes"}, "compete"), ({"compete": 1}, "compete"),
                                          ({"compete": True, "ranking": "upstream"}, "compete"),
                                          ({"graph_weight": -1}, "graph_weight"),
                                          ({"graph_weight": 0.5, "ranking": "upstream"}, "graph_weight")])
def test_invalid_joint_parameters(kwargs, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        expand_relations(**kwargs)


def test_the_new_parameters_show_only_when_changed():
    assert "compete" not in repr(expand_relations()) and "graph_weight" not in repr(expand_relations())
    step = expand_relations(compete=False, graph_weight=0.25)
    assert step.to_dict()["config"]["compete"] is False and "graph_weight=0.25" in repr(step)
    assert expand_relations().competes and not step.competes and not expand_relations(ranking="upstream").competes


def test_the_expansion_view_names_the_hits_filled_from_retrieve():
    from crux_nb.widgets import expansion_data
    from crux_nb.widgets._expansion_html import static_html

    kb = separate_sources()
    result = kb.recipe(steps=[retrieve(limit=2), expand_relations(limit=3)]).retrieve_with_trace("gateway launch")
    data = expansion_data(result, kb=kb)
    assert data.expansions == () and data.filled == tuple(str(h.ref) for h in result.hits[2:])
    html = static_html(data)
    assert "3 hits from the retrieve step's next candidates" in html and data.filled[0] in html


def test_the_default_graph_weight_follows_the_corpus_shape():
    from crux_nb.retrieval.expand import DOCUMENT_GRAPH_WEIGHT, PASSAGE_GRAPH_WEIGHT

    passages = separate_sources()  # six sources of one chunk each
    documents = one_source()  # a five-chunk source and a one-chunk one: 3 chunks per source
    for kb, expected in ((passages, PASSAGE_GRAPH_WEIGHT), (documents, DOCUMENT_GRAPH_WEIGHT)):
        trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1)]).retrieve_with_trace("gateway").trace
        assert trace.step("expand-relations").details["graph_weight"] == expected
        explicit = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=1, graph_weight=0.5)])
        assert explicit.retrieve_with_trace("gateway").trace.step("expand-relations").details["graph_weight"] == 0.5
    assert PASSAGE_GRAPH_WEIGHT > DOCUMENT_GRAPH_WEIGHT
    upstream = passages.recipe(steps=[retrieve(limit=1), expand_relations(limit=1, ranking="upstream")])
    assert "graph_weight" not in upstream.retrieve_with_trace("gateway").trace.step("expand-relations").details


def test_the_shortfall_word_suggests_compete_only_where_it_is_open():
    kb = one_source()
    for steps in ([retrieve(limit=1), expand_relations(limit=3, types=["sequence"], ranking="upstream")],
                  [custom_seeds(), expand_relations(limit=3, types=["sequence"])]):
        trace = kb.recipe(steps=steps).retrieve_with_trace("gateway launch").trace
        (warning,) = [w for w in trace.step("expand-relations").warnings if w.startswith("expand_relations added")]
        assert "compete=True" not in warning and "retrieve step ranked" not in warning


def custom_seeds():
    from crux_nb.retrieval import custom_step

    return custom_step(lambda inp, ctx: [ctx.knowledge.reader.hydrate("chunk:s:seed")], id="seed-hits",
                       phase=("queries", "hits"))
