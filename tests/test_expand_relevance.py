"""The relevance ranking of ``expand_relations`` (the default): specificity, seed rank, query relevance,
deterministic ties and the recorded reason."""

from __future__ import annotations

import pandas as pd
import pytest

from crux_nb.errors import ParameterError
from crux_nb.retrieval import custom_step, expand_relations, retrieve
from crux_nb.retrieval.expand.joint import DOCUMENT_GRAPH_WEIGHT as GRAPH_WEIGHT
from crux_nb.retrieval.expand.step import MIN_SHARE
from crux_nb.testing import make_kb


def ids(hits):
    return [h.chunk_id for h in hits]


def producer(*refs):
    def run(inp, ctx):
        return [ctx.knowledge.reader.hydrate(r) for r in refs]
    return custom_step(run, id="seed-hits", phase=("queries", "hits"))


def mentions(kb, pairs):
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:s:{c}", "to_ref": f"entity:{e}", "type": "mentions",
                                "evidence": [f"chunk:s:{c}"]} for c, e in pairs]))


def hub_kb():
    """seed mentions a hub (in 5 chunks) and a rare entity (in 2): 'rare' shares only the rare one."""
    names = ["seed", "h1", "h2", "h3", "rare"]
    kb = make_kb(chunks=[("s", c, i, f"text of {c}") for i, c in enumerate(names)])
    mentions(kb, [(c, "hub") for c in ["seed", "h1", "h2", "h3", "rare"]] + [("seed", "gem"), ("rare", "gem")])
    return kb


def test_a_specific_entity_is_a_stronger_link_than_a_hub():
    kb = hub_kb()
    step = expand_relations(types=["mentions"], limit=2, seeds=["hits"])
    hits, trace = kb.recipe(steps=[producer("chunk:s:seed"), step]).retrieve_with_trace("q")
    assert ids(hits) == ["seed", "rare", "h1"]  # rare: 1/5 (hub) + 1/2 (gem); h1..h3 tie at 1/5, by ref
    record = trace.steps[1].details["expansions"][0]
    assert record.reason.graph == pytest.approx(1 / 5 + 1 / 2)
    upstream = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], limit=2, seeds=["hits"],
                                                                            ranking="upstream")]).retrieve("q")
    assert ids(upstream) == ["seed", "h1", "h2"]  # upstream: every entity neighbour at distance 0, then by ref


def test_the_reason_records_path_entities_weights_and_score_parts():
    kb = hub_kb()
    hits, trace = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], limit=1)]
                            ).retrieve_with_trace("q")
    record = trace.steps[1].details["expansions"][0]
    assert record.path == ("chunk:s:seed", "entity:gem", "chunk:s:rare") and record.distance == 1
    assert record.reason.entities == (("entity:gem", 0.5),)
    assert record.reason.relevance == 0.0  # no retrieve step in this run: no query relevance to reuse
    # without a retrieve step there is no relevance: the score is the graph support alone
    assert record.reason.score == record.score == hits[1].score == pytest.approx(GRAPH_WEIGHT * record.reason.graph ** 0.5)
    assert record.reason.to_dict()["entities"] == [["entity:gem", 0.5]]
    assert hits[1].provenance.graph.path == record.path


def test_seed_rank_weights_paths():
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["a", "b", "via-b", "via-a"])])
    mentions(kb, [("a", "x"), ("via-a", "x"), ("b", "y"), ("via-b", "y")])
    hits = kb.recipe(steps=[producer("chunk:s:a", "chunk:s:b"), expand_relations(types=["mentions"])]).retrieve("q")
    assert ids(hits) == ["a", "b", "via-a", "via-b"]  # 1/2 from seed rank 0 beats 1/2 * 1/2 from rank 1
    assert hits[2].score == pytest.approx(GRAPH_WEIGHT * 0.5 ** 0.5) and hits[3].score == pytest.approx(GRAPH_WEIGHT * 0.5)


def test_query_relevance_from_retrieve_orders_equal_links():
    chunks = [("s", "seed", 0, "launch plan for the gateway"), ("s", "p", 1, "unrelated words only"),
              ("s", "q", 2, "the gateway owner")]
    kb = make_kb(chunks=chunks)
    mentions(kb, [("seed", "e"), ("p", "e"), ("q", "e")])
    steps = [retrieve(limit=1), expand_relations(types=["mentions"], seeds=["hits"])]
    hits, trace = kb.recipe(steps=steps).retrieve_with_trace("launch plan gateway")
    assert ids(hits) == ["seed", "q", "p"]  # same link (1/3); q also matches the query
    q, p = trace.steps[1].details["expansions"]
    assert 0 < q.reason.relevance < 1 and p.reason.relevance == 0.0
    assert q.score == pytest.approx(q.reason.relevance + GRAPH_WEIGHT * q.reason.graph ** 0.5)
    upstream = kb.recipe(steps=[retrieve(limit=1), expand_relations(types=["mentions"], seeds=["hits"],
                                                                    ranking="upstream")]).retrieve("launch plan gateway")
    assert ids(upstream) == ["seed", "p", "q"]  # upstream ignores the query: ref order


def test_counted_hops_by_default_and_the_override():
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["seed", "a", "b"])])
    mentions(kb, [("seed", "e1"), ("a", "e1"), ("a", "e2"), ("b", "e2")])
    one = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"])]).retrieve("q")
    assert ids(one) == ["seed", "a"] and one[1].provenance.graph.distance == 1
    free = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], entity_hops="free")]
                     ).retrieve("q")
    assert ids(free) == ["seed", "a", "b"] and free[2].provenance.graph.distance == 0


def test_same_input_same_output_and_ties_by_ref():
    kb = hub_kb()
    recipe = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], seeds=["hits"])])
    first = recipe.retrieve_with_trace("q")
    again = recipe.retrieve_with_trace("q")
    assert [h.ref for h in first.hits] == [h.ref for h in again.hits]
    assert first.trace.steps[1].details == again.trace.steps[1].details
    assert ids(first.hits)[2:] == ["h1", "h2", "h3"]  # equal scores, distances and seed ranks: by ref


def test_config_and_repr_name_the_ranking_only_when_it_is_not_the_default():
    assert "ranking" not in expand_relations().config()
    step = expand_relations(ranking="upstream")
    assert step.config()["ranking"] == "upstream" and step.hops == "free"
    assert expand_relations().hops == "counted" and expand_relations(entity_hops="free").hops == "free"
    assert repr(step) == "expand_relations(direction='both', depth=1, limit=20, seeds=['hits', 'query'], ranking='upstream')"
    with pytest.raises(ParameterError, match=r"expand_relations\(\): parameter 'ranking' must be"):
        expand_relations(ranking="pagerank")


def wide_kb(n):
    """seed -e1- a -wide- f1..f(n-1): 'wide' is adjacent to n chunks, reached one hop out (through a)."""
    fillers = [f"f{i}" for i in range(1, n)]
    kb = make_kb(chunks=[("s", c, i, f"text of {c}") for i, c in enumerate(["seed", "a", *fillers])])
    mentions(kb, [("seed", "e1"), ("a", "e1"), ("a", "wide")] + [(f, "wide") for f in fillers])
    return kb


@pytest.mark.parametrize("n, read", [(6, True), (8, True), (12, False), (40, False)])
def test_the_default_read_floor_stops_a_thin_second_hop(n, read):
    # 'a' holds half the seed's weight (e1 is in 2 chunks); reading 'wide' would pass (1/2)/n of it to each of
    # its n chunks, so the default floor (1/16) reads it up to n = 8, and the former default (1/64) up to n = 32
    assert expand_relations().floor == MIN_SHARE == 1 / 16
    kb = wide_kb(n)
    step = expand_relations(types=["mentions"], depth=2, limit=60, seeds=["hits"])
    hits, trace = kb.recipe(steps=[producer("chunk:s:seed"), step]).retrieve_with_trace("q")
    far = [h for h in hits if h.chunk_id.startswith("f")]
    assert ids(hits)[:2] == ["seed", "a"]
    assert (len(far) == n - 1 and all(h.provenance.graph.distance == 2 for h in far)) if read else far == []
    assert trace.steps[1].details["pruned"] == (0 if read else 1)
    every = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], depth=2, limit=60,
                                                                           seeds=["hits"], min_share=0)]).retrieve("q")
    assert len(every) == n + 1  # min_share=0 reads every node
