"""CommunityExplorer without a browser: tree, sizes, selection, reports with cited chunks, frames, reprs, escaping, errors.

A small knowledge base gets a hand-written community generation (no model build).
"""

from __future__ import annotations

import re
from html.parser import HTMLParser

import pytest

import crux_nb
from crux_nb.community.cluster import Community
from crux_nb.community.frames import generation_frames, input_fingerprint, with_generation
from crux_nb.community import Finding, Report
from crux_nb.errors import ParameterError
from crux_nb.models import OfflineModel
from crux_nb.widgets import CommunityExplorer, CommunityInfo, explorer_data, explorer_html, explorer_svg

SCRIPT = '<script>window.__crux_pwned = 1</script><img src=x onerror="window.__crux_pwned=2">'
DOCS = {
    "plan.md": "The launch plan moved the launch to May.",
    "owner.md": "Priya owns the launch plan " + SCRIPT,
    "team.md": "The platform team runs the on-call rotation.",
    "eu.md": "The EU region moved to Dublin.",
}
PLAN, OWNER, TEAM, EU = (f"chunk:{s}:c0000" for s in DOCS)
# (community_id, level, parent_id, title, entities, [(finding_id, statement, evidence)])
TREE = [
    ("r", 2, None, "Everything", 3, [("f1", "The launch plan moved the launch to May.", [PLAN])]),
    ("p", 1, "r", "Launch and team", 2, [("f1", "The launch plan moved the launch to May.", [PLAN]),
                                         ("f2", "The platform team runs the on-call rotation.", [TEAM])]),
    ("l1", 0, "p", "Launch plan " + SCRIPT, 1, [("f1", "The launch plan moved the launch to May.", [PLAN]),
                                                ("f2", "Priya owns the launch plan " + SCRIPT, [OWNER, PLAN])]),
    ("l2", 0, "p", "Platform team", 1, [("f1", "The platform team runs the on-call rotation.", [TEAM])]),
    ("l3", 0, "r", "EU region", 1, [("f1", "The EU region moved to Dublin.", [EU])]),
]
ORDER = ["r", "p", "l1", "l2", "l3"]


def publish(kb, tree=TREE):
    state = kb.state
    children = {}
    for cid, _, parent, *_ in tree:
        if parent is not None:
            children.setdefault(parent, []).append(cid)
    comms, reports = [], {}
    for cid, level, parent, title, n_entities, findings in tree:
        kids = tuple(children.get(cid, ()))
        kind = "root" if parent is None else ("parent" if kids else "leaf")
        refs = tuple(dict.fromkeys(r for _, _, ev in findings for r in ev))
        entities = tuple(f"entity:e{i}" for i in range(n_entities))
        comms.append(Community(cid, level, kind, parent, kids, refs, entities, 0))
        reports[cid] = Report(cid, level, parent, title, f"Summary of {title}.",
                              tuple(Finding(fid, s, tuple(ev)) for fid, s, ev in findings), f"h-{cid}", n_entities,
                              len(refs))
    frames = generation_frames("corpus", "g-test", comms, reports, input_fp=input_fingerprint(state, None),
                               strategy_fp=kb.communities.config.strategy_fingerprint, view=(None, None), sequence=1,
                               source_hashes=dict(zip(state.documents["source_id"], state.documents["content_hash"])))
    kb.commit(lambda s: with_generation(s, "corpus", frames))


def make(built=True):
    kb = crux_nb.knowledge_base(id="demo", communities=crux_nb.communities(model=OfflineModel()))
    for source, text in DOCS.items():
        kb.add_text(source, text)
    if built:
        publish(kb)
        assert kb.communities.status() == "ready"
    return kb


@pytest.fixture(scope="module")
def kb():
    return make()


@pytest.fixture
def view(kb):
    return CommunityExplorer(kb.communities)


def node_ids(svg, cls="crux-node"):
    return re.findall(rf'<g class="{cls}[^"]*" data-id="([^"]*)"', svg)


# ------------------------------------------------------------------------------------ model state
def test_initial_state(view):
    assert [c.community_id for c in view.communities] == ORDER
    assert [v for _, v in view.community_select.options] == ORDER
    labels = [label for label, _ in view.community_select.options]
    assert labels[0] == "Everything  (1)" and labels[1] == "\u00a0" * 3 + "Launch and team  (2)"
    assert labels[2].startswith("\u00a0" * 6 + "Launch plan <script>") and labels[4] == "\u00a0" * 3 + "EU region  (1)"
    assert view.selected_id == view.community_select.value == "r" and view.selected.title == "Everything"
    assert "crux-explorer" in view._dom_classes and "crux-community-select" in view.community_select._dom_classes


def test_tree_draws_every_community_with_its_size(view):
    svg = view.tree.value
    assert node_ids(svg) == ORDER
    kinds = dict(re.findall(r'data-id="([^"]*)" data-kind="([^"]*)"', svg))
    assert kinds == {"r": "root", "p": "parent", "l1": "leaf", "l2": "leaf", "l3": "leaf"}
    sizes = dict(re.findall(r'data-id="([^"]*)"[^>]*>(?:(?!</g>).)*<text class="crux-node-badge"[^>]*>(\d+)</text>',
                            svg))
    assert sizes == {"r": "1", "p": "2", "l1": "2", "l2": "1", "l3": "1"}  # chunks the findings cite, per community
    assert svg.count('class="crux-link') == 4
    x = dict(re.findall(r'data-id="([^"]*)" data-kind="[^"]*"><title>[^<]*</title><rect x="([\d.]+)"', svg))
    assert float(x["r"]) < float(x["p"]) < float(x["l1"]) == float(x["l3"])
    rows = re.findall(r'<tr class="crux-community-row[^"]*" data-id="([^"]*)">', view.table.value)
    assert rows == ORDER


def test_selecting_a_community_shows_its_report_and_cited_chunks(view):
    view.community_select.value = "l1"  # what the browser does
    assert view.selected_id == "l1" and view.selected.level == 0 and view.selected.parent_id == "p"
    detail = view.detail.value
    assert 'data-id="l1"' in detail and "Summary of Launch plan &lt;script&gt;" in detail
    assert re.findall(r'data-finding="([^"]*)"', detail) == ["f1", "f2"]
    assert re.findall(r'<div class="crux-chunk" data-ref="([^"]*)"', detail) == [PLAN, OWNER, PLAN]
    assert "Priya owns the launch plan &lt;script&gt;" in detail  # the chunk text, through the kb reader
    svg = view.tree.value
    assert node_ids(svg, "crux-node crux-node-leaf crux-on") == ["l1"]
    on = re.findall(r'<path class="crux-link crux-on" data-from="([^"]*)" data-to="([^"]*)"', svg)
    assert sorted(on) == [("p", "l1"), ("r", "p")]  # the path up to the root
    assert 'class="crux-community-row crux-selected" data-id="l1"' in view.table.value


def test_selected_setter_and_observers(view):
    seen = []
    view.observe(lambda change: seen.append(change["new"]), names="selected_id")
    view.selected = "l3"
    assert view.community_select.value == "l3"
    view.selected = view.communities[1]
    view.community_select.value = "l2"
    assert seen == ["l3", "p", "l2"]
    with pytest.raises(ParameterError, match="a community id"):
        view.selected = "nope"
    view.selected = None
    assert view.selected is None and view.community_select.value is None
    assert "no community selected" in view.detail.value and "crux-on" not in view.tree.value


def test_to_frame(view):
    frame = view.to_frame()
    assert list(frame.columns) == ["community_id", "level", "kind", "parent_id", "children", "n_chunks", "n_entities",
                                   "title", "findings", "evidence"]
    assert frame["community_id"].tolist() == ORDER and frame["level"].tolist() == [2, 1, 0, 0, 0]
    assert frame["n_entities"].tolist() == [3, 2, 1, 1, 1] and frame["children"].tolist() == [2, 2, 0, 0, 0]
    assert frame.set_index("community_id").loc["l1", "evidence"] == f"{PLAN} {OWNER}"
    assert str(frame["n_chunks"].dtype) == "int64"


# ------------------------------------------------------------------------------------ reprs
def test_repr_and_html_are_deterministic(kb, view):
    other = CommunityExplorer(kb.communities)
    assert repr(view) == repr(other) == "CommunityExplorer(scope='corpus', status='ready', communities=5, levels=3)"
    assert view.to_html() == other.to_html() and not re.search(r"0x[0-9a-f]{6,}", view.to_html())
    assert explorer_html(kb.communities) == view.to_html()
    view.selected = "l2"
    assert explorer_html(kb.communities, selected="l2") == view.to_html()
    assert explorer_svg(explorer_data(kb.communities), view.selected) in view.tree.value


def test_mimebundle_has_widget_view_and_static_html(view):
    bundle = view._repr_mimebundle_()
    assert bundle["text/plain"] == repr(view)
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    assert bundle["text/html"] == view.to_html() == view._repr_html_()
    assert 'class="crux-explorer crux-explorer-static"' in bundle["text/html"] and "<svg" in bundle["text/html"]


# ------------------------------------------------------------------------------------ escaping
class TagCollector(HTMLParser):
    def __init__(self):
        super().__init__()
        self.tags, self.attrs = set(), []

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        self.attrs += [name for name, _ in attrs]


ALLOWED = {"style", "div", "span", "table", "thead", "tbody", "tr", "th", "td", "svg", "g", "title", "path", "rect",
           "text"}


def test_every_user_string_is_escaped(view):
    view.selected = "l1"
    for html in (view.to_html(), view.header.value, view.tree.value, view.table.value, view.detail.value):
        parser = TagCollector()
        parser.feed(html)
        assert parser.tags <= ALLOWED, parser.tags - ALLOWED
        assert not [a for a in parser.attrs if a.startswith("on")]
    html = view.to_html()
    assert "<script" not in html and "<img" not in html
    escaped = "&lt;script&gt;window.__crux_pwned = 1&lt;/script&gt;"
    assert escaped in view.detail.value and escaped in view.table.value  # finding, chunk text, title
    assert view.detail.value.count(escaped) >= 3


# ------------------------------------------------------------------------------------ states and errors
def test_a_surface_never_built_shows_nothing_and_builds_nothing():
    kb = make(built=False)
    view = CommunityExplorer(kb.communities)
    assert kb.communities.status() == "missing"  # reading never builds
    assert repr(view) == "CommunityExplorer(scope='corpus', status='missing', communities=0, levels=0)"
    assert view.selected is None and view.community_select.options == () and view.community_select.disabled
    assert "not built yet: call prepare()" in view.to_html() and view.to_frame().empty
    with pytest.raises(ParameterError, match="call prepare"):
        view.selected = "r"


def test_a_stale_surface_says_so():
    kb = make()
    kb.add_text("more.md", "Another note.")
    view = CommunityExplorer(kb.communities)
    assert view.data.status == "stale" and len(view.communities) == 5
    assert "⚠ stale: this generation was built from older input" in view.header.value


def test_a_view_surface():
    kb = crux_nb.knowledge_base(id="demo", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_text("plan.md", "The launch plan moved.", metadata={"team": "a"})
    surface = kb.view(id="team-a", where={"team": "a"}).communities
    view = CommunityExplorer(surface)
    assert view.data.scope == surface.scope and f"view team-a@{surface.view[1]}" in view.header.value


def test_wrong_inputs_raise(kb):
    with pytest.raises(ParameterError, match="a communities surface") as info:
        CommunityExplorer(kb)
    assert "CommunityExplorer(kb.communities)" in info.value.hint
    with pytest.raises(ParameterError, match="a communities surface"):
        CommunityExplorer("corpus")
    with pytest.raises(ParameterError, match="'kb' must be a KnowledgeBase"):
        CommunityExplorer(kb.communities, kb=3)


def test_texts_from_another_kb(kb):
    other = crux_nb.knowledge_base(id="other")
    other.add_text("plan.md", "A different text for the plan.")
    view = CommunityExplorer(kb.communities, kb=other)
    view.selected = "l1"
    assert "A different text for the plan." in view.detail.value
    assert "not a chunk of the knowledge base" in view.detail.value  # owner.md is not in the other kb
    assert isinstance(view.selected, CommunityInfo)
