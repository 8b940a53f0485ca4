import math

import pytest

import crux_nb
from crux_nb.community.cluster import Community
from crux_nb.community.frames import generation_frames, input_fingerprint, with_generation
from crux_nb.community import Finding, Report
from crux_nb.datasets import sample_later_path, sample_path
from crux_nb.errors import ParameterError, RetrievalConfigError, RetrievalRunError, ValidationExhaustedError
from crux_nb.models import OfflineModel
from crux_nb.retrieval import FindingHit, global_search, retrieve
from crux_nb.retrieval.globalsearch.mapreduce import candidates, reduce
from crux_nb.retrieval.globalsearch.units import auto_detail, select_detail
from crux_nb.hits import Lineage
from crux_nb.refs import ChunkRef

Q = "What changed in the launch plan?"


class Spy:
    """Wraps a model, recording map/rate calls; ``bad_map`` returns invalid map output."""

    def __init__(self, bad_map=False, inner=None):
        self.inner = inner or OfflineModel()
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.maps, self.rates, self.bad_map = [], [], bad_map

    def extract(self, chunks, *, repair=None):
        return self.inner.extract(chunks, repair=repair)

    def write_report(self, community, *, repair=None):
        return self.inner.write_report(community, repair=repair)

    def map_findings(self, query, units, *, repair=None):
        self.maps.append([u["community_id"] for u in units])
        if self.bad_map:
            return {"findings": [{"statement": "x", "finding_ids": ["not-issued"], "score": 50}]}
        return self.inner.map_findings(query, units, repair=repair)

    def rate(self, query, reports, *, repair=None):
        self.rates.append([r["community_id"] for r in reports])
        return self.inner.rate(query, reports, repair=repair)


@pytest.fixture(scope="module")
def built():
    model = OfflineModel()
    kb = crux_nb.knowledge_base(id="lumen", communities=crux_nb.communities(model=model))
    kb.add_path(sample_path())
    kb.communities.prepare(progress=False)
    return kb


def fresh_sample(model=None):
    kb = crux_nb.knowledge_base(id="lumen", communities=crux_nb.communities(model=model or OfflineModel()))
    kb.add_path(sample_path())
    return kb


def test_step_identity_and_validation():
    m = OfflineModel()
    step = global_search(model=m)
    assert (step.id, step.kind, step.phase, step.needs_model, step.model) == (
        "global-search", "global-search", ("queries", "hits"), True, m)
    assert step.config() == {"model": "offline", "scan": "all", "detail": "auto", "limit": 20}
    for kwargs, name in [({"model": None}, "model"), ({"scan": "some"}, "scan"), ({"detail": "brief"}, "detail"),
                         ({"limit": 0}, "limit"), ({"limit": -3}, "limit"), ({"limit": math.nan}, "limit"),
                         ({"limit": 2.5}, "limit")]:
        with pytest.raises(ParameterError, match=rf"global_search\(\): parameter '{name}'"):
            global_search(**{"model": m, **kwargs})


def test_construction_needs_communities_and_one_producer(built):
    plain = crux_nb.knowledge_base()
    with pytest.raises(RetrievalConfigError) as info:
        plain.recipe(steps=[global_search(model=OfflineModel())])
    assert info.value.code == "missing_model" and "requires connected knowledge communities" in info.value.message
    with pytest.raises(RetrievalConfigError, match='"retrieve" and "global-search"'):
        built.recipe(steps=[retrieve(), global_search(model=OfflineModel())])


def test_request_filters_are_rejected_before_any_model_call(built):
    spy = Spy()
    recipe = built.recipe(steps=[global_search(model=spy, scan="adaptive")])
    with pytest.raises(RetrievalRunError, match="does not accept request filters") as info:
        recipe.retrieve(Q, filter={})
    assert info.value.code == "filter_rejected" and spy.maps == [] and spy.rates == []


def test_exact_coverage_trace_and_hits(built):
    spy = Spy()
    hits, trace = built.recipe(steps=[global_search(model=spy, detail="detailed", limit=5)]).retrieve_with_trace(Q)
    k = trace.steps[0].knowledge
    assert (k.contributor, k.coverage, k.scan, k.detail) == ("global-search", "exact", "all", "detailed")
    assert k.coverage_basis == "current community generation matched the pinned read surface"
    assert k.generations == (built.communities.generation_id,) and k.truncations == ()
    leaves = (built.communities.communities["child_ids"].map(len) == 0).sum()
    assert k.available["reports"] == k.processed["reports"] == leaves
    assert k.preflight == {"kind": "global-search", "reports": leaves, "batches": len(spy.maps),
                           "input_chars": k.preflight["input_chars"], "calls": len(spy.maps)}
    assert len(k.calls) == len(spy.maps)
    assert 0 < len(hits) <= 5 and all(isinstance(h, FindingHit) for h in hits)
    assert [h.score for h in hits] == sorted((h.score for h in hits), reverse=True)
    chunks = set(built.chunks["ref"])
    for h in hits:
        assert 0.000001 <= h.score <= 1 and h.citation.finding_target.startswith("finding:")
        assert h.citation.supports and {str(s) for s in h.citation.supports} <= chunks
        assert h.citation.lineage.community_generation == built.communities.generation_id
    again = built.recipe(steps=[global_search(model=OfflineModel(), detail="detailed", limit=5)]).retrieve(Q)
    assert again == hits  # deterministic


def test_overview_maps_parents_and_top_level_leaves_and_detailed_maps_leaves(built):
    comms = built.communities.communities
    parents = set(comms[comms["child_ids"].map(len) > 0]["community_id"])
    high = set(comms[comms["level"] >= 2]["community_id"])  # a leaf under such a parent has a sibling with children
    top_leaves = set(comms[comms["parent_id"].isin(high) | comms["parent_id"].isna()]["community_id"]) - parents
    for detail, expected in (("overview", parents | top_leaves), ("detailed", set(comms["community_id"]) - parents)):
        spy = Spy()
        built.recipe(steps=[global_search(model=spy, detail=detail)]).retrieve(Q)
        assert {c for batch in spy.maps for c in batch} == expected


def test_detail_rules_on_units():
    def unit(cid, parent, level):
        return Report(cid, level, parent, cid, "", (), generation_id="g")

    flat = [unit("leaf-b", "root", 0), unit("root", None, 1), unit("leaf-a", "root", 0)]
    assert [u.community_id for u in select_detail(flat, "overview")] == ["root"]  # leaves all at one depth
    assert [u.community_id for u in select_detail(flat, "detailed")] == ["leaf-a", "leaf-b"]
    units = [unit("leaf-b", "root", 0), unit("root", None, 2), unit("leaf-a", "root", 0), unit("p", "root", 1),
             unit("leaf-c", "p", 0)]
    # overview: the parents and the leaves beside a sibling with children; detailed: every leaf
    assert [u.community_id for u in select_detail(units, "overview")] == ["leaf-a", "leaf-b", "p", "root"]
    assert [u.community_id for u in select_detail(units, "detailed")] == ["leaf-a", "leaf-b", "leaf-c"]
    forest = [unit("t1", None, 1), unit("t2", None, 0), unit("t1-a", "t1", 0)]  # a GraphRAG-style forest
    assert [u.community_id for u in select_detail(forest, "overview")] == ["t2", "t1"]
    assert [u.community_id for u in select_detail(forest, "detailed")] == ["t1-a", "t2"]
    picks = {auto_detail(query=f"question {i}", generations=("g",), strategy="s", model_fingerprint="m", scan="all",
                         limit=20) for i in range(20)}
    assert picks == {"overview", "detailed"}
    assert auto_detail(query=" Q ", generations=("g",), strategy="s", model_fingerprint="m", scan="all", limit=20) == \
        auto_detail(query="q", generations=("g",), strategy="s", model_fingerprint="m", scan="all", limit=20)


def inject(kb, n_leaves, statement_chars=500, summary_chars=2000):
    """Publish a ready generation of ``n_leaves`` leaf reports under one root, without a model."""
    state = kb.state
    chunk = state.chunks["ref"].iloc[0]
    comms, reports = [], {}
    leaf_ids = [f"leaf-{i:04d}" for i in range(n_leaves)]
    comms.append(Community("root", 1, "root", None, tuple(leaf_ids), (chunk,), (), 0))
    reports["root"] = Report("root", 1, None, "Root", "s", (Finding("f1", "root finding", (chunk,)),), "h", 0, 1)
    for cid in leaf_ids:
        comms.append(Community(cid, 0, "leaf", "root", (), (chunk,), (), 0))
        reports[cid] = Report(cid, 0, "root", cid, "s" * summary_chars,
                              (Finding("f1", "x" * statement_chars, (chunk,)),), cid, 0, 1)
    frames = generation_frames("corpus", "g-injected", comms, reports, input_fp=input_fingerprint(state, None),
                               strategy_fp=kb.communities.config.strategy_fingerprint, view=(None, None), sequence=1,
                               source_hashes=dict(zip(state.documents["source_id"], state.documents["content_hash"])))
    kb.commit(lambda s: with_generation(s, "corpus", frames))
    assert kb.communities.status() == "ready"


def test_call_ceiling_admit_hook_and_zero_calls():
    spy = Spy()
    kb = crux_nb.knowledge_base(communities=crux_nb.communities(model=spy))
    kb.add_text("a", "Launch plan text.")
    inject(kb, 400)
    recipe = kb.recipe(steps=[global_search(model=spy, detail="detailed")])
    plan = recipe.plan(Q)
    assert plan.calls > 32 and plan.reports == 400
    with pytest.raises(RetrievalRunError, match=r"estimated \d+ map calls for 400 reports, above the 32 call ceiling. "
                                                 r"Remedies: use detail='overview', use scan='adaptive'"):
        recipe.retrieve(Q)
    assert spy.maps == []
    seen = []
    with pytest.raises(RetrievalRunError, match="rejected by the request admission hook"):
        recipe.retrieve(Q, admit=lambda estimate: seen.append(estimate) or False)
    assert spy.maps == [] and seen == [{"kind": "global-search", "reports": 400, "batches": plan.batches,
                                        "input_chars": plan.input_chars, "calls": plan.calls}]
    recipe.retrieve(Q, admit=lambda estimate: True)  # the hook replaces the ceiling
    assert len(spy.maps) == plan.calls


def test_invalid_map_output_twice_fails_with_no_partial_hits(built):
    spy = Spy(bad_map=True)
    recipe = built.recipe(steps=[global_search(model=spy, detail="overview")])
    with pytest.raises(RetrievalRunError) as info:
        recipe.retrieve(Q)
    assert isinstance(info.value.__cause__, ValidationExhaustedError)
    assert 'prompt "globalSearch:batch:1"' in info.value.message and len(spy.maps) == 2
    assert info.value.trace.steps[0].status == "error" and info.value.trace.result_count == 0


def test_raw_fallback_for_a_small_never_built_knowledge_base():
    kb = crux_nb.knowledge_base(id="small", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_text("plan.md", "# Plan\n\nThe launch plan moved the launch to May.")
    kb.add_text("notes.md", "# Notes\n\nRelease planning happens weekly.")
    hits, trace = kb.recipe(steps=[global_search(model=OfflineModel(), detail="detailed")]).retrieve_with_trace("launch plan")
    k = trace.steps[0].knowledge
    assert (k.coverage, k.generations) == ("raw-fallback", ("raw-fallback",))
    assert kb.communities.status() == "missing"  # nothing was built
    assert hits and hits[0].citation.supports == (ChunkRef("plan.md", "c0000"),)
    assert hits[0].citation.lineage.community_generation == "raw-fallback"


def test_materialization_wait_builds_when_evidence_exceeds_one_batch():
    kb = fresh_sample()
    hits, trace = kb.recipe(steps=[global_search(model=OfflineModel())]).retrieve_with_trace(Q)
    k = trace.steps[0].knowledge
    assert (k.coverage, k.coverage_basis) == ("materialization-wait", "waited for community materialization")
    assert kb.communities.status() == "ready" and k.generations == (kb.communities.generation_id,)


def test_compensated_for_additions_then_exact_after_prepare():
    kb = fresh_sample()
    kb.communities.prepare(progress=False)
    old = kb.communities.generation_id
    kb.add_path(sample_later_path())
    recipe = kb.recipe(steps=[global_search(model=OfflineModel(), detail="detailed", limit=10)])
    hits, trace = recipe.retrieve_with_trace(Q)
    k = trace.steps[0].knowledge
    assert (k.coverage, k.generations) == ("compensated", tuple(sorted((old, "compensated-addition"))))
    assert any(str(s).startswith("chunk:launch-plan-v4.md:") for h in hits for s in h.citation.supports)
    kb.communities.prepare(progress=False)
    assert recipe.retrieve_with_trace(Q).trace.steps[0].knowledge.coverage == "exact"


def test_compensated_for_removals_drops_reports_holding_removed_sources():
    kb = fresh_sample()
    kb.communities.prepare(progress=False)
    kb.remove("launch-plan-v1.md")
    hits, trace = kb.recipe(steps=[global_search(model=OfflineModel(), detail="detailed", limit=20)]).retrieve_with_trace(Q)
    k = trace.steps[0].knowledge
    assert k.coverage == "compensated" and "without reports holding removed" in k.coverage_basis
    excluded = trace.steps[0].details["excluded"]
    assert excluded
    assert not any(str(s).startswith("chunk:launch-plan-v1.md:") for h in hits for s in h.citation.supports)
    assert not set(excluded) & set(trace.steps[0].details["selected"])


def test_adaptive_descent_rates_children_and_records_every_decision(built):
    spy = Spy()
    hits, trace = built.recipe(steps=[global_search(model=spy, scan="adaptive", detail="detailed")]).retrieve_with_trace(Q)
    k = trace.steps[0].knowledge
    adaptive = k.adaptive
    root = built.communities.communities.query("kind == 'root'")["community_id"].iloc[0]
    assert adaptive.threshold == 50 and adaptive.visited[0].community_id == root and adaptive.visited[0].rating is None
    # visited by its rating: rated >= 50; otherwise the fallback chose it, and the trace says so
    assert all(r.rating >= 50 for r in adaptive.visited[1:] if not r.fallback)
    assert all(r.rating is None or r.rating < 50 for r in adaptive.skipped)
    rated = {c for batch in spy.rates for c in batch}
    assert rated == {r.community_id for r in adaptive.visited[1:] + adaptive.skipped if r.rating is not None}
    assert adaptive.rating_calls == len(spy.rates) and len(k.calls) == len(spy.rates) + len(spy.maps)
    visited = {r.community_id for r in adaptive.visited}
    assert set(trace.steps[0].details["selected"]) <= visited
    assert k.processed["reports"] <= k.available["reports"]


def test_adaptive_truncation_is_recorded(built, monkeypatch):
    # detailed: the root's children are rated even when they are all leaves (overview never rates leaves)
    step = global_search(model=OfflineModel(), scan="adaptive", detail="detailed", max_calls=0)
    hits, trace = built.recipe(steps=[step]).retrieve_with_trace(Q, admit=lambda e: True)
    k = trace.steps[0].knowledge
    assert k.truncations and k.truncations[0]["kind"] == "adaptive-descent"
    assert {r.decision for r in k.adaptive.skipped} == {"truncated"}


def test_results_do_not_depend_on_concurrency(built, monkeypatch):
    monkeypatch.setattr("crux_nb.retrieval.globalsearch.descent.BATCH_BUDGET", 2500)
    runs = []
    for concurrency in (1, 4):
        spy = Spy()
        recipe = built.recipe(steps=[global_search(model=spy, detail="detailed")], concurrency=concurrency)
        runs.append(recipe.retrieve(Q))
        assert len(spy.maps) > 2
    assert runs[0] == runs[1] and runs[0]


def test_reduce_merges_sorts_clamps_and_cites():
    c = ChunkRef
    units = [
        Report("a", 0, "r", "A", "", (Finding("a:f1", "one", (c("s", "1"), c("s", "2"))),
                                      Finding("a:f2", "two", (c("s", "2"),), ("as1",))), generation_id="g1"),
        Report("b", 0, "r", "B", "", (Finding("b:f1", "three", (c("s", "3"),)),), generation_id="g1"),
    ]
    outs = [{"findings": [{"statement": "S1", "finding_ids": ["a:f2", "a:f1"], "score": 40},
                          {"statement": "S1 better", "finding_ids": ["a:f1", "a:f2"], "score": 90},
                          {"statement": "S2", "finding_ids": ["b:f1"], "score": 250},
                          {"statement": "S3", "finding_ids": ["b:f1", "zzz"], "score": 0}]}]
    hits = reduce([x for o in outs for x in candidates(o)], units, namespace="n", limit=10)
    assert [h.content for h in hits] == ["S2", "S1 better", "S3"]
    assert [h.score for h in hits] == [1.0, 0.9, 0.000001]
    assert hits[1].citation.supports == (c("s", "1"), c("s", "2"))
    assert [a.assertion_id for a in hits[1].citation.assertion_refs] == ["as1"]
    assert hits[1].citation.lineage == Lineage(None, "g1", "a")
    assert hits[2].citation.supports == (c("s", "3"),)
    tie = reduce(candidates({"findings": [{"statement": "x", "finding_ids": ["b:f1"], "score": 50}]}) +
                 candidates({"findings": [{"statement": "y", "finding_ids": ["b:f1"], "score": 50}]}), units,
                 namespace="n", limit=1)
    assert [h.content for h in tie] == ["x"]
    unknown = reduce(candidates({"findings": [{"statement": "u", "finding_ids": ["raw:x"], "score": 10}]}), units,
                     namespace="n", limit=5)
    assert unknown[0].citation.lineage == Lineage(None, "unknown", "raw")
