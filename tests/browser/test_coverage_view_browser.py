"""CoverageView in a real JupyterLab + Chromium: coverage, batches and hierarchy render, a finding selected
in the page reaches the kernel, text stays text.

One notebook (a global search over the sample corpus, plus a note whose text holds markup) is opened and run
once (module fixture ``lab_page``); the tests then read and drive the page. The JupyterLab server, Chromium
and the artifacts folder are the shared fixtures of ``tests/browser_stack.py``; the notebook helpers are the expansion
test's.
"""

from __future__ import annotations


import pytest

from lab import WAIT_MS, notebook_page, wait_for_file

pytestmark = pytest.mark.browser

BUILD_WAIT_MS = 2 * WAIT_MS  # the notebook extracts entities and builds communities before the view shows

SCRIPT_TEXT = '<script>window.__crux_pwned = 1; alert("crux")</script>'

SETUP = '''\
import crux_nb
from crux_nb.models import OfflineModel
from crux_nb.datasets import sample_path
from crux_nb.retrieval import global_search
from crux_nb.widgets import CoverageView

m = OfflineModel()
kb = crux_nb.knowledge_base(id="lumen", communities=crux_nb.communities(model=m))
kb.add_path(sample_path())
kb.add_text("launch-plan-notes.md", '# Launch plan notes\\n\\nWhat changed in the launch plan: the launch moved to May '
            '<script>window.__crux_pwned = 1; alert("crux")</script><img src=x onerror="window.__crux_pwned = 2">.')
kb.communities.prepare(progress=False)
# no budget: the page needs findings of several reports and every status a descent gives by rating (a budget
# cuts the low-rated ones as "truncated" before they are rated "skipped")
recipe = kb.recipe(steps=[global_search(model=m, scan="adaptive", detail="detailed", budget=None)])
result = recipe.retrieve_with_trace("What changed in the launch plan?")
'''

SHOW = '''\
view = CoverageView(result, kb=kb)
view
'''

# the kernel records every selection the page makes (file names apart from the expansion test's)
OBSERVE = '''\
from pathlib import Path

def _record(change):
    Path("coverage_selected.txt").write_text(change["new"] or "")

view.observe(_record, names="selected_id")
Path("coverage_selected.txt").write_text(view.selected_id or "")
_ = Path("coverage_ready.txt").write_text("ready")
'''


@pytest.fixture(scope="module")
def expected():
    """What the notebook computes, computed here from the same code."""
    from crux_nb.widgets import coverage_data

    namespace: dict = {}
    exec(SETUP, namespace)
    return coverage_data(namespace["result"], kb=namespace["kb"])


@pytest.fixture(scope="module")
def lab_page(jupyter_lab, browser, artifacts):
    """The notebook opened in JupyterLab with every cell run; yields (page, events)."""
    with notebook_page(jupyter_lab, browser, artifacts, name="coverage.ipynb", cells=[SETUP, SHOW, OBSERVE],
                       rows=".jp-OutputArea .crux-coverage .crux-finding-row", ready="coverage_ready.txt",
                       height=1500, first_wait_ms=BUILD_WAIT_MS) as opened:
        yield opened


def widget(page):
    return page.locator(".jp-OutputArea .crux-coverage").first


def words(text: str) -> str:
    return " ".join(text.split())


def test_coverage_basis_batches_and_hierarchy_render(lab_page, expected, jupyter_lab):
    page, _ = lab_page
    view = widget(page)
    # the live widget, not the static fallback
    assert view.locator(".crux-finding-select select").count() == 1
    assert view.locator(".crux-coverage-static").count() == 0
    # coverage and its basis, generations
    assert expected.coverage == "exact"
    assert words(view.locator(".crux-basis").inner_text()) == f"coverage exact: {expected.coverage_basis}"
    assert expected.generations[0] in view.locator(".crux-generations").inner_text()
    # available versus processed, preflight versus the calls made, nothing cut
    processed = view.locator(".crux-processed-reports td").all_inner_texts()
    assert processed[:2] == [str(expected.available["reports"]), str(expected.processed["reports"])]
    counts = expected.call_counts()
    assert view.locator("tr[data-row='map calls'] td").all_inner_texts() == [str(expected.preflight["calls"]),
                                                                             str(counts["map"])]
    assert view.locator("tr[data-row='rating calls'] td").all_inner_texts() == ["not estimated", str(counts["rate"])]
    assert counts["rate"] >= 1 and view.locator(".crux-overview .crux-mismatch").count() == 0
    cut = view.locator(".crux-truncations").inner_text()
    assert ("Something was cut" in cut) if expected.truncations else ("Nothing was cut" in cut)
    # the adaptive descent: its fallback rule, how many communities it chose, the budget and the spend
    card = words(view.locator(".crux-adaptive").inner_text())
    chosen = {r.community_id for r in expected.ratings if r.fallback}
    assert f"fallback {expected.fallback} chose {len(chosen)}" in card and f"input chars {expected.spent_chars:,}" in card
    # batches: index, communities and input characters
    batches = view.locator(".crux-batch-row")
    assert batches.count() == len(expected.batches) >= 1
    for i, b in enumerate(expected.batches):
        row = batches.nth(i)
        assert row.get_attribute("data-batch") == str(b.index + 1)
        assert row.locator(".crux-batch-chars").inner_text() == f"{b.input_chars:,}"
        assert all(c in row.locator(".crux-batch-communities").inner_text() for c in b.community_ids)
    # the hierarchy: every community, coloured by what happened to it
    nodes = view.locator("svg.crux-hierarchy-svg .crux-node")
    assert nodes.count() == len(expected.hierarchy()) >= 5
    drawn = {nodes.nth(i).get_attribute("data-id"): nodes.nth(i).get_attribute("data-status")
             for i in range(nodes.count())}
    assert drawn == {cid: expected.status(cid) for cid, _, _ in expected.hierarchy()}
    assert {"mapped", "visited", "skipped"} <= set(drawn.values())
    tips = {nodes.nth(i).get_attribute("data-id"): nodes.nth(i).locator("title").text_content()
            for i in range(nodes.count())}
    assert {c for c, t in tips.items() if "chosen by the fallback" in t} == chosen & set(tips)
    assert view.locator("svg.crux-hierarchy-svg .crux-link").count() == sum(
        1 for _, parent, _ in expected.hierarchy() if parent is not None)
    # the findings, and the one the kernel selected
    rows = view.locator(".crux-finding-row")
    assert rows.count() == len(expected.findings)
    assert [rows.nth(i).get_attribute("data-target") for i in range(rows.count())] == \
        [f.target for f in expected.findings]
    selected = wait_for_file(jupyter_lab.notebooks / "coverage_selected.txt")
    assert selected == expected.findings[0].target
    assert view.locator(".crux-finding-row.crux-selected").get_attribute("data-target") == selected


def test_selecting_a_finding_in_the_page_reaches_the_kernel(lab_page, expected, jupyter_lab, artifacts):
    page, _ = lab_page
    view = widget(page)
    # a finding from another report than the first one's, resolved and verified (the marked-up one comes later)
    first = expected.findings[0]
    target = next(f for f in expected.findings if f.resolution == "verified" and SCRIPT_TEXT not in f.statement
                  and f.cited_communities != first.cited_communities)
    assert wait_for_file(jupyter_lab.notebooks / "coverage_selected.txt") != target.target
    view.locator(".crux-finding-select select").select_option(index=target.rank - 1)
    # the kernel saw it (its observer wrote the target) ...
    wait_for_file(jupyter_lab.notebooks / "coverage_selected.txt", target.target)
    # ... and re-rendered: the row, the detail and the cited reports in the hierarchy follow the selection
    view.locator(f".crux-finding-row.crux-selected[data-target='{target.target}']").wait_for()
    detail = view.locator(f".crux-detail[data-target='{target.target}']")
    detail.wait_for()
    assert [c.get_attribute("data-finding") for c in detail.locator(".crux-cited").all()] == [c.id for c in target.cited]
    assert "verified against the finding target" in detail.locator(".crux-resolution").inner_text()
    chunks = detail.locator(".crux-chunk")
    assert [c.get_attribute("data-ref") for c in chunks.all()] == list(target.supports)
    text = expected.texts[target.supports[0]]
    assert words(text)[:60] in words(chunks.first.inner_text())  # the chunk text, through kb.reader.hydrate
    on = view.locator("svg.crux-hierarchy-svg .crux-node.crux-on")
    assert sorted(on.nth(i).get_attribute("data-id") for i in range(on.count())) == sorted(target.cited_communities)
    view.evaluate("element => element.scrollIntoView({block: 'start'})")
    page.screenshot(path=str(artifacts / "coverage_view.png"))


def test_script_in_a_finding_and_its_chunk_shows_as_text(lab_page, expected, jupyter_lab):
    page, events = lab_page
    view = widget(page)
    marked = next(f for f in expected.findings if SCRIPT_TEXT in f.statement)
    assert wait_for_file(jupyter_lab.notebooks / "coverage_selected.txt") != marked.target
    assert SCRIPT_TEXT in view.locator(f".crux-finding-row[data-target='{marked.target}'] .crux-statement").inner_text()
    view.locator(".crux-finding-select select").select_option(index=marked.rank - 1)
    wait_for_file(jupyter_lab.notebooks / "coverage_selected.txt", marked.target)
    detail = view.locator(f".crux-detail[data-target='{marked.target}']")
    detail.wait_for()
    assert SCRIPT_TEXT in detail.locator(".crux-cited").first.inner_text()  # the report finding
    assert SCRIPT_TEXT in detail.locator(".crux-chunk").first.inner_text()  # the chunk
    assert view.locator("script").count() == 0 and view.locator("img").count() == 0
    assert page.evaluate("window.__crux_pwned") is None
    assert events["dialogs"] == []
