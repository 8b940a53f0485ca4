"""GraphRAG import and export (``crux_nb.io``): the shared real index, a tiny hand-made index, old
layouts, errors and round trips."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import crux_nb
from crux_nb._hashing import stable_id
from crux_nb.community.frames import input_fingerprint
from crux_nb.errors import InputError, ParameterError, StorageError
from crux_nb.io import format_references, parse_references, read_graphrag, strip_references, write_graphrag
from crux_nb.io.graphrag_communities import finding_statement
from crux_nb.io.graphrag_refs import Reference
from crux_nb.io.graphrag_write import ARROW_SCHEMAS
from crux_nb.models import OfflineModel
from crux_nb.refs import ChunkRef, EntityRef, encode_ref
from crux_nb.retrieval import EvidenceHit, FindingHit, expand_relations, global_search, retrieve
from crux_nb.store.state import with_edges

from graphrag_tiny import tiny_tables

TABLES = ("documents", "text_units", "entities", "relationships", "communities", "community_reports", "covariates")
Q = "What does Scrooge learn from the ghosts?"


# ---------------------------------------------------------------- fixtures
@pytest.fixture(scope="module")
def index(shared_data) -> Path:
    return shared_data / "graphrag-christmas-carol"


@pytest.fixture(scope="module")
def raw(index) -> dict[str, pd.DataFrame]:
    return {t: pd.read_parquet(index / f"{t}.parquet") for t in TABLES}


@pytest.fixture(scope="module")
def carol(index):
    return read_graphrag(index, id="carol")


def write_tables(folder: Path, tables: dict[str, pd.DataFrame], *, prefix: str = "") -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{prefix}{name}.parquet", index=False)
    return folder


@pytest.fixture
def tiny(tmp_path) -> Path:
    return write_tables(tmp_path / "tiny", tiny_tables())


# ------------------------------------------------------------ references
def test_parse_and_strip_references():
    refs, more = parse_references("x [Data: Entities (39, 399); Relationships (39, 680, +more)] y "
                                  "[data: sources (3), Reports (1); Claims (7); Outliers (2)]")
    assert refs == [Reference("entities", "39"), Reference("entities", "399"), Reference("relationships", "39"),
                    Reference("relationships", "680"), Reference("sources", "3"), Reference("reports", "1"),
                    Reference("claims", "7"), Reference("outliers", "2")]
    assert more == 1
    assert parse_references(None) == ([], 0) and parse_references("no refs") == ([], 0)
    assert strip_references("Alone [Data: Entities (39)]. Works [Data: Sources (1)]") == "Alone. Works"
    assert format_references({"sources": [3, 7], "entities": [1]}) == "[Data: Entities (1); Sources (3, 7)]"
    assert format_references({"sources": []}) == ""


def test_finding_statement_joins_summary_and_explanation():
    assert finding_statement("Heading", "Body [Data: Entities (1)].") == "Heading: Body."
    assert finding_statement("Body is", "Body is long [Data: Sources (1)]") == "Body is long"  # written by us
    assert finding_statement("Cut short…", "Cut short here.") == "Cut short here."
    assert finding_statement("Only a summary", "") == "Only a summary"


# ------------------------------------------------------------ tiny index
def test_tiny_index_import(tiny):
    kb = read_graphrag(tiny, id="tiny")
    info = kb.graphrag
    assert kb.communities.status() == "ready"
    chunks = kb.chunks
    # source id = title; chunk id = text unit id; ordinal = position in the document's text_unit_ids
    assert chunks[["source_id", "chunk_id", "ordinal"]].values.tolist() == [
        ["a.txt", "tu-a2", 0], ["a.txt", "tu-a1", 1], ["b.txt", "tu-b1", 0], ["b.txt", "tu-b2", 1]]
    assert kb.documents["source_id"].tolist() == ["a.txt", "b.txt"]
    ents = kb.entities.set_index("entity_id")
    assert ents.loc["e1", "canonical_name"] == "ALICE" and ents.loc["e1", "type"] == "PERSON"
    assert pd.isna(ents.loc["e3", "type"]) and pd.isna(ents.loc["e3", "description"])
    assert ents.loc["DAVE", "canonical_name"] == "DAVE"  # a placeholder for a relationship end
    assert info.counts["placeholder_entities"] == 1 and bool(info.entities.set_index("entity_id").loc["DAVE", "placeholder"])
    edges = kb.edges
    assert (edges["stage"] == "graphrag").all()
    assert sorted(edges.loc[edges["type"] == "mentions", ["from_ref", "to_ref"]].itertuples(index=False, name=None)) == [
        ("chunk:a.txt:tu-a1", "entity:e1"), ("chunk:a.txt:tu-a2", "entity:e1"), ("chunk:a.txt:tu-a2", "entity:e2"),
        ("chunk:b.txt:tu-b1", "entity:e3")]
    related = edges[edges["type"] == "related"].set_index("to_ref")
    assert related.loc["entity:e2", "from_ref"] == "entity:e1"  # symmetric: ends sorted
    assert related.loc["entity:e2", "weight"] == 2.0 and related.loc["entity:e3", "weight"] == 1.0  # 0 -> 1.0
    assert any("weight 1.0" in n for n in info.notes)
    assert (kb.edge_evidence["provenance"] == "derived").all()


def test_import_details_are_saved_with_the_knowledge_base(tiny, tmp_path):
    kb = read_graphrag(tiny, id="tiny")
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb").graphrag
    assert back is not None
    assert (back.folder, back.layout, back.counts, back.notes) == (kb.graphrag.folder, kb.graphrag.layout,
                                                                   kb.graphrag.counts, kb.graphrag.notes)
    assert back.references.to_dict() == kb.graphrag.references.to_dict()
    assert [str(w) for w in back.warnings] == [str(w) for w in kb.graphrag.warnings] and back.warnings
    for name in ("documents", "text_units", "entities", "relationships", "communities", "covariates"):
        pd.testing.assert_frame_equal(getattr(back, name), getattr(kb.graphrag, name), check_dtype=False)
    pd.testing.assert_frame_equal(back.to_frame(), kb.graphrag.to_frame())
    # a knowledge base built by crux_nb itself has none, before and after a save
    own = crux_nb.knowledge_base(id="own")
    own.add_text("a.md", "Alice met Bob.")
    own.save(tmp_path / "own")
    assert own.graphrag is None and crux_nb.open(tmp_path / "own").graphrag is None


def test_saved_import_details_are_checksummed(tiny, tmp_path):
    read_graphrag(tiny, id="tiny").save(tmp_path / "kb")
    part = next((tmp_path / "kb" / "generations").glob("g*/imported/entities/part-00000.parquet"))
    frame = pd.read_parquet(part)
    frame.iloc[:0].to_parquet(part, index=False)
    with pytest.raises(StorageError, match="imported table 'entities'.*checksum"):
        crux_nb.open(tmp_path / "kb")


def test_tiny_levels_ids_and_findings(tiny):
    kb = read_graphrag(tiny)
    comms = kb.communities.communities.set_index("community_id")
    assert comms.loc["c-root", ["level", "kind"]].tolist() == [1, "root"]
    assert comms.loc["c-a", ["level", "kind", "parent_id"]].tolist() == [0, "leaf", "c-root"]
    mapping = kb.graphrag.communities.set_index("community_id")
    assert mapping.loc["c-root", ["community", "graphrag_level", "level", "report_id", "rank"]].tolist() == [
        0, 0, 1, "rep0", 5.0]
    f = kb.communities.frame("report_findings").set_index(["community_id", "finding_id"])
    a1, a2 = "chunk:a.txt:tu-a1", "chunk:a.txt:tu-a2"
    # Reports (1) -> community 1's text units; Entities (99) does not exist
    assert f.loc[("c-root", "finding-1"), "evidence"] == (a1, a2)
    assert f.loc[("c-root", "finding-1"), "statement"] == "Pairs: Alice and Bob."
    # no reference at all: the community's own text units
    assert f.loc[("c-root", "finding-2"), "evidence"] == tuple(sorted([a1, a2, "chunk:b.txt:tu-b1", "chunk:b.txt:tu-b2"]))
    # Entities (1) = BOB -> tu-a2; Relationships (0) -> tu-a2; +more names nothing
    assert f.loc[("c-a", "finding-1"), "evidence"] == (a2,)
    assert f.loc[("c-a", "finding-2"), "evidence"] == ("chunk:b.txt:tu-b2",)  # Sources (3)
    assert f.loc[("c-b", "finding-1"), "evidence"] == ("chunk:b.txt:tu-b2",)  # Claims (0) -> its text unit
    refs = kb.graphrag.references
    assert (refs.findings, refs.findings_resolved, refs.findings_fallback) == (5, 4, 1)
    assert (refs.references, refs.resolved, refs.unresolved, refs.more_markers) == (6, 5, 1, 1)
    assert refs.by_kind["entities"] == {"cited": 2, "resolved": 1}


def test_communities_config_is_the_one_passed(tiny):
    config = crux_nb.communities(model=OfflineModel(), seed=7)
    kb = read_graphrag(tiny, communities=config)
    assert kb.communities_config is config and kb.communities.status() == "ready"
    assert kb.communities.pointer()["strategy_fingerprint"] == config.strategy_fingerprint
    assert kb.communities.pointer()["input_fingerprint"] == input_fingerprint(kb.state, None)
    kb.add_text("new.md", "Alice meets someone new.")
    assert kb.communities.status() == "stale"
    with pytest.raises(ParameterError, match=r"read_graphrag\(\): parameter 'communities'"):
        read_graphrag(tiny, communities="offline")
    with pytest.raises(ParameterError, match="'id'"):
        read_graphrag(tiny, id="a:b")


def test_documents_table_optional_and_titles_fall_back_to_ids(tmp_path):
    tables = tiny_tables()
    del tables["documents"], tables["covariates"]
    kb = read_graphrag(write_tables(tmp_path / "nodocs", tables))
    assert kb.documents["source_id"].tolist() == ["doc-a", "doc-b"]  # no titles: GraphRAG document ids
    assert kb.graphrag.references.by_kind["claims"] == {"cited": 1, "resolved": 0}
    tables = tiny_tables()
    tables["documents"]["title"] = ["same.txt", "same.txt"]
    kb = read_graphrag(write_tables(tmp_path / "duptitles", tables))
    assert kb.documents["source_id"].tolist() == ["doc-a", "doc-b"]


def test_old_layout_names_and_columns(tmp_path):
    tables = tiny_tables()
    tables["entities"] = tables["entities"].rename(columns={"title": "name"}).drop(columns=["id"])
    tables["text_units"] = tables["text_units"].drop(columns=["document_id"]).assign(
        document_ids=[["doc-a"], ["doc-a"], ["doc-b"], ["doc-b"]])
    tables["documents"] = tables["documents"].rename(columns={"text": "raw_content"})
    tables["communities"] = tables["communities"].drop(columns=["parent", "children", "community"])
    tables["community_reports"] = tables["community_reports"].rename(columns={"rating_explanation": "rank_explanation"})
    tables["relationships"]["text_unit_ids"] = [["tu-a2"], ["tu-b1,tu-b2"]]  # 0.x joined ids with commas
    kb = read_graphrag(write_tables(tmp_path / "old", tables, prefix="create_final_"))
    assert kb.graphrag.layout.startswith("graphrag<2")
    assert set(kb.entities["entity_id"]) == {"ALICE", "BOB", "CAROL", "DAVE"}  # no id column: titles
    comms = kb.communities.communities.set_index("community_id")
    assert comms.loc["c-a", "parent_id"] == "c-root" and comms.loc["c-root", "level"] == 1  # parents inferred
    assert any("inferred" in n for n in kb.graphrag.notes)
    assert kb.graphrag.communities.set_index("community_id").loc["c-b", "rating_explanation"] == "low"
    related = kb.edges[kb.edges["type"] == "related"]
    ev = kb.edge_evidence[kb.edge_evidence["edge_id"].isin(related["edge_id"])]
    assert set(ev["chunk_ref"]) == {"chunk:a.txt:tu-a2", "chunk:b.txt:tu-b1", "chunk:b.txt:tu-b2"}
    assert kb.communities.status() == "ready"


def test_project_root_with_output_folder(tmp_path):
    write_tables(tmp_path / "project" / "output", tiny_tables())
    assert read_graphrag(tmp_path / "project").summary()["chunks"] == 4


# ------------------------------------------------------------ errors
def test_error_not_a_folder_and_missing(tmp_path):
    file = tmp_path / "entities.parquet"
    tiny_tables()["entities"].to_parquet(file)
    with pytest.raises(InputError, match="is not a folder") as info:
        read_graphrag(file)
    assert info.value.code == "graphrag_not_a_folder"
    with pytest.raises(StorageError, match="does not exist") as info:
        read_graphrag(tmp_path / "nowhere")
    assert info.value.code == "graphrag_not_found"
    with pytest.raises(InputError, match="must be a folder path"):
        read_graphrag(42)


def test_error_not_parquet(tiny):
    (tiny / "relationships.parquet").write_text("source,target\nA,B\n")
    with pytest.raises(StorageError, match=r"'relationships.parquet' .* cannot be read as Parquet") as info:
        read_graphrag(tiny)
    assert info.value.code == "graphrag_not_parquet"


@pytest.mark.parametrize("table", ["text_units", "entities", "relationships", "communities", "community_reports"])
def test_error_missing_table(tiny, table):
    (tiny / f"{table}.parquet").unlink()
    with pytest.raises(StorageError, match=rf"has no '{table}' table") as info:
        read_graphrag(tiny)
    assert info.value.code == "graphrag_missing_table"


def test_error_empty_folder(tmp_path):
    with pytest.raises(StorageError, match="has no 'text_units' table"):
        read_graphrag(tmp_path)


@pytest.mark.parametrize("table,column,pattern", [
    ("entities", "title", r"'entities.parquet' has no column 'title' \(or 'name'\)"),
    ("relationships", "source", r"'relationships.parquet' has no column 'source'"),
    ("communities", "level", r"'communities.parquet' has no column 'level'"),
    ("community_reports", "community", r"'community_reports.parquet' has no column 'community'"),
    ("text_units", "text", r"'text_units.parquet' has no column 'text'"),
])
def test_error_missing_column(tmp_path, table, column, pattern):
    tables = tiny_tables()
    tables[table] = tables[table].drop(columns=[column])
    with pytest.raises(InputError, match=pattern) as info:
        read_graphrag(write_tables(tmp_path / "x", tables))
    assert info.value.code == "graphrag_missing_column"


def test_error_missing_document_link(tmp_path):
    tables = tiny_tables()
    tables["text_units"] = tables["text_units"].drop(columns=["document_id"])
    del tables["documents"]
    with pytest.raises(InputError, match=r"no column 'document_id' or 'document_ids'"):
        read_graphrag(write_tables(tmp_path / "x", tables))


@pytest.mark.parametrize("table,column,value,pattern", [
    ("communities", "level", ["top", "1", "1"], r"column 'level', row 0: 'top' is not a valid integer"),
    ("entities", "text_unit_ids", [5, 6, 7], r"column 'text_unit_ids', row 0: expected a list of ids; got int"),
    ("community_reports", "findings", ["not json", "[]", "[]"], r"column 'findings', row 0: 'not json' is not a JSON"),
])
def test_error_wrong_values(tmp_path, table, column, value, pattern):
    tables = tiny_tables()
    frame = tables[table].copy()
    frame[column] = pd.Series(value, dtype=object if isinstance(value[0], str) else None)
    folder = tmp_path / "x"
    write_tables(folder, tables)
    pq.write_table(pa.Table.from_pandas(frame, preserve_index=False), folder / f"{table}.parquet")
    with pytest.raises(InputError, match=pattern) as info:
        read_graphrag(folder)
    assert info.value.code == "graphrag_invalid_value"


def test_error_cycle_and_repeated_ids(tmp_path):
    tables = tiny_tables()
    tables["communities"]["parent"] = [2, 0, 1]
    with pytest.raises(InputError, match="its own ancestor"):
        read_graphrag(write_tables(tmp_path / "cycle", tables))
    tables = tiny_tables()
    tables["entities"]["id"] = ["e1", "e1", "e3"]
    with pytest.raises(InputError, match="entity id 'e1' is repeated"):
        read_graphrag(write_tables(tmp_path / "dup", tables))


# ------------------------------------------------------------ export
def test_export_schema_and_errors(tiny, tmp_path):
    kb = read_graphrag(tiny)
    out = write_graphrag(kb, tmp_path / "out")
    assert out.rows == {"documents": 2, "text_units": 4, "entities": 4, "relationships": 2, "communities": 3,
                        "community_reports": 3, "covariates": 1}
    for name, schema in ARROW_SCHEMAS().items():
        assert pq.read_schema(tmp_path / "out" / f"{name}.parquet").remove_metadata().equals(schema), name
    reports = pd.read_parquet(tmp_path / "out" / "community_reports.parquet").set_index("id")
    assert reports["rank"].tolist() == [5.0, 7.5, 1.0]  # GraphRAG's own ranks travel with an imported kb
    with pytest.raises(InputError, match="is not a folder"):
        write_graphrag(kb, tiny / "entities.parquet")
    with pytest.raises(ParameterError, match=r"write_graphrag\(\): parameter 'kb'"):
        write_graphrag("kb", tmp_path / "x")


def test_export_without_communities_reads_back_missing(tmp_path):
    kb = crux_nb.knowledge_base(id="plain")
    kb.add_text("a.md", "# A\n\nAlice and Bob.")
    out = write_graphrag(kb, tmp_path / "plain")
    assert out.rows["communities"] == 0 and out.rows["text_units"] == 1
    back = read_graphrag(tmp_path / "plain")
    assert back.chunks["chunk_id"].tolist() == kb.chunks["chunk_id"].tolist()
    assert back.communities.status() == "missing"


def test_tiny_round_trip(tiny, tmp_path):
    kb = read_graphrag(tiny)
    write_graphrag(kb, tmp_path / "rt")
    assert_same_knowledge(kb, read_graphrag(tmp_path / "rt"))


# ------------------------------------------------------------ the shared index
@pytest.mark.shared_data
def test_shared_index_counts(carol, raw):
    info = carol.graphrag
    assert carol.summary() == {"documents": 1, "sections": 0, "chunks": 42, "entities": 561, "edges": 779 + 935}
    c = info.counts
    assert (c["mentions"], c["related"], c["relationships"], c["relationships_merged"]) == (779, 935, 978, 43)
    assert (c["placeholder_entities"], c["communities"], c["reports"], c["roots"], c["leaves"]) == (32, 122, 122, 23, 98)
    assert c["communities_without_report"] == c["reports_without_community"] == c["unknown_text_unit_ids"] == 0
    refs = info.references
    assert (refs.findings, refs.findings_resolved, refs.findings_fallback) == (847, 847, 0)
    assert (refs.references, refs.resolved, refs.unresolved, refs.more_markers) == (3814, 3805, 9, 142)
    assert refs.by_kind == {"entities": {"cited": 1803, "resolved": 1794},
                            "relationships": {"cited": 2011, "resolved": 2011}}
    assert carol.communities.status() == "ready"
    assert len(raw["entities"]) + c["placeholder_entities"] == c["entities"] == 561


@pytest.mark.shared_data
def test_shared_index_chunks_entities_edges(carol, raw):
    tu, docs, ents, rels = raw["text_units"], raw["documents"], raw["entities"], raw["relationships"]
    chunks = carol.chunks
    assert chunks["source_id"].unique().tolist() == [docs["title"][0]]
    assert chunks["chunk_id"].tolist() == list(docs["text_unit_ids"][0])  # ordinals follow the document
    assert chunks["content"].tolist() == tu.set_index("id").loc[chunks["chunk_id"], "text"].tolist()
    e = carol.entities.set_index("entity_id")
    assert e.loc[ents["id"], "canonical_name"].tolist() == ents["title"].tolist()
    assert e.loc[ents["id"], "type"].tolist() == ents["type"].tolist()
    chunk_ref = {t: encode_ref(ChunkRef(docs["title"][0], t)) for t in tu["id"]}
    expected = {(chunk_ref[t], encode_ref(EntityRef(i))) for i, ts in zip(ents["id"], ents["text_unit_ids"]) for t in ts}
    mentions = carol.edges[carol.edges["type"] == "mentions"]
    assert set(zip(mentions["from_ref"], mentions["to_ref"])) == expected
    ev = carol.edge_evidence.set_index("edge_id").loc[mentions["edge_id"], "chunk_ref"]
    assert ev.tolist() == mentions["from_ref"].tolist()  # a mention's evidence is its chunk
    # the pair (TAILOR'S WIFE, BABY) is named twice: one symmetric edge, weights added
    title_ref = dict(zip(ents["title"], (encode_ref(EntityRef(i)) for i in ents["id"])))
    pair = sorted([title_ref["TAILOR'S WIFE"], title_ref["BABY"]])
    edge = carol.edges[(carol.edges["from_ref"] == pair[0]) & (carol.edges["to_ref"] == pair[1])].iloc[0]
    assert (edge["type"], edge["direction"], edge["weight"]) == ("related", "symmetric", 18.0)
    assert edge["description"].split("\n") == ["The baby is the child of the tailor's wife.",
                                               "The tailor's wife and baby go out together to buy beef."]


@pytest.mark.shared_data
def test_edge_ids_match_with_edges(carol):
    """The vectorised edges carry the ids (and rows) that KBState's with_edges computes for stage 'graphrag'."""
    edges = carol.edges.groupby("type").head(20)
    ev = carol.edge_evidence.groupby("edge_id")["chunk_ref"].apply(list)
    frame = edges.assign(evidence=edges["edge_id"].map(ev))[["from_ref", "to_ref", "type", "direction", "description",
                                                              "weight", "evidence"]]
    base = carol.state.__class__(documents=carol.state.documents, chunks=carol.state.chunks)
    rebuilt = with_edges(base, frame, stage="graphrag", provenance="derived")
    mine = carol.edges[carol.edges["edge_id"].isin(edges["edge_id"])].reset_index(drop=True)
    pd.testing.assert_frame_equal(rebuilt.edges, mine)
    some = edges.iloc[0]
    assert some["edge_id"] == stable_id("edge", {"type": some["type"], "from": some["from_ref"], "to": some["to_ref"],
                                                 "direction": some["direction"], "stage": "graphrag"})


@pytest.mark.shared_data
def test_shared_index_level_mapping(carol, raw):
    gr = raw["communities"].set_index("community")
    mapping = carol.graphrag.communities.set_index("community")
    comms = carol.communities.communities.set_index("community_id")
    assert (mapping["graphrag_level"] == gr.loc[mapping.index, "level"]).all()
    assert mapping.loc[mapping.index, "community_id"].tolist() == gr.loc[mapping.index, "id"].tolist()

    def crux_level(k):
        kids = list(gr.loc[k, "children"])
        return 0 if not kids else 1 + max(crux_level(c) for c in kids)

    for k in gr.index:
        row = comms.loc[gr.loc[k, "id"]]
        assert row["level"] == crux_level(k) == mapping.loc[k, "level"]
        parent = gr.loc[k, "parent"]
        assert (row["parent_id"] if isinstance(row["parent_id"], str) else None) == \
            (None if parent == -1 else gr.loc[parent, "id"])
        assert row["n_chunks"] == len(gr.loc[k, "text_unit_ids"]) and row["n_entities"] == len(gr.loc[k, "entity_ids"])
    assert comms.loc[gr.loc[5, "id"], ["level", "kind"]].tolist() == [0, "root"]  # a top community without children
    assert comms.loc[gr.loc[0, "id"], ["level", "kind"]].tolist() == [1, "root"]
    assert sorted(comms["level"].value_counts().items()) == [(0, 98), (1, 18), (2, 5), (3, 1)]
    reports = carol.communities.frame("reports").set_index("community_id")
    rep = raw["community_reports"].set_index("community")
    assert reports.loc[gr.loc[1, "id"], ["title", "summary"]].tolist() == rep.loc[1, ["title", "summary"]].tolist()


@pytest.mark.shared_data
def test_shared_index_reference_resolution(carol, raw):
    ents, rels, tu = raw["entities"], raw["relationships"], raw["text_units"]
    source = raw["documents"]["title"][0]
    e_tu = dict(zip(ents["human_readable_id"], ents["text_unit_ids"]))
    r_tu = dict(zip(rels["human_readable_id"], rels["text_unit_ids"]))
    # "Relationship with Jacob Marley...": [Data: Entities (39, 399); Relationships (39, 680, 684)] ...
    # [Data: Entities (402); Relationships (684)]
    wanted = [t for ids, table in (([39, 399], e_tu), ([39, 680, 684], r_tu), ([402], e_tu), ([684], r_tu))
              for i in ids for t in table[i]]
    expected = tuple(dict.fromkeys(encode_ref(ChunkRef(source, t)) for t in wanted))
    findings = carol.communities.frame("report_findings")
    row = findings[findings["statement"].str.startswith("Relationship with Jacob Marley and the Business Legacy: ")]
    assert len(row) == 1 and row.iloc[0]["evidence"] == expected
    assert "[Data:" not in "".join(findings["statement"])
    assert len(findings) == 847 and findings["evidence"].map(len).min() >= 1


@pytest.mark.shared_data
def test_global_search_exact_over_graphrag_reports(carol):
    m = OfflineModel()
    # overview: the 24 parents and 38 leaves (11 top-level, 27 beside a sibling with children)
    for scan, detail, reports in (("all", "overview", 62), ("all", "detailed", 98), ("adaptive", "overview", None)):
        recipe = carol.recipe(steps=[global_search(model=m, scan=scan, detail=detail, limit=10)])
        result = recipe.retrieve_with_trace(Q, admit=lambda estimate: True)
        k = result.trace.steps[0].knowledge
        assert k.coverage == "exact" and k.generations == (carol.communities.generation_id,)
        assert k.available["reports"] == (62 if detail == "overview" else 98)
        if reports is not None:
            assert k.processed["reports"] == reports
        else:
            assert 0 < k.processed["reports"] <= 62 and k.adaptive.rating_calls > 0
        hits = list(result.hits)
        assert hits and all(isinstance(h, FindingHit) for h in hits)
        refs = set(carol.chunks["ref"])
        assert all(encode_ref(s) in refs for h in hits for s in h.citation.supports)
    plan = carol.recipe(steps=[global_search(model=m, scan="all", detail="detailed")]).plan(Q)
    assert (plan.reports, plan.coverage) == (98, "exact") and plan.calls > 1


@pytest.mark.shared_data
def test_expand_relations_over_graphrag_graph(carol):
    recipe = carol.recipe(steps=[retrieve(limit=3), expand_relations(types=["mentions", "related"], limit=5)])
    result = recipe.retrieve_with_trace("Bob Cratchit and Tiny Tim at Christmas dinner")
    hits = list(result.hits)
    added = hits[3:]
    assert len(added) == 5 and all(isinstance(h, EvidenceHit) and h.provenance.graph for h in added)
    entity_refs = set(carol.entities["ref"])
    paths = [h.provenance.graph.path for h in added]
    assert all(p[0].startswith("chunk:") and p[-1].startswith("chunk:") for p in paths)
    assert all(any(x in entity_refs for x in p[1:-1]) for p in paths)  # reached through GraphRAG's entities
    seeds = result.trace.step("expand-relations").details["seeds"]
    names = dict(zip(carol.entities["ref"], carol.entities["canonical_name"]))
    assert {"BOB CRATCHIT", "TINY TIM"} <= {names.get(s) for s in seeds}  # query seeds by GraphRAG titles


# ------------------------------------------------------------ round trips
def assert_same_knowledge(a, b) -> None:
    """Chunks, entities (without aliases), edges (by content and evidence), communities, members, reports
    and findings are equal; generation ids and edge ids may differ (edge ids hash the stage)."""
    sa, sb = a.state, b.state
    cols = ["ref", "source_id", "chunk_id", "ordinal", "content", "n_chars"]
    pd.testing.assert_frame_equal(sa.chunks[cols], sb.chunks[cols])
    cols = ["entity_id", "ref", "canonical_name", "type", "description"]
    pd.testing.assert_frame_equal(sa.entities[cols], sb.entities[cols])

    def edges(s):
        ev = s.edge_evidence.groupby("edge_id")["chunk_ref"].apply(lambda x: tuple(sorted(x)))
        e = s.edges.assign(evidence=s.edges["edge_id"].map(ev))
        cols = ["type", "from_ref", "to_ref", "direction", "description", "weight", "evidence"]
        return e[cols].sort_values(cols[:3]).reset_index(drop=True)

    pd.testing.assert_frame_equal(edges(sa), edges(sb))

    def table(s, name, cols, by):
        return s.frame(name)[cols].sort_values(by).reset_index(drop=True)

    for name, cols, by in (
            ("communities", ["community_id", "level", "kind", "parent_id", "child_ids", "n_chunks", "n_entities",
                             "estimated_chars", "member_hash"], ["community_id"]),
            ("community_members", ["community_id", "member_ref", "member_kind"], ["community_id", "member_ref"]),
            ("reports", ["community_id", "level", "parent_id", "title", "summary", "member_hash", "n_entities",
                         "n_chunks", "strategy_fingerprint"], ["community_id"]),
            ("report_findings", ["community_id", "finding_id", "ordinal", "statement", "evidence"],
             ["community_id", "ordinal"])):
        pd.testing.assert_frame_equal(table(sa, name, cols, by), table(sb, name, cols, by), obj=name)
    assert b.communities.status() == "ready"


@pytest.mark.shared_data
def test_round_trip_shared_index(carol, index, tmp_path):
    out = write_graphrag(carol, tmp_path / "carol")
    assert out.rows["covariates"] == 406 and out.rows["relationships"] == 935
    for name in TABLES:  # the same Arrow types as GraphRAG's own files
        assert pq.read_schema(tmp_path / "carol" / f"{name}.parquet").remove_metadata().equals(
            pq.read_schema(index / f"{name}.parquet").remove_metadata()), name
    back = read_graphrag(tmp_path / "carol", id="carol")
    assert_same_knowledge(carol, back)
    assert back.graphrag.references.resolved == back.graphrag.references.references  # our Sources all resolve
    assert back.graphrag.counts["placeholder_entities"] == 0
    ranks = lambda kb: kb.graphrag.communities.set_index("community_id")["rank"].sort_index()  # noqa: E731
    pd.testing.assert_series_equal(ranks(back), ranks(carol))


@pytest.fixture(scope="module")
def sample_prepared():
    kb = crux_nb.datasets.load_sample()
    kb.configure_communities(crux_nb.communities(model=OfflineModel()))
    kb.communities.prepare(progress=False)
    return kb


def test_round_trip_sample_corpus(sample_prepared, tmp_path):
    out = write_graphrag(sample_prepared, tmp_path / "lumen")
    s = sample_prepared.summary()
    assert out.rows["text_units"] == s["chunks"] and out.rows["entities"] == s["entities"]
    assert out.dropped["sections"] == s["sections"] and out.dropped["entity_aliases"] > 0
    back = read_graphrag(tmp_path / "lumen", id="lumen")
    assert_same_knowledge(sample_prepared, back)
    refs = back.graphrag.references
    assert refs.findings == len(sample_prepared.state.report_findings) and refs.findings_fallback == 0
    hits = back.recipe(steps=[global_search(model=OfflineModel(), scan="all", detail="detailed")]).retrieve(
        "What changed in the launch plan?")
    assert len(hits) > 0


def test_round_trip_source_ids_with_colons(tmp_path):
    kb = crux_nb.knowledge_base(id="k")
    kb.add_text("notes:v1/a%b.md", "# A\n\nAlice and Bob plan the launch.")
    write_graphrag(kb, tmp_path / "k")
    back = read_graphrag(tmp_path / "k")
    assert back.chunks["ref"].tolist() == kb.chunks["ref"].tolist()
