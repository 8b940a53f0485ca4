"""The views' static forms: published beside the widget (and hidden by it exactly), trees that fit any size,
repeated warnings summarized."""

from __future__ import annotations

import re
from dataclasses import replace

import pytest

import crux_nb
from crux_nb.display.html import summarize_warnings, warnings_html
from crux_nb.widgets import ExpansionView, expansion_data
from crux_nb.widgets._expansion_html import header_html
from crux_nb.widgets.layout import MARGIN, NODE_H, ROW_GAP, TreeNode, tree_layout, tree_svg


@pytest.fixture(scope="module")
def result():
    kb = crux_nb.datasets.load_tiny(entities=True)
    steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
    return kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")


def shown_by(view, monkeypatch):
    import IPython.display

    shown = []
    monkeypatch.setattr(IPython.display, "display", lambda obj, raw=False: shown.append(obj))
    view._ipython_display_()
    return shown


def test_display_publishes_the_widget_then_the_static_view_the_widget_hides(result, monkeypatch):
    view = ExpansionView(result)
    widget, static = shown_by(view, monkeypatch)
    assert widget["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    assert widget["text/plain"] == repr(view) and "text/html" not in widget  # one static copy only
    assert set(static) == {"text/html"} and view.to_html() in static["text/html"]
    key = re.search(r'data-crux-static="([0-9a-f]+)"', static["text/html"]).group(1)
    hider = view.children[-1]
    assert hider.layout.display == "none" and f'[data-crux-static="{key}"]' in hider.value
    # the same view shown again after a change: its new static copy is hidden too, the first one still is
    view.filter(max_distance=1)
    _, again = shown_by(view, monkeypatch)
    second = re.search(r'data-crux-static="([0-9a-f]+)"', again["text/html"]).group(1)
    assert second != key and f'"{key}"' in hider.value and f'"{second}"' in hider.value
    assert view.children.count(hider) == 1
    # a static output of another view is not hidden by this one
    other = shown_by(ExpansionView(result).filter(types=["mentions"], max_distance=0), monkeypatch)[1]
    assert re.search(r'data-crux-static="([0-9a-f]+)"', other["text/html"]).group(1) not in hider.value


def test_static_keys_are_deterministic(result, monkeypatch):
    first = shown_by(ExpansionView(result), monkeypatch)[1]
    second = shown_by(ExpansionView(result), monkeypatch)[1]
    assert first == second  # no random ids: nbval can compare the stored output


def test_a_500_community_tree_keeps_its_root_top_left_and_its_text_size():
    nodes = [TreeNode("root", None, 2, "Everything", "root")]
    nodes += [TreeNode(f"p{i:02d}", "root", 1, f"Parent {i}", "parent") for i in range(20)]
    nodes += [TreeNode(f"l{i:03d}", f"p{i % 20:02d}", 0, f"Leaf {i}", "leaf") for i in range(479)]
    pos, order = tree_layout(nodes)
    assert len(pos) == 500 and order[0] == "root" and pos["root"] == (0, 0)
    assert all(pos[f"p{i:02d}"][1] == min(pos[n.id][1] for n in nodes if n.parent_id == f"p{i:02d}") for i in range(20))
    colors = {"root": ("#fff", "#000"), "parent": ("#fff", "#000"), "leaf": ("#fff", "#000")}
    svg = tree_svg(nodes, colors)
    assert 'style="max-width:none"' in svg and 'font-size="12"' in svg  # scrolls, never shrinks
    height = float(re.search(r'height="([\d.]+)"', svg).group(1))
    assert height == MARGIN * 2 + 479 * (NODE_H + ROW_GAP) - ROW_GAP  # one row per leaf
    root = re.search(r'data-id="root"[^>]*><title>[^<]*</title><rect x="([\d.]+)" y="([\d.]+)"', svg)
    assert (float(root.group(1)), float(root.group(2))) == (MARGIN, MARGIN)


def test_warnings_naming_one_ref_each_are_summarized_with_their_count():
    cut = [f"expand_relations truncated neighbors for chunk:doc{i}.md:c0000 at 64." for i in range(14)]
    other = "expand_relations added 2 of 20 hits."
    got = summarize_warnings([cut[0], other, *cut[1:]])
    assert got == ("expand_relations truncated neighbors for 14 nodes (chunk:doc0.md:c0000, chunk:doc1.md:c0000, "
                   "chunk:doc2.md:c0000, … 11 more) at 64.", other)
    assert summarize_warnings(cut[:1]) == tuple(cut[:1])  # a single one stays as it was
    assert warnings_html(cut).count("⚠") == 1


def test_the_expansion_view_shows_one_summary_line(result):
    data = expansion_data(result)
    cut = tuple(f"expand_relations truncated neighbors for entity:e{i} at 64." for i in range(14))
    html = header_html(replace(data, warnings=cut), data.expansions)
    assert html.count("⚠") == 1 and "14 nodes" in html and "entity:e13" not in html


def test_the_docs_site_shows_each_view_once_in_its_static_form():
    """docs/conf.py drops a widget output whose static copy follows it; every view output keeps its static HTML."""
    import importlib.util
    import json
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("crux_docs_conf", root / "docs" / "conf.py")
    conf = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(conf)
    source = root / "notebooks" / "03_expand_relations.ipynb"
    stored = [o for c in json.loads(source.read_text(encoding="utf-8"))["cells"] for o in c.get("outputs", [])]
    shown = [o for c in json.loads(conf.site_notebook(source))["cells"] for o in c.get("outputs", [])]
    widgets = [o for o in stored if conf.WIDGET in o.get("data", {})]
    assert widgets and len(shown) == len(stored) - len(widgets)
    assert not any(conf.WIDGET in o.get("data", {}) for o in shown)
    assert sum("crux-static-export" in "".join(o.get("data", {}).get("text/html", "")) for o in shown) == len(widgets)
