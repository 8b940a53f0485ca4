from concurrent.futures import ThreadPoolExecutor

import pandas as pd
import pytest

import crux_nb
from crux_nb.extract import entity_id_for
from crux_nb.models import OfflineModel
from crux_nb.testing import assert_kb_equal

DOCS = {
    "a.md": "# Launch\n\nPriya Raman owns the Beacon launch. Priya's plan depends on the Ingest Gateway.",
    "b.md": "# Incident\n\nThe Ingest Gateway failed during the Northwind Traders pilot. Priya Raman paused the launch.",
    "c.md": "# Notes\n\nMarcus Chen reviewed the Query Engine with Northwind Traders.",
}


class Counting:
    """The offline model, counting extract calls."""

    def __init__(self, fail=False):
        self.inner = OfflineModel()
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.calls, self.fail = [], fail

    def extract(self, chunks, *, repair=None):
        self.calls.append([c["id"] for c in chunks])
        if self.fail:
            raise RuntimeError("model down")
        return self.inner.extract(chunks, repair=repair)

    def write_report(self, community, *, repair=None):
        return self.inner.write_report(community, repair=repair)

    def map_findings(self, query, units, *, repair=None):
        return self.inner.map_findings(query, units, repair=repair)

    def rate(self, query, reports, *, repair=None):
        return self.inner.rate(query, reports, repair=repair)


def build():
    kb = crux_nb.knowledge_base(id="x")
    for sid, text in DOCS.items():
        kb.add_text(sid, text)
    return kb


def test_entities_mentions_and_related_with_evidence():
    kb = build()
    result = kb.extract_entities(progress=False)
    entities = kb.entities.set_index("entity_id")
    assert {"priya-raman", "ingest-gateway", "northwind-traders", "marcus-chen"} <= set(entities.index)
    assert entities.loc["priya-raman", "canonical_name"] == "Priya Raman"
    edges = kb.edges
    assert set(edges["type"]) == {"mentions", "related"} and set(edges["stage"]) == {"entities"}
    mentions = edges[edges["type"] == "mentions"]
    assert ("chunk:b.md:c0000", "entity:ingest-gateway") in set(zip(mentions["from_ref"], mentions["to_ref"]))
    related = edges[edges["type"] == "related"]
    assert (related["direction"] == "symmetric").all() and (related["from_ref"] < related["to_ref"]).all()
    pair = related[(related["from_ref"] == "entity:ingest-gateway") & (related["to_ref"] == "entity:priya-raman")]
    ev = kb.edge_evidence[kb.edge_evidence["edge_id"].isin(pair["edge_id"])]
    assert sorted(ev["chunk_ref"]) == ["chunk:a.md:c0000", "chunk:b.md:c0000"] and set(ev["provenance"]) == {"derived"}
    assert (result.sources_extracted, result.sources_reused, result.calls) == (3, 0, 3)
    assert result.mentions == len(mentions) and result.related == len(related)
    names = [n.ref.entity_id for n in kb.reader.neighbors("chunk:c.md:c0000", types=["mentions"])]
    assert "marcus-chen" in names


def test_deterministic_and_incremental():
    one, two = build(), build()
    one.extract_entities(progress=False)
    model = Counting()
    two.extract_entities(model, progress=False)
    assert_kb_equal(one, two)
    again = two.extract_entities(model, progress=False)
    assert again.calls == 0 and len(model.calls) == 3
    assert_kb_equal(one, two)
    two.add_text("c.md", "# Notes\n\nMarcus Chen met Contoso about the Billing Service.")
    changed = two.extract_entities(model, progress=False)
    assert (changed.sources_extracted, changed.sources_reused) == (1, 2)
    assert model.calls[-1] == ["chunk:c.md:c0000"]
    ids = set(two.entities["entity_id"])
    assert "contoso" in ids and "query-engine" not in ids  # gone with the old text of c.md


def test_removed_sources_leave_no_dangling_edges_evidence_or_entities():
    kb = build()
    kb.extract_entities(progress=False)
    kb.remove("c.md")
    kb.extract_entities(progress=False)
    chunks = set(kb.chunks["ref"])
    assert set(kb.edge_evidence["chunk_ref"]) <= chunks
    assert set(kb.edge_evidence["edge_id"]) == set(kb.edges["edge_id"])
    ends = set(kb.edges["from_ref"]) | set(kb.edges["to_ref"])
    assert {r for r in ends if r.startswith("chunk:")} <= chunks
    assert set(kb.entities["ref"]) <= ends
    assert "marcus-chen" not in set(kb.entities["entity_id"])
    assert kb.state.extractions["source_id"].tolist() == ["a.md", "b.md"]


def test_user_edges_survive_extraction():
    kb = build()
    kb.add_edges(pd.DataFrame([{"from_ref": "chunk:a.md:c0000", "to_ref": "document:b.md", "type": "references",
                                "evidence": ["chunk:a.md:c0000"]}]))
    kb.extract_entities(progress=False)
    assert (kb.edges["type"] == "references").sum() == 1


def test_failing_model_leaves_kb_unchanged():
    kb = build()
    before = {k: v.copy() for k, v in kb.frames().items()}
    with pytest.raises(RuntimeError, match="model down"):
        kb.extract_entities(Counting(fail=True), progress=False)
    for name, frame in before.items():
        pd.testing.assert_frame_equal(frame, kb.frames()[name])


def test_cache_survives_save_and_open(tmp_path):
    kb = build()
    kb.extract_entities(progress=False)
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb")
    model = Counting()
    assert back.extract_entities(model, progress=False).calls == 0 and model.calls == []
    assert_kb_equal(kb, back)


def test_executor_gives_identical_results():
    one, two = build(), build()
    one.extract_entities(progress=False, batch_chars=50)
    with ThreadPoolExecutor(2) as pool:
        two.extract_entities(progress=False, batch_chars=50, executor=pool)
    assert_kb_equal(one, two)


def test_bad_arguments():
    kb = build()
    with pytest.raises(crux_nb.errors.ParameterError, match="batch_chars"):
        kb.extract_entities(batch_chars=0)
    with pytest.raises(crux_nb.errors.CruxError):
        kb.extract_entities(model=object())


def test_entity_ids_are_readable_and_stable():
    assert entity_id_for("Priya  Raman") == entity_id_for("priya raman") == "priya-raman"
    assert entity_id_for("!!!").startswith("e-")
