"""HTML reprs of EvidenceHit, ReportPage, View and ViewRevision; ReportPage iterates (issue 15)."""

import pytest

import crux_nb
from crux_nb.models import OfflineModel

from test_communities import TEXTS

EVIL = "<script>alert(1)</script>"


@pytest.fixture(scope="module")
def kb():
    kb = crux_nb.knowledge_base(id="h", communities=crux_nb.communities(model=OfflineModel()))
    for source, text in TEXTS.items():
        kb.add_text(source, text, metadata={"team": EVIL})
    kb.add_text(f"{EVIL}.md", f"# {EVIL}\n\nPriya Raman reviewed the plan {EVIL}.", metadata={"team": "x"})
    return kb


def _check(html: str) -> None:
    assert "<script>" not in html and "&lt;script&gt;" in html and html.startswith("<style>")


def test_evidence_hit_html(kb):
    hits = kb.recipe().retrieve("Priya Raman plan")
    hit = next(h for h in hits if h.source.id == f"{EVIL}.md")
    html = hit._repr_html_()
    _check(html)
    assert "score: " in html and "evidence chunk:" in html
    assert hit._repr_html_() == html  # deterministic


def test_report_page_iterates_and_has_html(kb):
    page = kb.communities.reports(limit=2)
    assert list(page) == list(page.reports) and len(page) == len(page.reports) == 2 and page[0] is page.reports[0]
    assert [r.community_id for r in page] == page.to_frame()["community_id"].tolist()
    html = page._repr_html_()
    assert "2 reports" in html and page.reports[0].community_id in html and "more after cursor" in html
    everything = kb.communities.reports()
    assert "more after cursor" not in everything._repr_html_()


def test_view_and_revision_html(kb):
    view = kb.view(id="evil", where={"team": EVIL})
    html = view._repr_html_()
    _check(html)
    assert "members: 12" in html and "revision: vr-" in html
    revision = view.resolve()
    rhtml = revision._repr_html_()
    assert "members: 12" in rhtml and "… and 2 more" in rhtml and revision.revision in rhtml
    pinned = view.at("vr-unknown")
    assert "has no revision" in pinned._repr_html_()
