"""ExpansionView in a real JupyterLab + Chromium: paths render, selection reaches the kernel, text stays text.

One notebook is opened and run once (module fixture ``lab_page``); the tests then read and drive the page.
"""

from __future__ import annotations

import json
import re
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

WAIT_MS = 60_000  # first kernel start and imports can be slow on a busy CI machine

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
recipe = kb.recipe(steps=[retrieve(limit=2), expand_relations(types=["mentions", "related"], depth=2, seeds=["hits"])])
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

view.observe(_record, names="selected_key")
Path("selected.txt").write_text(view.selected_key or "")
_ = Path("ready.txt").write_text("ready")
'''

SCRIPT_TEXT = '<script>window.__crux_pwned = 1; alert("crux")</script>'


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A minimal nbformat-4 notebook of code cells, with a python3 kernelspec (no kernel dialog)."""
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                       "language_info": {"name": "python"}},
          "cells": [{"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "execution_count": None,
                     "outputs": [], "source": source} for i, source in enumerate(cells)]}
    path.write_text(json.dumps(nb, indent=1))
    return path


def wait_for_file(path: Path, expected: str | None = None, timeout: float = 30.0) -> str:
    """Poll a file the kernel writes until it exists (and holds ``expected``)."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text()
            if expected is None or text == expected:
                return text
        time.sleep(0.1)
    raise AssertionError(f"{path.name}: expected {expected!r} within {timeout:.0f} s, last saw {text!r}")


def start_session(url: str, path: str) -> None:
    """Start the notebook's kernel through the REST API; JupyterLab attaches to this session."""
    body = json.dumps({"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}).encode()
    request = urllib.request.Request(f"{url}/api/sessions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def wait_for_kernel(url: str, timeout: float = WAIT_MS / 1000) -> None:
    """Poll the REST API until a kernel is idle with a client (the page) connected."""
    deadline = time.monotonic() + timeout
    kernels = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/kernels", timeout=5) as response:
                kernels = json.loads(response.read())
        except OSError:
            kernels = None
        if kernels and any(k.get("execution_state") == "idle" and k.get("connections", 0) > 0 for k in kernels):
            return
        time.sleep(0.2)
    raise AssertionError(f"no idle, connected kernel within {timeout:.0f} s: {kernels}")


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
    write_notebook(jupyter_lab.notebooks / "expansion.ipynb", [SETUP, SHOW, OBSERVE])
    start_session(jupyter_lab.url, "expansion.ipynb")  # the kernel boots while the page loads
    context = browser.new_context(viewport={"width": 1440, "height": 1200})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    events = {"dialogs": []}

    def on_dialog(dialog):
        events["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        page.goto(f"{jupyter_lab.url}/lab/tree/expansion.ipynb?reset", wait_until="domcontentloaded")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
        wait_for_kernel(jupyter_lab.url)  # started, idle, and the page connected to it
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator(".lm-Menu .lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        rows = page.locator(".jp-OutputArea .crux-expansion .crux-hit-row")
        accept = page.locator(".jp-Dialog .jp-mod-accept")  # "Select Kernel", should the kernel still be starting
        rows.or_(accept).first.wait_for()
        if not rows.count() and accept.count():
            accept.first.click()
        rows.first.wait_for()
        wait_for_file(jupyter_lab.notebooks / "ready.txt", "ready", timeout=WAIT_MS / 1000)
        yield page, events
    except Exception:
        page.screenshot(path=str(artifacts / "expansion_view_failure.png"))
        raise
    finally:
        context.close()


def widget(page):
    return page.locator(".jp-OutputArea .crux-expansion").first


def test_paths_render(lab_page, expected, jupyter_lab):
    page, _ = lab_page
    view = widget(page)
    # the live widget, not the static fallback
    assert view.locator(".crux-hit-select select").count() == 1
    assert view.locator(".crux-expansion-static").count() == 0
    rows = view.locator(".crux-hit-row")
    assert rows.count() == len(expected.expansions) == 4
    assert [rows.nth(i).get_attribute("data-key") for i in range(4)] == [x.key for x in expected.expansions]
    texts = [" ".join(t.split()) for t in view.locator(".crux-hit-row .crux-path").all_inner_texts()]
    assert texts == expected.to_frame()["path"].tolist()
    assert texts[3] == ("chunk:plan:c2 —mentions→ entity:priya —mentions→ chunk:team:c1 —related→ chunk:ops:c1 "
                        "—related→ chunk:oncall:c1")
    assert view.locator(".crux-hit-row .crux-distance").all_inner_texts() == ["0", "0", "1", "2"]
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
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea .crux-expansion .crux-hit-row').length === 2")
    assert "related" not in " ".join(view.locator(".crux-hit-row .crux-path").all_inner_texts())
    # the selected hit was filtered out: the kernel moved the selection to the first shown hit
    wait_for_file(jupyter_lab.notebooks / "selected.txt", "demo:notes:c1")
    types.select_option(["mentions", "related"])
    page.wait_for_function("document.querySelectorAll('.jp-OutputArea .crux-expansion .crux-hit-row').length === 4")
