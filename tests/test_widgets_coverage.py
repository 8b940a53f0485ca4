"""CoverageView without a browser: coverage, hierarchy, batches, truncations, citations, frames, reprs, escaping, errors.

A small knowledge base gets a hand-written community generation (no model build), so every
run is fast and every report, finding and chunk is known.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from html.parser import HTMLParser

import pandas as pd
import pytest

import crux_nb
from crux_nb.community.cluster import Community
from crux_nb.community.frames import generation_frames, input_fingerprint, with_generation
from crux_nb.community import Finding, Report
from crux_nb.errors import ParameterError
from crux_nb.models import OfflineModel
from crux_nb.retrieval import global_search, retrieve
from crux_nb.retrieval.globalsearch.mapreduce import candidates, reduce
from crux_nb.hits import Lineage, to_data
from crux_nb.refs import ChunkRef
from crux_nb.widgets import CoverageFinding, CoverageView, coverage_data, coverage_html, coverage_svg
from crux_nb.widgets._coverage_read import resolve_citation

SCRIPT = '<script>window.__crux_pwned = 1</script><img src=x onerror="window.__crux_pwned=2">'
Q = "launch plan"
DOCS = {
    "plan.md": "The launch plan moved the launch to May.",
    "owner.md": "Priya owns the launch plan " + SCRIPT,
    "team.md": "The platform team runs the on-call rotation.",
    "eu.md": "The EU region moved to Dublin after the launch plan changed.",
    "misc.md": "The lunch menu changes every week.",
}
PLAN, OWNER, TEAM, EU, MISC = (f"chunk:{s}:c0000" for s in DOCS)
# (community_id, level, parent_id, title, [(finding_id, statement, evidence)])
TREE = [
    ("r", 2, None, "Everything", [("f1", "The launch plan moved the launch to May.", [PLAN])]),
    ("p", 1, "r", "Launch and team", [("f1", "The launch plan moved the launch to May.", [PLAN]),
                                      ("f2", "The platform team runs the on-call rotation.", [TEAM])]),
    ("l1", 0, "p", "Launch plan " + SCRIPT, [("f1", "The launch plan moved the launch to May.", [PLAN]),
                                             ("f2", "Priya owns the launch plan " + SCRIPT, [OWNER, PLAN])]),
    ("l2", 0, "p", "Platform team", [("f1", "The platform team runs the on-call rotation.", [TEAM])]),
    ("l3", 0, "r", "EU region", [("f1", "The EU region moved to Dublin after the launch plan changed.", [EU])]),
    ("l4", 0, "r", "Lunch", [("f1", "The lunch menu changes every week.", [MISC])]),
]


def publish(kb, tree=TREE, generation="g-test"):
    """Publish a ready generation of ``tree`` (no model calls)."""
    state = kb.state
    children = {}
    for cid, _, parent, _, _ in tree:
        if parent is not None:
            children.setdefault(parent, []).append(cid)
    comms, reports = [], {}
    for cid, level, parent, title, findings in tree:
        kids = tuple(children.get(cid, ()))
        kind = "root" if parent is None else ("parent" if kids else "leaf")
        refs = tuple(dict.fromkeys(r for _, _, ev in findings for r in ev))
        comms.append(Community(cid, level, kind, parent, kids, refs, (), 0))
        reports[cid] = Report(cid, level, parent, title, f"Summary of {title}.",
                              tuple(Finding(fid, s, tuple(ev)) for fid, s, ev in findings), f"h-{cid}", 0, len(refs))
    frames = generation_frames("corpus", generation, comms, reports, input_fp=input_fingerprint(state, None),
                               strategy_fp=kb.communities.config.strategy_fingerprint, view=(None, None), sequence=1,
                               source_hashes=dict(zip(state.documents["source_id"], state.documents["content_hash"])))
    kb.commit(lambda s: with_generation(s, "corpus", frames))
    assert kb.communities.status() == "ready"


def make():
    kb = crux_nb.knowledge_base(id="demo", communities=crux_nb.communities(model=OfflineModel()))
    for source, text in DOCS.items():
        kb.add_text(source, text)
    assert set(kb.chunks["ref"]) == {PLAN, OWNER, TEAM, EU, MISC}
    publish(kb)
    return kb


def run(kb, **kwargs):
    kwargs = {"detail": "detailed", **kwargs}
    return kb.recipe(steps=[global_search(model=OfflineModel(), **kwargs)]).retrieve_with_trace(Q)


@pytest.fixture(scope="module")
def kb():
    return make()


@pytest.fixture(scope="module")
def result(kb):
    return run(kb)


@pytest.fixture(scope="module")
def adaptive(kb):
    return run(kb, scan="adaptive")


@pytest.fixture
def view(result, kb):
    return CoverageView(result, kb=kb)


def statuses(svg):
    return dict(re.findall(r'<g class="crux-node[^"]*" data-id="([^"]*)" data-status="([^"]*)"', svg))


def on_nodes(svg):
    return re.findall(r'<g class="crux-node [^"]*crux-on" data-id="([^"]*)"', svg)


# ------------------------------------------------------------------------------------ model state
def test_initial_state(view, result):
    hits = list(result.hits)
    assert view.step_id == "global-search" and view.coverage == "exact"
    assert view.coverage_basis == "current community generation matched the pinned read surface"
    assert [f.target for f in view.findings] == [h.citation.finding_target for h in hits]
    assert [f.statement for f in view.findings] == [h.content for h in hits]
    assert [v for _, v in view.finding_select.options] == [h.citation.finding_target for h in hits]
    assert view.finding_select.options[0][0].startswith("1. ")
    # the first finding is selected, everywhere
    assert view.selected_id == view.finding_select.value == hits[0].citation.finding_target
    assert isinstance(view.selected, CoverageFinding) and view.selected.hit is hits[0] and view.selected.rank == 1
    assert "crux-coverage" in view._dom_classes and "crux-finding-select" in view.finding_select._dom_classes
    assert view.finding_select.get_state()["index"] == 0


def test_header_and_overview_show_coverage_basis_and_counts(view, result):
    k = result.trace.step("global-search").knowledge
    header, overview = view.header.value, view.overview.value
    assert "<b>coverage exact</b>: current community generation matched the pinned read surface" in header
    assert "1 generation:" in header and "g-test" in header and "reads: whole corpus" in header
    assert k.available == {"reports": 4, "findings": 5} and k.processed == {"reports": 4, "findings": 5}
    assert '<tr class="crux-processed-reports"><th>reports</th><td>4</td><td>4</td><td>100%</td>' in overview
    # preflight against the calls the log recorded: one batch, one map call, no rating call
    assert k.preflight["calls"] == 1 and len(k.calls) == 1
    assert re.search(r'data-row="map calls"><th>map calls</th><td>1</td><td>1</td>', overview)
    assert re.search(r'data-row="rating calls"><th>rating calls</th><td>—</td><td>0</td>', overview)
    assert "crux-mismatch" not in overview
    assert "Nothing was cut: no truncation was recorded." in overview and "Something was cut" not in overview


def test_hierarchy_is_coloured_by_status(view, result):
    svg = view.graph.value
    # scan all, detailed: every leaf mapped, the parents never read
    assert statuses(svg) == {"r": "unread", "p": "unread", "l1": "mapped", "l2": "mapped", "l3": "mapped",
                             "l4": "mapped"}
    assert svg.count('class="crux-link') == 5  # one link per parent edge
    assert "community hierarchy: 6 communities, 4 mapped" in view.graph.value
    # layout: the root at the left, leaves in one column at the right
    x = dict(re.findall(r'data-id="([^"]*)" data-status="[^"]*"><title>[^<]*</title><rect x="([\d.]+)"', svg))
    assert float(x["r"]) < float(x["p"]) < float(x["l1"]) == float(x["l3"])
    assert coverage_svg(coverage_data(result), view.selected) in svg


def test_adaptive_statuses_ratings_and_rating_calls(kb, adaptive):
    view = CoverageView(adaptive, kb=kb)
    k = adaptive.trace.step("global-search").knowledge
    trace = k.adaptive
    assert trace is not None and trace.rating_calls >= 1
    svg_status = statuses(view.graph.value)
    for r in trace.visited + trace.skipped:
        expected = "mapped" if r.community_id in view.data.mapped else r.decision
        assert svg_status[r.community_id] == expected
    assert svg_status["r"] == "visited"  # the root is visited, never mapped in detailed mode
    rated = [r for r in trace.visited + trace.skipped if r.rating is not None]
    badges = dict(re.findall(r'data-id="([^"]*)"[^>]*>(?:(?!</g>).)*<text class="crux-node-badge"[^>]*>([^<]*)</text>',
                             view.graph.value))
    assert badges == {r.community_id: (f"{r.rating:.1f}".removesuffix(".0")) for r in rated}
    overview = view.overview.value
    assert re.search(rf'data-row="rating calls"><th>rating calls</th><td>not estimated</td><td>{trace.rating_calls}</td>',
                     overview)
    assert "adaptive descent" in overview and f"threshold {trace.threshold}" in overview
    frame = view.to_frame("community")
    assert frame.set_index("community_id").loc["r", "status"] == "visited"
    assert frame["rating"].notna().sum() == len(rated)


def test_truncation_is_said_plainly(kb, monkeypatch):
    result = kb.recipe(steps=[global_search(model=OfflineModel(), scan="adaptive", detail="overview", max_calls=0)]
                       ).retrieve_with_trace(Q, admit=lambda estimate: True)
    view = CoverageView(result)
    cut = result.trace.step("global-search").knowledge.truncations
    assert cut and cut[0]["kind"] == "adaptive-descent"
    overview = view.overview.value
    assert "⚠ Something was cut: 1 truncation." in overview and "Nothing was cut" not in overview
    ids = cut[0]["community_ids"]
    named = ", ".join(f"{view.data.title(c)} ({c})" for c in ids)
    n = f"{len(ids)} {'community' if len(ids) == 1 else 'communities'}"
    assert f"rating call budget of 0 reached — {n} not read: {named}" in overview
    status = statuses(view.graph.value)
    assert {status[c] for c in ids} == {"truncated"}
    assert status["r"] == ("mapped" if "r" in view.data.mapped else "visited")  # the root is never rated
    assert sorted(view.to_frame("community").query("status == 'truncated'")["community_id"]) == sorted(ids)
    assert repr(view).endswith(", truncations=1)")


def test_batches_and_call_log(kb, monkeypatch):
    monkeypatch.setattr("crux_nb.retrieval.globalsearch.descent.BATCH_BUDGET", 120)
    result = run(kb)
    view = CoverageView(result)
    details = result.trace.step("global-search").details
    assert len(details["batches"]) > 1
    rows = re.findall(r'<tr class="crux-batch-row" data-batch="(\d+)">', view.batch_table.value)
    assert rows == [str(b.index + 1) for b in details["batches"]]
    frame = view.to_frame("batch")
    assert frame["community_ids"].tolist() == [" ".join(b.community_ids) for b in details["batches"]]
    assert frame["input_chars"].tolist() == [b.input_chars for b in details["batches"]]
    assert frame["calls"].tolist() == [1] * len(rows) and frame["ok"].all()
    # the log's arrival order (map batches run concurrently) never shows
    assert [c.prompt_id for c in view.data.calls] == [f"globalSearch:batch:{i + 1}" for i in range(len(rows))]
    assert re.search(rf'data-row="map calls"><th>map calls</th><td>{len(rows)}</td><td>{len(rows)}</td>',
                     view.overview.value)


# ------------------------------------------------------------------------------------ selection and citations
def test_selecting_a_finding_resolves_its_citation(view):
    owner = next(f for f in view.findings if f.statement.startswith("Priya"))
    view.finding_select.value = owner.target  # what the browser does
    assert view.selected_id == owner.target and view.selected is owner
    assert owner.resolution == "verified" and [c.id for c in owner.cited] == ["l1:f2"]
    assert owner.supports == (OWNER, PLAN) and owner.community_id == "l1"
    detail = view.detail.value
    assert f'data-target="{owner.target}"' in detail and "verified against the finding target" in detail
    assert 'data-finding="l1:f2"' in detail and "Priya owns the launch plan &lt;script&gt;" in detail
    assert [m for m in re.findall(r'<div class="crux-chunk" data-ref="([^"]*)"', detail)] == [OWNER, PLAN]
    assert "The launch plan moved the launch to May." in detail  # chunk text through kb.reader.hydrate
    assert on_nodes(view.graph.value) == ["l1"]
    assert f'class="crux-finding-row crux-selected" data-target="{owner.target}"' in view.finding_table.value


def test_a_statement_shared_by_parent_and_leaf_resolves_to_the_mapped_leaf(view):
    plan = next(f for f in view.findings if f.statement == "The launch plan moved the launch to May.")
    assert plan.resolution == "verified" and [c.id for c in plan.cited] == ["l1:f1"]  # not p:f1 or r:f1


def test_selected_setter_and_observers(view, result):
    seen = []
    view.observe(lambda change: seen.append(change["new"]), names="selected_id")
    second, third = view.findings[1], view.findings[2]
    view.selected = second.target
    assert view.finding_select.value == second.target
    view.selected = third  # a CoverageFinding
    view.selected = result.hits[0]  # a FindingHit
    assert seen == [second.target, third.target, result.hits[0].citation.finding_target]
    with pytest.raises(ParameterError, match="the finding target of a finding hit"):
        view.selected = "finding:nope"
    view.selected = None
    assert view.selected is None and view.finding_select.value is None and "no finding selected" in view.detail.value
    assert on_nodes(view.graph.value) == []


def test_resolution_kinds(result):
    hit = next(h for h in result.hits if h.content.startswith("Priya"))
    wrong = replace(hit, citation=replace(hit.citation, finding_target="finding:0000000000000000"))
    lost = replace(hit, citation=replace(hit.citation, supports=(ChunkRef("gone.md", "c0000"),)))

    @dataclass(frozen=True)
    class Recorded:  # a citation that records the cited ids
        finding_target: str
        supports: tuple
        assertion_refs: tuple
        lineage: Lineage
        finding_ids: tuple

    c = hit.citation
    recorded = replace(hit, citation=Recorded(c.finding_target, c.supports, c.assertion_refs, c.lineage, ("l1:f2",)))
    hits4 = type(result.hits)([hit, wrong, lost, recorded])
    # the step records each hit's cited ids: they resolve every hit whose target it knows
    with_ids = coverage_data(replace(result, hits=hits4))
    assert [f.resolution for f in with_ids.findings] == ["verified", "inferred", "verified", "verified"]
    # without those records (an older trace), resolution falls back to the target hash and the supports
    step = next(s for s in result.trace.steps if s.kind == "global-search")
    bare = replace(step, details={k: v for k, v in step.details.items() if k != "cited"})
    old_trace = replace(result.trace, steps=tuple(bare if s is step else s for s in result.trace.steps))
    data = coverage_data(replace(result, trace=old_trace, hits=hits4))
    assert [f.resolution for f in data.findings] == ["verified", "inferred", "unresolved", "verified"]
    # ids recorded for a target they do not reproduce are shown as recorded, not verified
    odd = replace(step, details={**step.details, "cited": {wrong.citation.finding_target: ("l1:f2",)}})
    odd_trace = replace(result.trace, steps=tuple(odd if s is step else s for s in result.trace.steps))
    assert coverage_data(replace(result, trace=odd_trace, hits=type(result.hits)([wrong]))).findings[0].resolution == \
        "recorded"
    assert [[x.id for x in f.cited] for f in data.findings] == [["l1:f2"], ["l1:f2"], [], ["l1:f2"]]
    assert "not verified against the finding target" in coverage_html(replace(result, hits=type(result.hits)([wrong])))


def test_resolution_of_a_hit_citing_several_findings():
    c = ChunkRef
    units = [Report("a", 0, "r", "A", "", (Finding("a:f1", "one", (c("s", "1"), c("s", "2"))),
                                          Finding("a:f2", "two", (c("s", "2"),)),
                                          Finding("a:f3", "three", (c("s", "1"),))), generation_id="g"),
             Report("b", 0, "r", "B", "", (Finding("b:f1", "four", (c("s", "2"),)),), generation_id="g")]
    hits = reduce(candidates({"findings": [{"statement": "merged", "finding_ids": ["a:f2", "a:f3", "b:f1"],
                                            "score": 70}]}), units, namespace="n", limit=5)
    h = hits[0]
    pool = [replace(f, evidence=tuple(str(s) for s in f.evidence)) for u in units for f in u.findings]
    cited, how = resolve_citation(h.content, h.citation.finding_target, tuple(str(s) for s in h.citation.supports),
                                  (), h.citation.lineage.report_community_id, pool)
    assert how == "verified" and [x.id for x in cited] == ["a:f2", "a:f3", "b:f1"]


# ------------------------------------------------------------------------------------ frames
def test_to_frame(view, result):
    frame = view.to_frame()
    assert list(frame.columns) == ["rank", "finding_target", "score", "statement", "community_id", "generation",
                                   "resolution", "cited_findings", "cited_communities", "supports", "n_supports",
                                   "assertion_refs"]
    assert frame["finding_target"].tolist() == [h.citation.finding_target for h in result.hits]
    assert frame["supports"].tolist() == [" ".join(str(s) for s in h.citation.supports) for h in result.hits]
    assert str(frame["rank"].dtype) == "int64" and str(frame["score"].dtype) == "float64"
    assert frame["score"].is_monotonic_decreasing and set(frame["resolution"]) == {"verified"}
    supports = view.to_frame("support")
    assert len(supports) == frame["n_supports"].sum()
    owner = supports[supports["support"] == OWNER]
    assert owner["text"].iloc[0].endswith(SCRIPT) and owner["cited_findings"].iloc[0] == "l1:f2"
    communities = view.to_frame("community")
    assert communities["community_id"].tolist() == ["r", "p", "l1", "l2", "l3", "l4"]
    assert communities.set_index("community_id")["batch"].tolist()[2:] == [1, 1, 1, 1]
    with pytest.raises(ParameterError, match="'by' must be one of"):
        view.to_frame("chunk")


# ------------------------------------------------------------------------------------ reprs
def test_repr_and_html_are_deterministic(kb, result):
    again = run(kb)
    assert again.trace.id != result.trace.id  # a different run...
    a, b = CoverageView(result, kb=kb), CoverageView(again, kb=kb)
    n = len(result.hits)
    assert repr(a) == repr(b) == f"CoverageView(step='global-search', coverage='exact', findings={n}, reports=4/4, " \
                                 f"batches=1, calls=1)"
    assert a.to_html() == b.to_html() and a.graph.value == b.graph.value  # ...renders the same
    assert not re.search(r"0x[0-9a-f]{6,}", a.to_html()) and "duration" not in a.to_html()
    assert coverage_html(result, kb=kb) == a.to_html()


def test_mimebundle_has_widget_view_and_static_html(view):
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == repr(view)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    assert bundle["text/html"] == view.to_html() == view._repr_html_()
    html = bundle["text/html"]
    assert 'class="crux-coverage crux-coverage-static"' in html
    assert html.count('class="crux-finding-row') == len(view.findings) and "<svg" in html
    assert "crux-batch-row" in html and "crux-basis" in html


def test_display_after_close_falls_back_to_html(result, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    view = CoverageView(result)
    view.close()
    view._ipython_display_()
    assert shown == [({"text/plain": repr(view), "text/html": view.to_html()}, True)]


# ------------------------------------------------------------------------------------ escaping
class TagCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [name for name, _ in attrs]


ALLOWED = {"style", "div", "span", "table", "thead", "tbody", "tr", "th", "td", "b", "ul", "li",
           "svg", "g", "title", "path", "rect", "text"}


def test_every_user_string_is_escaped(view):
    owner = next(f for f in view.findings if f.statement.startswith("Priya"))
    view.selected = owner
    parts = (view.to_html(), view.header.value, view.overview.value, view.graph.value, view.batch_table.value,
             view.finding_table.value, view.detail.value)
    for html in parts:
        parser = TagCollector()
        parser.feed(html)
        assert parser.tags <= ALLOWED, parser.tags - ALLOWED
        assert not [a for a in parser.attrs if a.startswith("on")]
    html = view.to_html()
    escaped = "&lt;script&gt;window.__crux_pwned = 1&lt;/script&gt;"
    assert "<script" not in html and "<img" not in html
    assert escaped in view.detail.value  # the finding's statement and its chunk's text
    assert "Launch plan &lt;script&gt;" in view.graph.value or "Launch plan &lt;scri" in view.graph.value  # title
    assert "Launch plan &lt;script&gt;" in view.batch_table.value  # the report title in its batch
    # labels in the Select are plain text (ipywidgets sets textContent)
    assert any("<script>" in label for label, _ in view.finding_select.options)


# ------------------------------------------------------------------------------------ inputs and errors
def test_result_without_global_search_raises_with_hint(kb):
    result = kb.recipe(steps=[retrieve(limit=2)]).retrieve_with_trace(Q)
    with pytest.raises(ParameterError) as info:
        CoverageView(result)
    err = info.value
    assert err.code == "invalid_parameter" and "global_search() step" in err.message
    assert "steps run: 'retrieve'" in err.message and "global_search(" in err.hint


def test_wrong_inputs_raise(kb, result):
    with pytest.raises(ParameterError, match="a RetrievalResult") as info:
        CoverageView(result.hits)
    assert "retrieve_with_trace" in info.value.hint
    with pytest.raises(ParameterError, match="'kb' must be a KnowledgeBase"):
        CoverageView(result, kb="lumen")


def test_failed_step_raises(result):
    failed = replace(result.trace.steps[0], status="error", details=None, error={"name": "X", "message": "boom"})
    with pytest.raises(ParameterError, match="boom"):
        CoverageView(replace(result.trace, steps=(failed,)))


def test_without_kb_the_chunks_are_refs(result):
    view = CoverageView(result)
    assert "pass kb= to show the chunk text" in view.detail.value and view.data.texts == {}
    assert view.to_frame("support")["text"].isna().all()


def test_saved_trace_reopens(kb, result):
    full = CoverageView(result, kb=kb)
    view = CoverageView(result.trace, kb=kb)  # a trace alone: coverage, no findings
    assert repr(view) == ("CoverageView(step='global-search', coverage='exact', findings=trace only, reports=4/4, "
                          "batches=1, calls=1)")
    assert view.selected is None and view.finding_select.options == () and view.finding_select.disabled
    assert "pass the RetrievalResult" in view.finding_table.value and view.to_frame().empty
    assert view.overview.value == full.overview.value and view.batch_table.value == full.batch_table.value
    assert statuses(view.graph.value) == statuses(full.graph.value)
    with pytest.raises(ParameterError, match="RetrievalResult instead"):
        view.selected = full.findings[0].target
    # details and knowledge as plain data (trace.to_dict()), the call log as records
    step = result.trace.steps[0]
    knowledge = to_data(step.knowledge)
    knowledge["calls"] = [r.to_dict() for r in step.knowledge.calls]
    plain = replace(step, details=to_data(step.details), knowledge=knowledge)
    assert isinstance(plain.details["units"][0], dict)
    reopened = CoverageView(replace(result.trace, steps=(plain,)))
    assert reopened.overview.value == full.overview.value and reopened.batch_table.value == full.batch_table.value
    assert CoverageView(result.trace.to_dict()).to_frame("community").equals(full.to_frame("community"))
    # and a result whose details are plain data still resolves its citations
    again = CoverageView(replace(result, trace=replace(result.trace, steps=(plain,))))
    assert [f.cited for f in again.findings] == [f.cited for f in full.findings]


def test_compensated_run_shows_excluded_reports():
    kb = make()
    kb.remove("team.md")  # l2 held a chunk of it: l2 and its ancestors p and r are excluded
    result = run(kb)
    k = result.trace.step("global-search").knowledge
    assert k.coverage == "compensated" and "without reports holding removed" in k.coverage_basis
    details = result.trace.step("global-search").details
    assert details["excluded"] == ("l2", "p", "r")
    with_kb = CoverageView(result, kb=kb)
    status = statuses(with_kb.graph.value)
    assert status == {"r": "excluded", "p": "excluded", "l2": "excluded", "l1": "mapped", "l3": "mapped",
                      "l4": "mapped"}
    assert with_kb.to_frame("community").set_index("community_id").loc["l2", "parent_id"] == "p"  # from the kb
    assert 'stroke-dasharray="4 3"' in with_kb.graph.value and "excluded (compensation)" in with_kb.graph.value
    alone = CoverageView(result)  # no kb: l2's place is unknown, drawn as a root
    assert statuses(alone.graph.value)["l2"] == "excluded"
    assert pd.isna(alone.to_frame("community").set_index("community_id").loc["l2", "parent_id"])


def test_fallback_choices_and_budget_are_shown(kb, adaptive):
    view = CoverageView(adaptive, kb=kb)
    a = adaptive.trace.step("global-search").knowledge.adaptive
    chosen = {r.community_id for r in a.visited + a.skipped if r.fallback}
    frame = view.to_frame("community").set_index("community_id")
    assert set(frame.index[frame["fallback"]]) == chosen
    overview = view.overview.value
    assert f"fallback {a.fallback} chose {len(chosen)}" in overview and f"input chars {a.spent_chars:,}" in overview
    assert (f"budget {a.budget_chars:,} chars" if a.budget_chars is not None else "no budget") in overview
    tips = dict(re.findall(r'data-id="([^"]*)"[^>]*><title>([^<]*)</title>', view.graph.value))
    assert tips and all("chosen by the fallback" in tips[c] for c in chosen if c in tips)
    assert not any("chosen by the fallback" in t for c, t in tips.items() if c not in chosen)


def test_one_definition_of_input_chars(kb, adaptive):
    """The descent line, the preflight table's actual column and the trace agree on a run's input chars."""
    import re

    knowledge = adaptive.trace.step("global-search").knowledge
    view = CoverageView(adaptive, kb=kb)
    html = view.to_html()
    row = re.search(r'<tr data-row="input chars"><th>input chars</th><td[^>]*>[^<]*</td><td[^>]*>([\d,]+)</td>', html)
    line = re.search(r"input chars ([\d,]+)</div>", html)
    assert row and line, "both places show input chars"
    shown = {int(row.group(1).replace(",", "")), int(line.group(1).replace(",", ""))}
    assert shown == {knowledge.input_chars} == {knowledge.adaptive.spent_chars}
    assert knowledge.input_chars > sum(b.input_chars for b in view.data.batches)  # the ratings count too
