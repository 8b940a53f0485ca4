"""ExpansionView without a browser: model state, filters, selection, frames, reprs, escaping, errors."""

from __future__ import annotations

import re
from dataclasses import replace
from html.parser import HTMLParser

import pandas as pd
import pytest

from crux_nb.errors import ParameterError
from crux_nb.retrieval import expand_relations, retrieve
from crux_nb.hits import to_data
from crux_nb.testing import make_kb
from crux_nb.widgets import ExpansionView, expansion_data, expansion_html, expansion_svg, path_text

SCRIPT = '<script>alert("crux")</script><img src=x onerror="window.__crux_pwned=1">'


def graph_kb(**names):
    """Two seeds (plan:c1, plan:c2) reach four chunks through entities and 'related' edges (distances 0, 0, 1, 2)."""
    kb = make_kb(id="demo", chunks=[
        ("plan", "c1", 1, "Release planning for Beacon 3.0 starts in March."),
        ("plan", "c2", 2, "The release planning review is chaired by Priya."),
        ("notes", "c1", 1, "Beacon notes: " + SCRIPT),
        ("team", "c1", 1, "Priya Raman leads the platform team."),
        ("ops", "c1", 1, "The platform team runs the on-call rotation."),
        ("oncall", "c1", 1, "On-call handbook: escalation within 15 minutes."),
        ("misc", "c1", 1, "Unrelated lunch menu."),
    ])
    kb.add_entities(pd.DataFrame({"entity_id": ["beacon", "priya"],
                                  "canonical_name": [names.get("beacon", "Beacon 3.0"), "Priya Raman"]}))
    kb.add_edges(pd.DataFrame([{"from_ref": a, "to_ref": b, "type": t, "evidence": [a]} for a, b, t in [
        ("chunk:plan:c1", "entity:beacon", "mentions"), ("chunk:notes:c1", "entity:beacon", "mentions"),
        ("chunk:plan:c2", "entity:priya", "mentions"), ("chunk:team:c1", "entity:priya", "mentions"),
        ("chunk:team:c1", "chunk:ops:c1", "related"), ("chunk:ops:c1", "chunk:oncall:c1", "related"),
    ]]))
    return kb


def run(kb, *steps, query="release planning"):
    steps = steps or (retrieve(limit=2), expand_relations(types=["mentions", "related"], depth=2, seeds=["hits"],
                                                          ranking="upstream"))
    return kb.recipe(steps=list(steps)).retrieve_with_trace(query)


@pytest.fixture(scope="module")
def kb():
    return graph_kb()


@pytest.fixture(scope="module")
def result(kb):
    return run(kb)


@pytest.fixture
def view(result):
    return ExpansionView(result)


PATHS = [
    "chunk:plan:c1 —mentions→ entity:beacon —mentions→ chunk:notes:c1",
    "chunk:plan:c2 —mentions→ entity:priya —mentions→ chunk:team:c1",
    "chunk:plan:c2 —mentions→ entity:priya —mentions→ chunk:team:c1 —related→ chunk:ops:c1",
    "chunk:plan:c2 —mentions→ entity:priya —mentions→ chunk:team:c1 —related→ chunk:ops:c1 —related→ chunk:oncall:c1",
]
KEYS = ["demo:notes:c1", "demo:team:c1", "demo:ops:c1", "demo:oncall:c1"]


def on_edges(svg):
    return re.findall(r'<g class="crux-edge crux-on" data-from="([^"]*)" data-to="([^"]*)" data-type="([^"]*)"', svg)


# ------------------------------------------------------------------------------------ model state
def test_initial_state(view):
    assert view.step_id == "expand-relations"
    assert view.seeds == ("chunk:plan:c1", "chunk:plan:c2")
    assert [x.key for x in view.expansions] == KEYS and view.visible == view.expansions
    assert view.type_filter.options == ("mentions", "related") and view.type_filter.value == ("mentions", "related")
    assert (view.distance_slider.min, view.distance_slider.max, view.distance_slider.value) == (0, 2, 2)
    assert [v for _, v in view.hit_select.options] == KEYS
    assert view.hit_select.options[3][0] == "4. chunk:oncall:c1  (d=2)"
    # the first hit is selected, everywhere
    assert view.selected_id == view.hit_select.value == KEYS[0]
    assert view.selected == view.expansions[0] and view.selected.path[-1] == "chunk:notes:c1"
    assert "crux-expansion" in view._dom_classes and "crux-hit-select" in view.hit_select._dom_classes
    assert view.hit_select.get_state()["index"] == 0


def test_paths_table_lists_every_added_hit(view):
    rows = re.findall(r'<tr class="(crux-hit-row[^"]*)" data-key="([^"]*)">', view.paths.value)
    assert [k for _, k in rows] == KEYS
    assert [c for c, _ in rows] == ["crux-hit-row crux-selected"] + ["crux-hit-row"] * 3
    texts = [re.sub(r"<[^>]+>", "", p) for p in re.findall(r'<span class="crux-path">(.*?)</span></td>', view.paths.value)]
    assert texts == PATHS
    assert '<td class="crux-distance">2</td>' in view.paths.value and "0.0313" in view.paths.value


# ------------------------------------------------------------------------------------ filters
def test_edge_type_filter(view):
    view.type_filter.value = ("mentions",)
    assert [x.key for x in view.visible] == KEYS[:2]
    assert [v for _, v in view.hit_select.options] == KEYS[:2]
    assert repr(view) == "ExpansionView(step='expand-relations', added=4, seeds=2, shown=2)"
    assert "related" not in view.graph.value and "chunk:ops:c1" not in view.paths.value
    view.type_filter.value = ()
    assert view.visible == () and view.selected is None and view.hit_select.value is None
    assert "no added hit matches the filters" in view.paths.value and "no hit selected" in view.detail.value
    view.type_filter.value = ("mentions", "related")
    assert len(view.visible) == 4 and view.selected_id == KEYS[0]


def test_distance_filter_keeps_or_moves_the_selection(view):
    view.hit_select.value = KEYS[1]
    view.distance_slider.value = 0
    assert [x.key for x in view.visible] == KEYS[:2] and view.selected_id == KEYS[1]  # still shown: kept
    view.distance_slider.value = 2
    view.hit_select.value = KEYS[3]
    view.distance_slider.value = 1
    assert [x.distance for x in view.visible] == [0, 0, 1]
    assert view.selected_id == KEYS[0]  # filtered out: the first shown hit is selected
    assert "chunk:oncall:c1" not in view.graph.value


def test_filter_method_and_errors(view):
    assert view.filter(types=["related", "mentions"], max_distance=1) is view
    assert view.type_filter.value == ("mentions", "related") and view.distance_slider.value == 1
    view.filter(types="mentions")
    assert view.type_filter.value == ("mentions",)
    with pytest.raises(ParameterError, match="edge types drawn from"):
        view.filter(types=["nope"])
    with pytest.raises(ParameterError, match="max_distance"):
        view.filter(max_distance=-1)


# ------------------------------------------------------------------------------------ selection
def test_selecting_a_hit_highlights_its_path(view):
    first = view.graph.value
    assert on_edges(first) == [("chunk:plan:c1", "entity:beacon", "mentions"),
                               ("entity:beacon", "chunk:notes:c1", "mentions")]
    view.hit_select.value = KEYS[3]  # what the browser does
    assert view.selected_id == KEYS[3] and view.selected.distance == 2
    svg = view.graph.value
    assert svg != first
    assert sorted(on_edges(svg)) == sorted(zip(view.selected.path, view.selected.path[1:], view.selected.edges))
    on_nodes = re.findall(r'<g class="crux-node [^"]*crux-on[^"]*" data-ref="([^"]*)"', svg)
    assert sorted(on_nodes) == sorted(view.selected.path)
    assert 'class="crux-hit-row crux-selected" data-key="demo:oncall:c1"' in view.paths.value
    assert 'data-key="demo:oncall:c1"' in view.detail.value and "escalation within 15 minutes" in view.detail.value


def test_selected_setter_and_observers(view):
    seen = []
    view.observe(lambda change: seen.append(change["new"]), names="selected_id")
    view.selected = KEYS[2]
    assert view.hit_select.value == KEYS[2] and view.selected.ref == "chunk:ops:c1"
    view.selected = view.expansions[1]
    view.hit_select.value = KEYS[0]
    assert seen == [KEYS[2], KEYS[1], KEYS[0]]
    with pytest.raises(ParameterError, match="the key of an added hit"):
        view.selected = "demo:misc:c1"
    view.distance_slider.value = 0
    with pytest.raises(ParameterError, match="a hit the filters show"):
        view.selected = KEYS[3]
    view.selected = None
    assert view.selected is None and view.hit_select.value is None and "no hit selected" in view.detail.value


def test_svg_layout_is_layered(result):
    data = expansion_data(result)
    svg = expansion_svg(data, data.expansions)
    x_of = dict((ref, float(x)) for ref, x in re.findall(r'data-ref="([^"]*)"[^>]*><title>[^<]*</title><rect x="([\d.]+)"', svg))
    assert x_of["chunk:plan:c1"] == x_of["chunk:plan:c2"] < x_of["entity:priya"] == x_of["entity:beacon"]
    assert x_of["entity:priya"] < x_of["chunk:team:c1"] < x_of["chunk:ops:c1"] < x_of["chunk:oncall:c1"]
    assert 'class="crux-node crux-node-seed"' in svg and 'class="crux-node crux-node-entity"' in svg
    assert 'class="crux-node crux-node-hit"' in svg
    assert "crux-on" not in svg  # nothing selected
    assert svg == expansion_svg(data, data.expansions)


# ------------------------------------------------------------------------------------ frames
def test_to_frame(view):
    frame = view.to_frame()
    assert list(frame.columns) == ["position", "key", "ref", "seed", "path", "edges", "hops", "distance", "score",
                                   "supports", "content", "reason"]
    assert frame["reason"].tolist() == [""] * 4  # upstream records no reason
    assert frame["key"].tolist() == KEYS and frame["path"].tolist() == PATHS
    assert frame["distance"].tolist() == [0, 0, 1, 2] and frame["hops"].tolist() == [2, 2, 3, 4]
    assert frame["edges"].iloc[3] == "mentions > mentions > related > related"
    assert str(frame["distance"].dtype) == "int64" and str(frame["score"].dtype) == "float64"
    assert pd.api.types.is_string_dtype(frame["path"])
    assert frame["content"].iloc[0].endswith(SCRIPT)
    assert frame["score"].is_monotonic_decreasing
    assert frame["score"].tolist() == [h.score for h in view.data.expansions]
    view.filter(max_distance=0)
    assert len(view.to_frame()) == 4 and view.to_frame(shown_only=True)["key"].tolist() == KEYS[:2]


def test_path_text():
    assert path_text(("chunk:a:c1", "entity:x", "chunk:b:c3"), ("mentions", "mentions")) == \
        "chunk:a:c1 —mentions→ entity:x —mentions→ chunk:b:c3"
    assert path_text(("chunk:a:c1",), ()) == "chunk:a:c1"


# ------------------------------------------------------------------------------------ reprs
def test_repr_and_html_are_deterministic(kb, result):
    again = run(kb)
    assert again.trace.id != result.trace.id  # a different run...
    a, b = ExpansionView(result), ExpansionView(again)
    assert repr(a) == repr(b) == "ExpansionView(step='expand-relations', added=4, seeds=2)"
    assert a.to_html() == b.to_html() and a.graph.value == b.graph.value  # ...renders the same
    assert "0x" not in repr(a) and not re.search(r"0x[0-9a-f]{6,}", a.to_html())
    assert expansion_html(result) == a.to_html()


def test_mimebundle_has_widget_view_and_static_html(view):
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == repr(view)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    assert bundle["text/html"] == view.to_html() == view._repr_html_()
    html = bundle["text/html"]
    assert 'class="crux-expansion crux-expansion-static"' in html and html.count('class="crux-hit-row') == 4
    assert "<svg" in html and "crux-path" in html


def test_display_after_close_falls_back_to_html(result, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append((obj, raw)))
    view = ExpansionView(result)
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


ALLOWED = {"style", "div", "span", "table", "thead", "tbody", "tr", "th", "td",
           "svg", "g", "title", "path", "polygon", "rect", "text"}


def test_every_user_string_is_escaped():
    bad = '<img src=x onerror="alert(1)">'
    kb = make_kb(id="x", chunks=[("a<b>", "c1", 1, "alpha " + SCRIPT), ('q"s', "c<i>", 1, "beta " + SCRIPT)])
    kb.add_entities(pd.DataFrame({"entity_id": ["e<script>"], "canonical_name": [bad]}))
    kb.add_edges(pd.DataFrame([{"from_ref": r, "to_ref": "entity:e<script>", "type": "men<u>tions", "evidence": [r]}
                               for r in ("chunk:a<b>:c1", 'chunk:q"s:c<i>')]))
    result = run(kb, retrieve(limit=1), expand_relations(seeds=["hits"]), query="alpha")
    view = ExpansionView(result, kb=kb)
    assert [x.ref for x in view.expansions] == ['chunk:q"s:c<i>']
    for html in (view.to_html(), view.header.value, view.graph.value, view.paths.value, view.detail.value):
        parser = TagCollector()
        parser.feed(html)
        assert parser.tags <= ALLOWED, parser.tags - ALLOWED
        assert not [a for a in parser.attrs if a.startswith("on")]
    html = view.to_html()
    assert "&lt;script&gt;alert(&quot;crux&quot;)&lt;/script&gt;" in html
    assert "men&lt;u&gt;tions" in html and "chunk:q&quot;s:c&lt;i&gt;" in html
    assert "&lt;img src=x" in view.graph.value  # the entity's name, as text
    # labels in the Select are plain text (ipywidgets sets textContent)
    assert view.hit_select.options[0][0] == '1. chunk:q"s:c<i>  (d=1)'


# ------------------------------------------------------------------------------------ inputs and errors
def test_result_without_expansion_step_raises_with_hint(kb):
    result = kb.recipe(steps=[retrieve(limit=2)]).retrieve_with_trace("release planning")
    with pytest.raises(ParameterError) as info:
        ExpansionView(result)
    err = info.value
    assert err.code == "invalid_parameter" and "expand_relations() step" in err.message
    assert "steps run: 'retrieve'" in err.message and "expand_relations(" in err.hint
    with pytest.raises(ParameterError, match="a step with id 'other'"):
        ExpansionView(run(kb), step="other")
    with pytest.raises(ParameterError, match="the id of an expand_relations"):
        ExpansionView(run(kb), step="retrieve")


def test_wrong_inputs_raise(kb):
    with pytest.raises(ParameterError, match="a RetrievalResult") as info:
        ExpansionView(kb.recipe(steps=[retrieve(), expand_relations()]).retrieve("release planning"))
    assert "retrieve_with_trace" in info.value.hint
    with pytest.raises(ParameterError, match="'step'"):
        ExpansionView(run(kb), step=3)


def test_failed_expansion_step_raises(result):
    failed = replace(result.trace.steps[1], status="error", details=None, error={"name": "X", "message": "boom"})
    trace = replace(result.trace, steps=(result.trace.steps[0], failed))
    with pytest.raises(ParameterError, match="boom"):
        ExpansionView(trace)


def test_saved_trace_reopens(kb, result):
    view = ExpansionView(result.trace, kb=kb)  # a trace alone: texts and names come from the kb
    assert [x.key for x in view.expansions] == KEYS and view.to_frame()["path"].tolist() == PATHS
    assert "escalation within 15 minutes" in view.to_frame()["content"].iloc[3]
    assert "Priya Raman" in view.graph.value  # entity names from the kb
    step = result.trace.steps[1]
    plain = replace(step, details=to_data(step.details))  # details as plain JSON data
    assert isinstance(plain.details["expansions"][0], dict)
    reopened = ExpansionView(replace(result.trace, steps=(result.trace.steps[0], plain)))
    assert reopened.expansions == view.expansions


def test_no_added_hits_and_several_expansion_steps(kb):
    empty = run(kb, retrieve(limit=2), expand_relations(types=["nothing"]))
    view = ExpansionView(empty)
    assert repr(view) == "ExpansionView(step='expand-relations', added=0, seeds=2)"
    assert view.selected is None and view.hit_select.options == () and view.distance_slider.disabled
    assert "no added hits" in view.to_html() and view.to_frame().empty
    disabled = run(kb, retrieve(limit=2), expand_relations(depth=0))
    assert repr(ExpansionView(disabled)) == "ExpansionView(step='expand-relations', added=0, seeds=0)"

    from crux_nb.retrieval.expand.step import ExpandRelationsStep

    second = ExpandRelationsStep(types=("related",), id="expand-again")
    twice = run(kb, retrieve(limit=2), expand_relations(types=["mentions"], seeds=["hits"]), second)
    assert ExpansionView(twice).step_id == "expand-relations"
    again = ExpansionView(twice, step="expand-again")
    assert again.step_id == "expand-again" and all(x.edges == ("related",) for x in again.expansions)


# ------------------------------------------------------------------------------------ relevance reasons
def test_relevance_reason_is_shown_per_hit_and_hits_sort_by_score(kb):
    result = run(kb, retrieve(limit=2), expand_relations(types=["mentions", "related"], depth=2, seeds=["hits"]))
    view = ExpansionView(result, kb=kb)
    scores = [x.score for x in view.visible]
    assert scores == sorted(scores, reverse=True) and all(x.reason is not None for x in view.expansions)
    first = view.visible[0]
    assert first.reason.entities and first.reason.score == first.score
    name, weight = view._data.label(first.reason.entities[0][0]), first.reason.entities[0][1]
    cells = re.findall(r'<td class="crux-reason">(.*?)</td>', view.paths.value)
    assert len(cells) == len(view.visible)
    assert name in cells[0] and f"1/{round(1 / weight)}" in cells[0] and "relevance" in cells[0]
    assert "why" in view.detail.value and f"mass {first.reason.graph:.4f}" in view.detail.value
    text = view.to_frame()["reason"].iloc[0]
    assert text.startswith(f"relevance {first.reason.relevance:.3f} + graph ")
    # the parts shown add up to the score shown
    parts = [float(v) for v in re.findall(r"(?:relevance|graph|source name) ([0-9.]+)", text.split(" via ")[0])]
    total = float(re.search(r"= ([0-9.]+)", text).group(1))
    assert abs(sum(parts) - total) <= 0.002 and abs(total - first.score) <= 0.0005
    assert on_edges(view.graph.value)  # the selected hit's path is still highlighted
    upstream = ExpansionView(run(kb), kb=kb)
    assert "upstream order" in upstream.paths.value and "why" not in upstream.detail.value


def test_reasons_survive_a_saved_trace(kb):
    result = run(kb, retrieve(limit=2), expand_relations(types=["mentions"], seeds=["hits"]))
    records = result.trace.steps[1].details["expansions"]
    from crux_nb.widgets._expansion_data import _record
    plain = {"key": records[0].key, "ref": records[0].ref, "seed": records[0].seed, "path": list(records[0].path),
             "edges": list(records[0].edges), "distance": records[0].distance, "score": records[0].score,
             "position": records[0].position, "supports": list(records[0].supports),
             "reason": records[0].reason.to_dict()}
    assert _record(plain) == records[0]
