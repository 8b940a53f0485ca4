"""EvaluationView in a real JupyterLab + Chromium: the drill-down renders each recipe's hits with gold marked,
the expansion path of a gold hit only the expanded recipe found shows, a question picked in the page reaches
the kernel, and text stays text.

The JupyterLab server, Chromium and the artifacts folder are the shared fixtures of ``tests/browser_stack.py``.
"""

from __future__ import annotations

import pytest

from lab import notebook_page, wait_for_file

pytestmark = pytest.mark.browser

SETUP = '''\
import pandas as pd
import crux_nb
from crux_nb.retrieval import expand_relations, retrieve
from crux_nb.widgets import EvaluationView

kb = crux_nb.knowledge_base(id="ev")
kb.add_text("a.md", "# A\\n\\nThe Orion service was redesigned <script>window.__crux_pwned = 1</script>.")
kb.add_text("b.md", "# B\\n\\nNothing here but unrelated words.")
kb.add_text("c.md", "# C\\n\\nBilling runs nightly for Orion customers.")
kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0000"], "to_ref": ["chunk:b.md:c0000"],
                           "type": ["references"], "evidence": [["chunk:a.md:c0000"]]}))
questions = pd.DataFrame({"id": ["orion", "billing"], "question": ["Orion service redesigned", "nightly billing"],
                          "gold": [["b.md"], ["c.md"]]})
ev = crux_nb.evaluate({"plain": kb.recipe(steps=[retrieve(limit=1)]),
                       "expanded": kb.recipe(steps=[retrieve(limit=1), expand_relations(types=["references"])])},
                      questions, k=(2,))
'''

SHOW = '''\
view = EvaluationView(ev)
view
'''

OBSERVE = '''\
from pathlib import Path

def _record(change):
    Path("eval_selected.txt").write_text(change["new"] or "")

view.observe(_record, names="selected_id")
Path("eval_selected.txt").write_text(view.selected_id or "")
_ = Path("eval_ready.txt").write_text("ready")
'''


@pytest.fixture(scope="module")
def lab_page(jupyter_lab, browser, artifacts):
    with notebook_page(jupyter_lab, browser, artifacts, name="evaluation.ipynb", cells=[SETUP, SHOW, OBSERVE],
                       rows=".jp-OutputArea .crux-eval .crux-drill-col", ready="eval_ready.txt", height=1200) as opened:
        yield opened


def widget(page):
    return page.locator(".jp-OutputArea .crux-eval").first


def test_drilldown_shows_hits_gold_and_the_expansion_path(lab_page, artifacts):
    page, events = lab_page
    view = widget(page)
    assert view.locator(".crux-eval-select select").count() == 1  # the live widget
    assert view.locator(".crux-eval-static").count() == 0
    columns = view.locator(".crux-drill-col")
    assert [columns.nth(i).get_attribute("data-recipe") for i in range(columns.count())] == ["plain", "expanded"]
    plain, expanded = columns.nth(0), columns.nth(1)
    assert plain.locator("li.crux-gold").count() == 0
    assert expanded.locator("li.crux-gold").count() == 1
    assert "chunk:b.md:c0000" in expanded.locator("li.crux-gold").inner_text()
    path = expanded.locator(".crux-path").inner_text()
    assert "chunk:a.md:c0000" in path and "references" in path and "chunk:b.md:c0000" in path
    summary = view.locator(".crux-eval-summary tr[data-recipe='expanded'] td").all_inner_texts()
    assert summary[0] == "expanded" and float(summary[1]) == 1.0
    page.screenshot(path=str(artifacts / "evaluation_view.png"))
    # markup in a chunk is text, never run
    assert "<script>" in plain.inner_text() or "<script>" in expanded.inner_text()
    assert page.evaluate("window.__crux_pwned === undefined") and events["dialogs"] == []


def test_picking_a_question_in_the_page_reaches_the_kernel(lab_page, jupyter_lab):
    page, _ = lab_page
    view = widget(page)
    assert wait_for_file(jupyter_lab.notebooks / "eval_selected.txt") == "orion"
    view.locator(".crux-eval-select select").select_option(index=1)
    wait_for_file(jupyter_lab.notebooks / "eval_selected.txt", "billing")
    view.locator(".crux-drill[data-question='billing']").wait_for()
    gold = view.locator(".crux-drill-col li.crux-gold")
    assert gold.count() == 2 and all("c.md" in t for t in gold.all_inner_texts())
