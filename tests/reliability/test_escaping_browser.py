"""User text stays text in a real JupyterLab + Chromium (issue 9).

One notebook builds a knowledge base whose source ids, document titles, chunk texts, metadata, entity names,
community report titles/summaries/findings, map statements and the query all carry
``<script>window.__pwned=1</script>`` and ``<img src=x onerror="window.__pwned=1">``, then displays every HTML
repr (knowledge base, communities, reports, steps, recipes, results, hit lists, traces, a hits frame), the
static HTML fallbacks of the three views, and the three live widgets (ExpansionView, CoverageView,
CommunityExplorer). In the page: ``window.__pwned`` stays undefined, no dialog opens, the output area holds no
``<script>`` or ``<img>``, no element with an ``on*`` attribute and no ``javascript:`` URL, and the payloads show as literal
text in every one of those outputs. One JupyterLab session: the suite's shared one (tests/browser_stack.py, lab.py).
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

BROWSER = Path(__file__).resolve().parents[1] / "browser"
if str(BROWSER) not in sys.path:
    sys.path.insert(0, str(BROWSER))

from lab import WAIT_MS, notebook_page  # noqa: E402

pytestmark = pytest.mark.browser

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'

SETUP = r'''
import pandas as pd
import crux_nb
from IPython.display import HTML, display
from crux_nb.models import OfflineModel
from crux_nb.retrieval import expand_relations, global_search, retrieve
from crux_nb.widgets import CommunityExplorer, CoverageView, ExpansionView

SCRIPT = "<script>window.__pwned=1</script>"
IMG = '<img src=x onerror="window.__pwned=1">'


class Hostile:
    """The offline model, with the payloads in every string it writes."""

    def __init__(self):
        self.inner = OfflineModel()
        self.name, self.fingerprint = "hostile " + IMG, "hostile-" + self.inner.fingerprint

    def extract(self, chunks, *, repair=None):
        out = self.inner.extract(chunks, repair=repair)
        name = IMG + " Entity"
        out["entities"].append({"name": name, "aliases": [SCRIPT], "description": SCRIPT + " described"})
        out["mentions"] += [{"chunk_id": c["id"], "name": name} for c in chunks]
        return out

    def write_report(self, community, *, repair=None):
        out = self.inner.write_report(community, repair=repair)
        out["title"] = (SCRIPT + " " + out["title"])[:120]
        out["summary"] = (IMG + " " + out["summary"])[:2000]
        for f in out["findings"]:
            f["statement"] = (SCRIPT + " " + f["statement"])[:500]
        return out

    def map_findings(self, query, units, *, repair=None):
        out = self.inner.map_findings(query, units, repair=repair)
        for f in out["findings"]:
            f["statement"] = IMG + " " + f["statement"]
        return out

    def rate(self, query, reports, *, repair=None):
        return self.inner.rate(query, reports, repair=repair)


model = Hostile()
kb = crux_nb.knowledge_base(id="hostile", communities=crux_nb.communities(model=model))
people = [("Priya Raman", "Ingest Gateway"), ("Marcus Chen", "Query Engine"), ("Hannah Okafor", "Billing Service")]
for i, (who, what) in enumerate(people):
    for k in range(2):
        sid = f"{IMG}-{i}-{k}.md" if k == 0 else f"{SCRIPT}-{i}-{k}.md"
        kb.add_text(sid, f"# {SCRIPT} {who} notes {k}\n\n{IMG} {SCRIPT} The launch plan: {who} works on the {what}. "
                         f"{who} reviewed the {what} launch plan on day {k}.",
                    metadata={"owner": IMG, "team": f"team-{i}"})
kb.communities.prepare(progress=False)
QUERY = "launch plan " + SCRIPT + " " + IMG
expand = kb.recipe(steps=[retrieve(limit=3), expand_relations(depth=2, seeds=["hits", "query"])])
expansion = expand.retrieve_with_trace(QUERY)
search = kb.recipe(steps=[global_search(model=model, scan="adaptive", detail="detailed")])
coverage = search.retrieve_with_trace(QUERY)
reports = kb.communities.reports().reports
team = kb.view(id="team-0", where={"team": "team-0"})
assert len(expansion.hits) > 3 and coverage.hits and len(reports) >= 2
'''

# one output per display: (css class the output must hold, python expression)
STATIC = [
    ("crux-kb", "kb"),
    ("crux-communities", "kb.communities"),
    ("crux-report", "reports[0]"),
    ("crux-report", "reports[-1]"),
    ("crux-step", "search.steps[0]"),
    ("crux-recipe", "search"),
    ("crux-hits", "expansion"),
    ("crux-hits", "coverage.hits"),
    ("crux-trace", "coverage.trace"),
    ("crux-trace", "expansion.trace"),
    ("dataframe", "coverage.hits.to_frame()"),
    ("crux-expansion", "HTML(ExpansionView(expansion, kb=kb).to_html())"),
    ("crux-coverage", "HTML(CoverageView(coverage, kb=kb).to_html())"),
    ("crux-explorer", "HTML(CommunityExplorer(kb.communities).to_html())"),
]
SHOW_STATIC = "for _obj in [" + ", ".join(expr for _, expr in STATIC) + "]:\n    display(_obj)\nteam\n"
SHOW_WIDGETS = '''\
display(ExpansionView(expansion, kb=kb))
display(CoverageView(coverage, kb=kb))
display(CommunityExplorer(kb.communities))
from pathlib import Path
_ = Path("escaping_ready.txt").write_text("ready")
'''

# every element below the output areas, with anything that could run: scripts, on* attributes, js: URLs
SCAN_JS = r'''() => {
  const out = [];
  for (const area of document.querySelectorAll('.jp-OutputArea')) {
    for (const el of area.querySelectorAll('*')) {
      const tag = el.tagName.toLowerCase();
      if (['script', 'img', 'iframe', 'object', 'embed'].includes(tag)) out.push('<' + tag + '>');  // none is ours
      for (const attr of el.attributes) {
        const name = attr.name.toLowerCase(), value = (attr.value || '').trim().toLowerCase();
        if (name.startsWith('on')) out.push(tag + '[' + name + ']');
        if ((name === 'href' || name === 'src' || name.endsWith(':href') || name === 'action')
            && value.startsWith('javascript:')) out.push(tag + '[' + name + '=javascript:]');
      }
    }
  }
  return out;
}'''


@pytest.fixture(scope="module")
def lab_page(jupyter_lab, browser, artifacts):
    with notebook_page(jupyter_lab, browser, artifacts, name="escaping.ipynb", cells=[SETUP, SHOW_STATIC, SHOW_WIDGETS],
                       rows=".jp-OutputArea .crux-explorer .crux-community-select select", ready="escaping_ready.txt",
                       height=1400, first_wait_ms=2 * WAIT_MS) as opened:
        yield opened


def test_user_text_stays_text_in_every_output(lab_page, artifacts):
    page, events = lab_page
    outputs = page.locator(".jp-OutputArea-output")
    # the three live widgets rendered (not their static fallbacks)
    for selector in (".crux-expansion .crux-hit-row", ".crux-coverage .crux-finding-row",
                     ".crux-explorer .crux-community-select select"):
        page.locator(f".jp-OutputArea .jp-OutputArea-output {selector}").first.wait_for()
    page.wait_for_timeout(500)  # let any injected handler fire (an <img src=x> errors at once)
    errors = page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert errors.count() == 0, errors.first.inner_text()

    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert events["dialogs"] == []
    assert page.evaluate(SCAN_JS) == []

    # every display shows the payloads as literal text
    texts = outputs.all_inner_texts()
    assert len(texts) >= len(STATIC) + 4
    for cls, expr in STATIC + [("crux-expansion", "widget"), ("crux-coverage", "widget"), ("crux-explorer", "widget")]:
        holders = page.locator(f".jp-OutputArea-output .{cls}") if cls != "dataframe" else \
            page.locator(".jp-OutputArea-output table.dataframe")
        assert holders.count() >= 1, f"{expr}: no .{cls} output"
        shown = " ".join(holders.all_inner_texts())
        assert SCRIPT in shown or IMG in shown, f"{expr}: the payload is not shown as text"
    whole = " ".join(texts)
    assert whole.count(SCRIPT) >= 10 and whole.count(IMG) >= 10
    # the view (a plain repr) and the live widgets' own text
    for cls in ("crux-expansion", "crux-coverage", "crux-explorer"):
        live = page.locator(f".jp-OutputArea-output .jupyter-widgets.{cls}, .jp-OutputArea-output .widget-vbox.{cls}")
        assert live.count() >= 1, f"live {cls} widget missing"
        assert SCRIPT in " ".join(live.all_inner_texts()) or IMG in " ".join(live.all_inner_texts())
    page.screenshot(path=str(artifacts / "escaping.png"), full_page=False)
