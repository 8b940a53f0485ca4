import math

import pandas as pd
import pytest

from crux_nb.errors import ParameterError, RetrievalRunError
from crux_nb.graph.reader import GraphReader
from crux_nb.retrieval import (FindingCitation, FindingHit, Lineage, StepOutput, custom_step, retrieve)
from crux_nb.retrieval.expand.step import expand_relations
from crux_nb.retrieval.trace import KnowledgeTrace
from crux_nb.refs import ChunkRef
from crux_nb.testing import make_kb


def ids(hits):
    return [h.chunk_id if h.kind == "evidence" else "finding" for h in hits]


def producer(*refs, extra=()):
    """A producer step returning hydrated hits for ``refs`` (plus ``extra`` hits)."""
    def run(inp, ctx):
        return [ctx.knowledge.reader.hydrate(r) for r in refs] + list(extra)
    return custom_step(run, id="seed-hits", phase=("queries", "hits"))


def test_pinned_sequence_example():
    kb = make_kb(chunks=[("guide", "intro", 1, "Intro text"), ("guide", "details", 2, "Details text")])
    hits = kb.recipe(steps=[retrieve(limit=1), expand_relations(types=["sequence"], direction="out", ranking="upstream")]).retrieve("intro")
    assert ids(hits) == ["intro", "details"]
    graph = hits[1].provenance.graph
    assert (graph.seed, graph.path, graph.edges, graph.distance) == (
        "chunk:guide:intro", ("chunk:guide:intro", "chunk:guide:details"), ("sequence",), 1)
    assert hits[0] == kb.recipe(steps=[retrieve(limit=1)]).retrieve("intro")[0]  # incoming hit unchanged


def test_pinned_request_filter_example():
    kb = make_kb(chunks=[("guide", "public-a", 1, "alpha", None, {"access": "public"}),
                         ("guide", "private", 2, "beta", None, {"access": "private"}),
                         ("guide", "public-b", 3, "gamma", None, {"access": "public"})])
    recipe = kb.recipe(steps=[retrieve(limit=1), expand_relations(types=["sequence"], direction="out", depth=2,
                                                               ranking="upstream")])
    hits = recipe.retrieve("alpha", filter={"access": "public"})
    assert ids(hits) == ["public-a", "public-b"]
    assert hits[1].provenance.graph.path == ("chunk:guide:public-a", "chunk:guide:private", "chunk:guide:public-b")


def related_kb():
    kb = make_kb(chunks=[("guide", c, i, c) for i, c in enumerate(["a", "b", "x", "y", "z"])])
    edges = [("a", "x"), ("a", "y"), ("a", "b"), ("b", "x"), ("b", "z")]
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:guide:{f}", "to_ref": f"chunk:guide:{t}", "type": "related",
                                "evidence": [f"chunk:guide:{f}"]} for f, t in edges]))
    return kb


def test_pinned_seed_ranks_support_and_reader_calls(monkeypatch):
    kb = related_kb()
    calls = []
    original = GraphReader.neighbors

    def spy(self, ref, **kwargs):
        calls.append((str(ref), kwargs))
        return original(self, ref, **kwargs)

    monkeypatch.setattr(GraphReader, "neighbors", spy)
    step = expand_relations(types=["related"], direction="out", limit=2, ranking="upstream")
    hits = kb.recipe(steps=[producer("chunk:guide:a", "chunk:guide:b"), step]).retrieve("q")
    assert ids(hits) == ["a", "b", "x", "y"]
    assert hits[2].score == pytest.approx(1 / 61 + 1 / 61)
    assert hits[2].provenance.graph.seed == "chunk:guide:a"
    assert calls == []  # the traversal is vectorised over the reader's CSR arrays: no per-node reads


def test_query_seeds_only_without_entities_returns_input_and_reads_nothing(monkeypatch):
    kb = related_kb()
    monkeypatch.setattr(GraphReader, "neighbors", lambda *a, **k: pytest.fail("reader called"))
    hits = kb.recipe(steps=[producer("chunk:guide:a"), expand_relations(seeds=["query"])]).retrieve("nothing named")
    assert ids(hits) == ["a"]


@pytest.mark.parametrize("kwargs", [{"depth": 0}, {"limit": 0}, {"seeds": []}])
def test_noop_configs_return_input_unchanged_without_trace(kwargs):
    kb = related_kb()
    result = kb.recipe(steps=[producer("chunk:guide:a"), expand_relations(**kwargs)]).retrieve_with_trace("q")
    assert ids(result.hits) == ["a"]
    step = result.trace.steps[1]
    assert step.warnings == () and step.knowledge is None


def test_knowledge_trace_and_details():
    kb = related_kb()
    hits, trace = kb.recipe(steps=[producer("chunk:guide:a"), expand_relations(types=["related"], ranking="upstream")]).retrieve_with_trace("q")
    knowledge = trace.steps[1].knowledge
    assert isinstance(knowledge, KnowledgeTrace)
    assert (knowledge.contributor, knowledge.coverage, knowledge.coverage_basis) == (
        "expand-relations", "exact", "visible graph neighbors from the bound knowledge reader")
    assert dict(knowledge.available) == {"reports": 0} and dict(knowledge.processed) == {"reports": 0, "findings": 3}
    records = trace.steps[1].details["expansions"]
    assert [r.ref for r in records] == ["chunk:guide:b", "chunk:guide:x", "chunk:guide:y"]
    assert records[0].seed == "chunk:guide:a" and records[0].edges == ("related",)


def test_entities_are_free_hops_and_sort_first():
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["seed", "next", "far"])])
    kb.add_edges(pd.DataFrame([
        {"from_ref": "chunk:s:seed", "to_ref": "entity:e", "type": "mentions", "evidence": ["chunk:s:seed"]},
        {"from_ref": "chunk:s:far", "to_ref": "entity:e", "type": "mentions", "evidence": ["chunk:s:far"]},
    ]))
    hits = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(ranking="upstream")]).retrieve("q")
    assert ids(hits) == ["seed", "far", "next"]  # far via the entity costs 0, next via sequence costs 1
    far = hits[1].provenance.graph
    assert far.distance == 0 and far.path == ("chunk:s:seed", "entity:e", "chunk:s:far") and far.edges == ("mentions", "mentions")


def test_finding_hits_pass_through_with_one_warning():
    finding = FindingHit(namespace="kb", content="f", score=0.5, citation=FindingCitation(
        "finding:1", (ChunkRef("guide", "a"),), (), Lineage(None, "g", "c")))
    kb = related_kb()
    steps = [producer("chunk:guide:a", extra=[finding, finding]), expand_relations(types=["related"], limit=1, ranking="upstream")]
    hits, trace = kb.recipe(steps=steps).retrieve_with_trace("q")
    assert ids(hits) == ["a", "finding", "finding", "b"] and hits[1] is finding
    assert trace.steps[1].warnings == ("expand_relations skipped 2 finding hits.",)
    steps[0] = producer("chunk:guide:a", extra=[finding])
    assert kb.recipe(steps=steps).retrieve_with_trace("q").trace.warnings == ("expand_relations skipped 1 finding hit.",)


def test_cycles_and_unknown_types():
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["a", "b"])])
    kb.add_edges(pd.DataFrame([{"from_ref": "chunk:s:a", "to_ref": "chunk:s:b", "type": "related", "direction": "symmetric",
                                "evidence": ["chunk:s:a"]}]))
    hits = kb.recipe(steps=[producer("chunk:s:a"), expand_relations(types=["related"], depth=5)]).retrieve("q")
    assert ids(hits) == ["a", "b"]
    assert ids(kb.recipe(steps=[producer("chunk:s:a"), expand_relations(types=["nope"])]).retrieve("q")) == ["a"]


@pytest.mark.parametrize("ranking", ["relevance", "upstream"])
def test_fan_out_and_candidate_ceilings_warn(ranking):
    chunks = [("s", f"c{i:04d}", i, "text") for i in range(700)]
    kb = make_kb(chunks=chunks)
    rows = [{"from_ref": "chunk:s:c0000", "to_ref": f"chunk:s:c{i:04d}", "type": "related", "evidence": ["chunk:s:c0000"]}
            for i in range(1, 64)]  # 63 persisted + 1 sequence = exactly 64 neighbours
    rows += [{"from_ref": f"chunk:s:c{i:04d}", "to_ref": f"chunk:s:c{j:04d}", "type": "related",
              "evidence": ["chunk:s:c0000"]} for i in range(1, 64) for j in range(64 + (i - 1) * 9, 64 + i * 9)]
    kb.add_edges(pd.DataFrame(rows))
    hits, trace = kb.recipe(steps=[producer("chunk:s:c0000"), expand_relations(depth=2, limit=5, ranking=ranking,
                                                                             entity_hops="free")]).retrieve_with_trace("q")
    assert "expand_relations truncated neighbors for chunk:s:c0000 at 64." in trace.warnings
    assert trace.warnings.count("expand_relations truncated graph candidates at 512.") == 1
    assert len(hits) == 6


@pytest.mark.parametrize("kwargs,name", [
    ({"direction": "sideways"}, "direction"), ({"depth": -1}, "depth"), ({"depth": 1.5}, "depth"),
    ({"depth": math.nan}, "depth"), ({"limit": -2}, "limit"), ({"limit": "3"}, "limit"), ({"limit": math.inf}, "limit"),
    ({"seeds": ["hits", "graph"]}, "seeds"), ({"seeds": "hits"}, "seeds"), ({"types": "mentions"}, "types"),
    ({"types": ["ok", 3]}, "types"),
])
def test_invalid_config_fails_at_construction(kwargs, name):
    with pytest.raises(ParameterError, match=rf"expand_relations\(\): parameter '{name}' must be"):
        expand_relations(**kwargs)


def test_step_identity_and_config():
    step = expand_relations(types=["mentions"], depth=2.0, seeds=["hits", "hits"])
    assert (step.id, step.kind, step.phase, step.needs_model, step.model) == (
        "expand-relations", "custom", ("hits", "hits"), False, None)
    assert step.config() == {"direction": "both", "depth": 2, "limit": 20, "seeds": ["hits"], "types": ["mentions"]}
    assert step.to_dict()["config"] == step.config()
    assert repr(expand_relations()) == "expand_relations(direction='both', depth=1, limit=20, seeds=['hits', 'query'])"


def test_unbound_expansion_raises():
    from crux_nb.retrieval.types import Request, StepContext, StepInput

    context = StepContext(recipe_id="r", namespace="n", request=Request.build("q"), state=None, knowledge=None)
    with pytest.raises(RetrievalRunError, match="requires a knowledge binding"):
        expand_relations().run(StepInput(hits=()), context)


def test_query_seeds_match_entity_names_and_aliases():
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["a", "b", "c"])])
    kb.add_edges(pd.DataFrame([
        {"from_ref": "chunk:s:b", "to_ref": "entity:priya", "type": "mentions", "evidence": ["chunk:s:b"]},
        {"from_ref": "chunk:s:c", "to_ref": "entity:gateway", "type": "mentions", "evidence": ["chunk:s:c"]},
        {"from_ref": "chunk:s:a", "to_ref": "entity:ingest", "type": "mentions", "evidence": ["chunk:s:a"]},
    ]))
    kb.add_entities(pd.DataFrame({"entity_id": ["priya", "gateway", "ingest"],
                                  "canonical_name": ["Priya Raman", "Ingest Gateway", "Ingest"],
                                  "aliases": [["Priya"], [], []]}))
    step = expand_relations(types=["mentions"], seeds=["query"])
    hits, trace = kb.recipe(steps=[producer(), step]).retrieve_with_trace("What did  PRIYA say about the ingest   gateway?")
    assert trace.steps[1].details["seeds"] == ("entity:gateway", "entity:priya")  # longest match first
    assert ids(hits) == ["c", "b"]
    assert hits[0].provenance.graph.path == ("entity:gateway", "chunk:s:c")


def test_counted_entity_hops_stop_the_flood():
    # a chain: seed -e1- a -e2- b -e3- c ; free hops reach everything at distance 0, counted hops one link per hop
    kb = make_kb(chunks=[("s", c, i, c) for i, c in enumerate(["seed", "a", "b", "c"])])
    links = [("seed", "e1"), ("a", "e1"), ("a", "e2"), ("b", "e2"), ("b", "e3"), ("c", "e3")]
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:s:{c}", "to_ref": f"entity:{e}", "type": "mentions",
                                "evidence": [f"chunk:s:{c}"]} for c, e in links]))
    free = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], ranking="upstream")]).retrieve("q")
    assert ids(free) == ["seed", "a", "b", "c"] and {h.provenance.graph.distance for h in free[1:]} == {0}
    counted = expand_relations(types=["mentions"], entity_hops="counted", ranking="upstream")
    hits = kb.recipe(steps=[producer("chunk:s:seed"), counted]).retrieve("q")
    assert ids(hits) == ["seed", "a"] and hits[1].provenance.graph.distance == 1
    deeper = kb.recipe(steps=[producer("chunk:s:seed"), expand_relations(types=["mentions"], depth=2, ranking="upstream",
                                                                           entity_hops="counted")]).retrieve("q")
    assert ids(deeper) == ["seed", "a", "b"]
    assert counted.config()["entity_hops"] == "counted" and "entity_hops" not in expand_relations().config()
    with pytest.raises(ParameterError, match="entity_hops"):
        expand_relations(entity_hops="cheap")
