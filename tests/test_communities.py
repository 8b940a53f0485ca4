import threading

import networkx as nx
import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import CruxError, ParameterError, ValidationExhaustedError
from crux_nb.models import OfflineModel
from crux_nb.datasets import sample_path

TEXTS = {
    f"team-{g}-{k}.md": f"# Note {k}\n\n{lead} works with {partner} on the {service}. {lead} reviewed the {service} plan "
                        f"with {partner} and {customer} on day {k}."
    for g, (lead, partner, service, customer) in enumerate([
        ("Priya Raman", "Sofia Lindqvist", "Ingest Gateway", "Northwind Traders"),
        ("Marcus Chen", "Daniel Kim", "Query Engine", "Contoso"),
        ("Hannah Okafor", "Nadia Haddad", "Billing Service", "Fabrikam"),
    ]) for k in range(4)
}


class Counting:
    """The offline model, recording write_report calls; ``fail`` makes reports invalid."""

    def __init__(self, fail=False, gate=None):
        self.inner = OfflineModel()
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.reports, self.fail, self.gate = [], fail, gate

    def extract(self, chunks, *, repair=None):
        return self.inner.extract(chunks, repair=repair)

    def write_report(self, community, *, repair=None):
        self.reports.append(community["community_id"])
        if self.gate is not None:
            self.gate.wait(5)
        if self.fail:
            return {"title": "", "summary": "x", "findings": []}
        return self.inner.write_report(community, repair=repair)

    def map_findings(self, query, units, *, repair=None):
        return self.inner.map_findings(query, units, repair=repair)

    def rate(self, query, reports, *, repair=None):
        return self.inner.rate(query, reports, repair=repair)


def build(model=None, texts=TEXTS):
    kb = crux_nb.knowledge_base(id="c", communities=crux_nb.communities(model=model or OfflineModel()))
    for sid, text in texts.items():
        kb.add_text(sid, text)
    return kb


@pytest.mark.parametrize("kwargs,name", [
    ({"model": None}, "model"), ({"model": object()}, "model"), ({"id": " "}, "id"),
    ({"resolution": 0}, "resolution"), ({"resolution": -1.0}, "resolution"), ({"resolution": float("nan")}, "resolution"),
    ({"seed": -1}, "seed"), ({"seed": 1.5}, "seed"),
])
def test_invalid_config_fails_at_construction(kwargs, name):
    args = {"model": OfflineModel(), **kwargs}
    with pytest.raises(ParameterError, match=rf"communities\(\): parameter '{name}"):
        crux_nb.communities(**args)


def test_strategy_fingerprint_tracks_model_resolution_and_seed_not_id():
    base = crux_nb.communities(model=OfflineModel())
    assert base.strategy_fingerprint == crux_nb.communities(model=OfflineModel(), id="other").strategy_fingerprint
    assert base.strategy_fingerprint != crux_nb.communities(model=OfflineModel(), seed=1).strategy_fingerprint
    assert base.strategy_fingerprint != crux_nb.communities(model=OfflineModel(), resolution=2).strategy_fingerprint
    assert base.strategy_fingerprint != crux_nb.communities(model=OfflineModel(name="other")).strategy_fingerprint


def test_unconfigured_knowledge_base_says_how_to_configure():
    with pytest.raises(CruxError, match="no communities configured") as info:
        crux_nb.knowledge_base().communities
    assert "crux_nb.communities(model=" in info.value.hint


def test_status_lifecycle_and_extraction_first():
    kb = build()
    assert kb.communities.status() == "missing" and kb.entities.empty
    result = kb.communities.prepare(progress=False)
    assert kb.communities.status() == "ready" and not kb.entities.empty  # extraction ran first
    assert result.reports_written == result.communities > 1 and result.calls == result.communities
    first = kb.communities.generation_id
    kb.add_text("late.md", "# Late\n\nPriya Raman added a note about the Ingest Gateway.")
    assert kb.communities.status() == "stale"
    kb.communities.prepare(progress=False)
    assert kb.communities.status() == "ready" and kb.communities.generation_id != first
    again = kb.communities.prepare(progress=False)
    assert again.calls == 0 and again.generation_id == kb.communities.generation_id
    forced = kb.communities.prepare(force=True, progress=False)
    assert forced.generation_id != again.generation_id and forced.calls == 0  # identical rebuild: all reused


def test_strategy_change_makes_status_stale():
    kb = build()
    kb.communities.prepare(progress=False)
    kb.configure_communities(crux_nb.communities(model=OfflineModel(), seed=5))
    assert kb.communities.status() == "stale"


def test_one_changed_leaf_rewrites_only_it_and_its_ancestors():
    model = Counting()
    kb = build(model)
    kb.communities.prepare(progress=False)
    comms = kb.communities.communities.set_index("community_id")
    members = kb.communities.frame("community_members")
    leaf = members[members["member_ref"] == "chunk:team-1-2.md:c0000"]["community_id"].iloc[0]
    ancestors = []
    node = comms.loc[leaf, "parent_id"]
    while isinstance(node, str):
        ancestors.append(node)
        node = comms.loc[node, "parent_id"]
    model.reports.clear()
    kb.add_text("team-1-2.md", TEXTS["team-1-2.md"].replace("on day 2", "on the second day"))
    result = kb.communities.prepare(progress=False)
    assert len(model.reports) == 1 + len(ancestors) == result.reports_written
    assert result.reports_reused == result.communities - result.reports_written


def test_invalid_reports_fail_after_one_repair_and_keep_the_previous_generation():
    kb = build()
    kb.communities.prepare(progress=False)
    before = kb.communities.generation_id
    reports_before = kb.communities.frame("reports")
    bad = Counting(fail=True)
    kb.configure_communities(crux_nb.communities(model=bad))
    kb.add_text("late.md", "# Late\n\nMarcus Chen wrote about the Query Engine.")
    with pytest.raises(ValidationExhaustedError) as info:
        kb.communities.prepare(progress=False)
    assert info.value.attempts == 2 and info.value.max_attempts == 2  # calls made: one call, one repair
    assert len(bad.reports) == 2 and bad.reports[0] == bad.reports[1]  # one call, one repair
    assert kb.communities.generation_id == before
    pd.testing.assert_frame_equal(kb.communities.frame("reports"), reports_before)
    assert kb.communities.status() == "stale"


def test_status_is_building_while_a_build_runs():
    gate = threading.Event()
    kb = build(Counting(gate=gate))
    kb.extract_entities(progress=False)
    worker = threading.Thread(target=kb.communities.prepare, kwargs={"progress": False})
    worker.start()
    try:
        for _ in range(200):
            if kb.communities.status() == "building":
                break
            threading.Event().wait(0.01)
        assert kb.communities.status() == "building"
    finally:
        gate.set()
        worker.join(10)
    assert kb.communities.status() == "ready"


def test_reports_pages_tree_and_frames():
    kb = build()
    page = kb.communities.reports()  # prepares first
    reports = page.reports
    assert page.cursor is None and len(reports) == len(kb.communities.communities)
    assert [(r.level, r.community_id) for r in reports] == sorted((r.level, r.community_id) for r in reports)
    root = max(reports, key=lambda r: r.level)
    assert root.parent_id is None
    children = kb.communities.reports(parent_id=root.community_id).reports
    assert {r.community_id for r in children} == set(kb.communities.communities.set_index("community_id").loc[root.community_id, "child_ids"])
    first = kb.communities.reports(limit=2)
    assert len(first.reports) == 2 and first.cursor == first.reports[-1].community_id
    rest = kb.communities.reports(cursor=first.cursor)
    assert [r.community_id for r in first.reports + rest.reports] == [r.community_id for r in reports]
    assert all(r.level == 0 for r in kb.communities.reports(level=0).reports)
    tree = kb.communities.tree()
    assert nx.is_arborescence(tree) and tree.nodes[root.community_id]["level"] == root.level
    chunks = set(kb.chunks["ref"])
    for r in reports:
        assert 1 <= len(r.title) <= 120 and len(r.summary) <= 2000
        for f in r.findings:
            assert f.evidence and {str(e) for e in f.evidence} <= chunks
    with pytest.raises(ParameterError):
        kb.communities.reports(limit=0)
    with pytest.raises(ParameterError):
        kb.communities.reports(cursor="nope")


def test_communities_survive_save_and_open(tmp_path):
    kb = build()
    kb.communities.prepare(progress=False)
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb", communities=crux_nb.communities(model=OfflineModel()))
    assert back.communities.status() == "ready" and back.communities.generation_id == kb.communities.generation_id
    assert [r.findings for r in back.communities.reports().reports] == [r.findings for r in kb.communities.reports().reports]


def test_empty_knowledge_base_publishes_an_empty_generation():
    kb = crux_nb.knowledge_base(communities=crux_nb.communities(model=OfflineModel()))
    result = kb.communities.prepare(progress=False)
    assert result.communities == 0 and kb.communities.status() == "ready"
    assert kb.communities.reports().reports == ()


def test_deterministic_across_runs_and_repr():
    one, two = build(), build()
    one.communities.prepare(progress=False)
    two.communities.prepare(progress=False)
    pd.testing.assert_frame_equal(one.communities.frame("report_findings"), two.communities.frame("report_findings"))
    assert one.communities.generation_id == two.communities.generation_id
    assert repr(one.communities).startswith("Communities(id='communities', scope='corpus', status='ready'")
    html = one.communities._repr_html_()
    assert "status: ready" in html and "0x" not in html


def test_sample_corpus_hierarchy():
    kb = crux_nb.knowledge_base(id="lumen", communities=crux_nb.communities(model=OfflineModel()))
    kb.add_path(sample_path())
    kb.communities.prepare(progress=False)
    comms = kb.communities.communities
    assert (comms["kind"] == "root").sum() == 1 and comms["level"].max() >= 1
    leaves = comms[comms["child_ids"].map(len) == 0]
    assert leaves["estimated_chars"].max() <= 24_000
    assert leaves["n_chunks"].sum() == len(kb.chunks)


def test_saved_knowledge_base_publishes_by_saving_and_shows_builds_in_other_processes(tmp_path):
    from crux_nb.store.lease import Lease

    kb = build()
    kb.save(tmp_path / "kb")
    other = Lease(tmp_path / "kb" / "communities.lease").acquire()  # as if another process were building
    try:
        assert kb.communities.status() == "building"
    finally:
        other.release()
    assert kb.communities.status() == "missing"
    result = kb.communities.prepare(progress=False)
    reopened = crux_nb.open(tmp_path / "kb", communities=crux_nb.communities(model=OfflineModel()))
    assert reopened.communities.status() == "ready" and reopened.communities.generation_id == result.generation_id
    assert not (tmp_path / "kb" / "communities.lease").exists()
    # a second process with the same sources adopts the published generation without a model call
    model = Counting()
    late = crux_nb.knowledge_base(id="c", communities=crux_nb.communities(model=model))
    for sid, text in TEXTS.items():
        late.add_text(sid, text)
    late.path = tmp_path / "kb"
    late.extract_entities(progress=False)
    adopted = late.communities.prepare(progress=False)
    assert adopted.generation_id == result.generation_id and adopted.calls == 0 and model.reports == []
