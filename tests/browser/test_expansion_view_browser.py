"""ExpansionView in a real JupyterLab + Chromium: paths render, selection reaches the kernel, text stays text.

One notebook is opened and run once (module fixture ``lab_page``); the tests then read and drive the page.
"""

from __future__ import annotations

import pytest

pytestmark = pytest.mark.browser

from lab import notebook_page, wait_for_file  # noqa: E402

SETUP = '''\
import pandas as pd
from crux_nb.testing import make_kb
from crux_nb.retrieval import retrieve, expand_relations
from crux_nb.widgets import ExpansionView

kb = make_kb(id="demo", chunks=[
    ("plan", "c1", 1, "Release planning for Beacon 3.0 starts in March."),
    ("plan", "c2", 2, "The release planning review is chaired by Priya."),
    ("notes", "c1", 1, 'Beacon notes: <script>window.__crux_pwned = 1; alert("crux")</script><img src=x onerror="window.__crux_pwned = 2">'),
    ("team", "c1", 1, "Priya Raman leads the platform team."),
    ("ops", "c1", 1, "The platform team runs the on-call rotation."),
    ("oncall", "c1", 1, "On-call handbook: escalation within 15 minutes."),
    ("misc", "c1", 1, "Unrelated lunch menu."),
])
kb.add_entities(pd.DataFrame({"entity_id": ["beacon", "priya"], "canonical_name": ["Beacon 3.0", "Priya Raman"]}))
kb.add_edges(pd.DataFrame([{"from_ref": a, "to_ref": b, "type": t, "evidence": [a]} for a, b, t in [
    ("chunk:plan:c1", "entity:beacon", "mentions"), ("chunk:notes:c1", "entity:beacon", "mentions"),
    ("chunk:plan:c2", "entity:priya", "mentions"), ("chunk:team:c1", "entity:priya", "mentions"),
    ("chunk:team:c1", "chunk:ops:c1", "related"), ("chunk:ops:c1", "chunk:oncall:c1", "related"),
]]))
recipe = kb.recipe(steps=[retrieve(limit=2), expand_relations(types=["mentions", "related"], depth=2, seeds=["hits"],
                                                             ranking="upstream")])
result = recipe.retrieve_with_trace("release planning")
'''

SHOW = '''\
view = ExpansionView(result, kb=kb)
view
'''

# the kernel records every selection the page makes
OBSERVE = '''\
from pathlib import Path

def _record(change):
    Path("selected.txt").write_text(change["new"] or "")

view.observe(_record, names="selected_id")
Path("selected.txt").write_text(view.selected_id or "")
_ = Path("ready.txt").write_text("ready")
'''

# the live widget's rows (the static copy published beside it is in the page too, hidden by the widget)
LIVE_ROWS = ".jp-OutputArea .crux-expansion:not(.crux-expansion-static) .crux-hit-row"
SCRIPT_TEXT = '<script>window.__crux_pwned = 1; alert("crux")</script>'


@pytest.fixture(scope="module")
def expected():
    """What the notebook computes, computed here from the same code."""
    from crux_nb.widgets import expansion_data

    namespace: dict = {}
    exec(SETUP, namespace)
    return expansion_data(namespace["result"], kb=namespace["kb"])


@pytest.fixture(scope="module")
def lab_page(jupyter_lab, browser, artifacts):
    """The notebook opened in JupyterLab with every cell run; yields (page, events)."""
    with notebook_page(jupyter_lab, browser, artifacts, name="expansion.ipynb", cells=[SETUP, SHOW, OBSERVE],
                       rows=".jp-OutputArea .crux-expansion .crux-hit-row", ready="ready.txt", height=1200) as opened:
        yield opened


def widget(page):
    return page.locator(".jp-OutputArea .crux-expansion").first


def test_paths_render(lab_page, expected, jupyter_lab):
    page, _ = lab_page
    view = widget(page)
    # the live widget, not the static fallback
    assert view.locator(".crux-hit-select select").count() == 1
    assert view.locator(".crux-expansion-static").count() == 0
    # the static copy (for exported pages) is published as a second output; the live widget hides it
    static = page.locator(".jp-OutputArea .crux-static-export")
    assert static.count() == 1 and static.locator(".crux-expansion-static").count() == 1
    assert not static.is_visible() and not page.locator(".jp-OutputArea-child:has(.crux-static-export)").is_visible()
    rows = view.locator(".crux-hit-row")
    assert rows.count() == len(expected.expansions) == 4
    assert [rows.nth(i).get_attribute("data-key") for i in range(4)] == [x.key for x in expected.expansions]
    texts = [" ".join(t.split()) for t in view.locator(".crux-hit-row .crux-path").all_inner_texts()]
    assert texts == expected.to_frame()["path"].tolist()
    assert texts[3] == ("chunk:plan:c2 —mentions→ entity:priya —mentions→ chunk:team:c1 —related→ chunk:ops:c1 "
                        "—related→ chunk:oncall:c1")
    assert view.locator(".crux-hit-row .crux-distance").all_inner_texts() == ["0", "0", "1", "2"]
    assert view.locator(".crux-hit-row .crux-reason").all_inner_texts() == ["upstream order"] * 4
    # the drawing: every node; the path of the hit selected in the kernel highlighted
    assert view.locator("svg.crux-expansion-svg .crux-node").count() == 8
    assert view.locator("svg .crux-node-entity text").all_text_contents() == ["Beacon 3.0", "Priya Raman"]
    selected = expected.find(wait_for_file(jupyter_lab.notebooks / "selected.txt"))
    assert view.locator(".crux-hit-row.crux-selected").get_attribute("data-key") == selected.key
    assert view.locator("svg .crux-edge.crux-on").count() == len(selected.edges)


def test_selecting_a_hit_in_the_page_reaches_the_kernel(lab_page, expected, jupyter_lab, artifacts):
    page, _ = lab_page
    view = widget(page)
    target = expected.expansions[3]
    assert wait_for_file(jupyter_lab.notebooks / "selected.txt") != target.key
    view.locator(".crux-hit-select select").select_option(index=3)
    # the kernel saw it (its observer wrote the key) ...
    wait_for_file(jupyter_lab.notebooks / "selected.txt", target.key)
    # ... and re-rendered: the row, the detail and the highlighted path follow the selection
    view.locator(f".crux-hit-row.crux-selected[data-key='{target.key}']").wait_for()
    view.locator(f".crux-detail[data-key='{target.key}']").wait_for()
    on = view.locator("svg .crux-edge.crux-on")
    assert on.count() == len(target.edges) == 4
    assert sorted((on.nth(i).get_attribute("data-from"), on.nth(i).get_attribute("data-to"))
                  for i in range(on.count())) == sorted(zip(target.path, target.path[1:]))
    assert "escalation within 15 minutes" in view.locator(".crux-detail").inner_text()
    view.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / "expansion_view.png"))


def test_script_in_a_chunk_shows_as_text(lab_page):
    page, events = lab_page
    view = widget(page)
    notes = view.locator(".crux-hit-row[data-key='demo:notes:c1'] .crux-content")
    assert SCRIPT_TEXT in notes.inner_text()
    assert view.locator("script").count() == 0 and view.locator("img").count() == 0
    assert page.evaluate("window.__crux_pwned") is None
    assert events["dialogs"] == []


def test_edge_type_filter_in_the_page(lab_page, jupyter_lab):
    page, _ = lab_page
    view = widget(page)
    types = view.locator(".crux-filter-types select")
    types.select_option(["mentions"])
    page.wait_for_function(f"document.querySelectorAll('{LIVE_ROWS}').length === 2")
    assert "related" not in " ".join(view.locator(".crux-hit-row .crux-path").all_inner_texts())
    # the selected hit was filtered out: the kernel moved the selection to the first shown hit
    wait_for_file(jupyter_lab.notebooks / "selected.txt", "demo:notes:c1")
    types.select_option(["mentions", "related"])
    page.wait_for_function(f"document.querySelectorAll('{LIVE_ROWS}').length === 4")
