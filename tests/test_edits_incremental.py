"""Edits proportional to the change: ``add_text`` / ``remove`` / ``add_edges`` splice the rows of the sources
and edges concerned into the stored frames, and give the frames the full rebuild gave (``edits_previous``)."""

from __future__ import annotations

import pandas as pd
import pytest

import crux_nb
from crux_nb.datasets import load_sample
from crux_nb.embeddings import StaticEmbedder, embed_chunks
from crux_nb.store.ingest import text_spec
from crux_nb.store.rows import edge_rows
from crux_nb.store.state import with_edges, with_sources, without_sources

import edits_previous as previous

TABLES = ("documents", "parents", "chunks", "entities", "edges", "edge_evidence", "embeddings")


def _same(a, b) -> None:
    for table in TABLES:
        pd.testing.assert_frame_equal(getattr(a, table), getattr(b, table), obj=table)


@pytest.fixture(scope="module")
def state():
    kb = load_sample()
    kb.extract_entities(progress=False)
    kb.add_text("twin.md", kb.chunks["content"].iloc[0])  # a chunk's content twice: its vector stays while one lives
    embed_chunks(kb, StaticEmbedder(dim=64))
    return kb.state


def _sources(state):
    return sorted(state.documents["source_id"])


@pytest.mark.parametrize("pick", [[0], [5], [0, -1], [3, 4, 9]])
def test_removing_sources_gives_the_rebuilt_frames(state, pick):
    ids = {_sources(state)[i] for i in pick}
    after = without_sources(state, ids)
    _same(after, previous.without_sources(state, ids))
    assert len(after.edges) < len(state.edges) and len(after.chunks) < len(state.chunks)


def test_removing_the_twin_keeps_the_shared_vector_and_both_drop_it(state):
    kept = without_sources(state, {"twin.md"})
    assert len(kept.embeddings) == len(state.embeddings)
    first = state.chunks["source_id"].iloc[0]
    both = without_sources(state, {"twin.md", first})
    _same(both, previous.without_sources(state, {"twin.md", first}))
    assert len(both.embeddings) < len(state.embeddings)


@pytest.mark.parametrize("source", ["0-first.md", "zz-last.md", "twin.md", None])
def test_adding_or_replacing_a_source_gives_the_rebuilt_frames(state, source):
    source = source or _sources(state)[7]
    specs = [text_spec(source, "# Title\n\nPriya Raman moved Beacon 3.0 to May.\n\n## Two\n\nMore text.")]
    _same(with_sources(state, specs, chunk_size=1200), previous.with_sources(state, specs, chunk_size=1200))


def test_many_sources_at_once_give_the_rebuilt_frames(state):
    specs = [text_spec(f"bulk-{i:03d}.md", f"Source {i} text.") for i in range(80)]  # past the splice limit
    specs.append(text_spec(_sources(state)[2], "Replaced."))
    _same(with_sources(state, specs, chunk_size=1200), previous.with_sources(state, specs, chunk_size=1200))


def _edge_frame(state):
    c, e = state.chunks["ref"].tolist(), state.entities["ref"].tolist()
    old = state.edges.iloc[20]
    return pd.DataFrame({
        "from_ref": [c[0], c[5], e[0], c[3], old["from_ref"], "entity:brand-new"],
        "to_ref": [e[1], c[9], e[2], e[3], old["to_ref"], c[1]],
        "type": ["mentions", "references", "related", "mentions", old["type"], "mentions"],
        "direction": ["directed", "directed", "symmetric", "directed", old["direction"], "directed"],
        "evidence": [[c[0]], [c[5], c[9]], [c[2]], [c[3], c[4]], [c[7], c[8]], [c[1]]],
        "description": [None, "cites", None, "x", "filled later", None]})


def test_adding_a_few_edges_gives_the_merged_frames(state):
    frame = _edge_frame(state)
    after = with_edges(state, frame, stage="entities")  # the fifth row is an existing edge: its evidence grows
    existing = previous.existing_refs(state)
    chunk_sources = dict(zip(state.chunks["ref"], state.chunks["source_id"]))
    edges, evidence, _ = edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage="entities",
                                   provenance="exact")
    want_edges, want_evidence = previous.merge_edges(state, edges, evidence)
    pd.testing.assert_frame_equal(after.edges, want_edges)
    pd.testing.assert_frame_equal(after.edge_evidence, want_evidence)
    assert len(after.edge_evidence) > len(state.edge_evidence) + 6 and "entity:brand-new" in set(after.entities["ref"])


def test_a_missing_ref_is_still_refused_naming_it(state):
    frame = _edge_frame(state).iloc[:1].assign(to_ref=["chunk:nowhere.md:c0000"])
    with pytest.raises(crux_nb.errors.InputError, match="nowhere.md"):
        with_edges(state, frame)
    frame = _edge_frame(state).iloc[:1].assign(evidence=[["chunk:nowhere.md:c0000"]])
    with pytest.raises(crux_nb.errors.InputError, match="nowhere.md"):
        with_edges(state, frame)


def test_edits_leave_the_frames_they_do_not_touch_as_they_are(state):
    kb = crux_nb.knowledge_base(id="docs")
    kb.commit(lambda _: state)
    before = kb.state
    kb.add_text("zz-new.md", "A new source with no edges.")
    assert kb.state.edges is before.edges and kb.state.edge_evidence is before.edge_evidence
    assert kb.state.entities is before.entities and kb.state.embeddings is before.embeddings


def test_an_entity_without_edges_survives_an_unrelated_edit_and_goes_with_its_last_edge():
    kb = crux_nb.knowledge_base(id="docs")
    kb.add_text("a.md", "Alpha.")
    kb.add_text("b.md", "Beta.")
    kb.add_entities(pd.DataFrame({"entity_id": ["lonely", "linked"], "canonical_name": ["Lonely", "Linked"]}))
    kb.add_edges(pd.DataFrame({"from_ref": ["chunk:b.md:c0000"], "to_ref": ["entity:linked"], "type": ["mentions"],
                               "evidence": [["chunk:b.md:c0000"]]}))
    kb.add_text("c.md", "Gamma.")
    assert set(kb.entities["entity_id"]) == {"lonely", "linked"}
    kb.remove("b.md")
    assert set(kb.entities["entity_id"]) == {"lonely"}
