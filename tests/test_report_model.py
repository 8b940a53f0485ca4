"""One report model: every layer that writes, stores, imports, searches or shows a community report
speaks :class:`crux_nb.community.Report` and :class:`crux_nb.community.Finding`."""

from __future__ import annotations

from dataclasses import FrozenInstanceError

import pytest

import crux_nb
from crux_nb.community import Finding, Report
from crux_nb.io import read_graphrag
from crux_nb.models import OfflineModel
from crux_nb.refs import ChunkRef
from crux_nb.retrieval import global_search
from crux_nb.widgets import CommunityExplorer, CoverageView

from graphrag_tiny import tiny_tables

Q = "Who owns the Ingest Gateway?"


@pytest.fixture(scope="module")
def kb():
    kb = crux_nb.datasets.load_sample()
    kb.configure_communities(crux_nb.communities(model=OfflineModel()))
    kb.communities.prepare()
    return kb


def test_a_report_places_its_findings_and_measures_like_upstream():
    report = Report("c1", 0, None, "T", "sum", (Finding("f1", "one", (ChunkRef("a", "c0"),)), Finding("f2", "two")))
    assert [f.community_id for f in report.findings] == ["c1", "c1"]
    assert report.chars == len("T") + len("sum") + len("one") + len("two")
    assert report.rating_chars == 4 and report.rating_payload()["findings"] == []
    qualified = report.qualified()
    assert [f.id for f in qualified.findings] == ["c1:f1", "c1:f2"] and qualified.qualified() == qualified
    assert report.lineage.report_community_id == "c1" and report.lineage.community_generation == "unknown"
    stored = report.in_generation("g1", view_revision="r1", graph_generation="gg", strategy_fingerprint="s")
    assert (stored.lineage.community_generation, stored.lineage.view_revision) == ("g1", "r1")
    with pytest.raises(FrozenInstanceError):
        report.title = "changed"  # type: ignore[misc]


def test_stored_searched_and_shown_reports_are_the_one_model(kb):
    stored = list(kb.communities.reports(limit=100))
    assert stored and all(type(r) is Report and r.generation_id for r in stored)
    assert all(type(f) is Finding and f.community_id == r.community_id for r in stored for f in r.findings)
    result = kb.recipe(steps=[global_search(model=OfflineModel(), scan="all", detail="detailed")]).retrieve_with_trace(Q)
    units = result.trace.steps[0].details["units"]
    assert units and all(type(u) is Report for u in units)
    assert all(f.id.startswith(f"{u.community_id}:") for u in units for f in u.findings)
    view = CoverageView(result, kb=kb)
    assert all(type(u) is Report for u in view.data.units)
    assert {u.community_id: u.chars for u in view.data.units} == {u.community_id: u.chars for u in units}
    explorer = CommunityExplorer(kb.communities)
    assert all(type(f) is Finding for c in explorer.data.communities for f in c.findings)


def test_graphrag_reports_are_the_one_model(tmp_path):
    folder = tmp_path / "tiny"
    folder.mkdir()
    for name, frame in tiny_tables().items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    kb = read_graphrag(folder, id="tiny")
    reports = list(kb.communities.reports(limit=100))
    assert reports and all(type(r) is Report for r in reports)
    assert any(r.findings for r in reports) and all(type(f) is Finding for r in reports for f in r.findings)
