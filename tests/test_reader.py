import math

import pandas as pd
import pytest

from crux_nb.errors import ParameterError, RefError
from crux_nb.graph import adjacency
from crux_nb.graph.reader import Support
from crux_nb.refs import ChunkRef, EntityRef
from crux_nb.hits import Provenance
from crux_nb.retrieval import EvidenceHit
from crux_nb.testing import make_kb


def names(neighbors):
    return [(str(n.ref), n.type, n.direction) for n in neighbors]


@pytest.fixture
def guide():
    """Source s: parent p1 (ordinal 0) holding c1, c2; parent p2 (1) holding c3; loose chunk c0; orphan c4."""
    return make_kb(
        parents=[("s", "p1", 0, "Part one"), ("s", "p2", 1, "Part two")],
        chunks=[("s", "c0", 0, "zero"), ("s", "c1", 1, "one", "p1"), ("s", "c2", 2, "two", "p1"),
                ("s", "c3", 3, "three", "p2"), ("s", "c4", 4, "four", "gone"), ("t", "x", 0, "other source")],
        metadata={"s": {"team": "a"}},
    )


def test_document_points_to_parents_and_parentless_chunks(guide):
    assert names(guide.reader.neighbors("document:s")) == [
        ("chunk:s:c0", "hierarchy", "out"), ("parent:s:p1", "hierarchy", "out"), ("parent:s:p2", "hierarchy", "out")]


def test_parent_points_in_to_document_and_out_to_chunks(guide):
    assert names(guide.reader.neighbors("parent:s:p1")) == [
        ("document:s", "hierarchy", "in"), ("chunk:s:c1", "hierarchy", "out"), ("chunk:s:c2", "hierarchy", "out")]
    assert guide.reader.neighbors("parent:s:nope") == []


def test_chunk_hierarchy_and_sequence_across_the_whole_source(guide):
    assert names(guide.reader.neighbors("chunk:s:c2")) == [
        ("parent:s:p1", "hierarchy", "in"), ("chunk:s:c1", "sequence", "in"), ("chunk:s:c3", "sequence", "out")]
    # sequence crosses section boundaries but never sources
    assert names(guide.reader.neighbors("chunk:s:c0", types=["sequence"])) == [("chunk:s:c1", "sequence", "out")]
    assert guide.reader.neighbors("chunk:t:x", types=["sequence"]) == []


def test_quirk_chunk_with_missing_parent_reports_document(guide):
    assert names(guide.reader.neighbors("chunk:s:c4", types=["hierarchy"])) == [("document:s", "hierarchy", "in")]
    assert "chunk:s:c4" not in [str(n.ref) for n in guide.reader.neighbors("document:s")]


def test_upstream_structural_limit_ties():
    kb = make_kb(chunks=[("guide", "b", 2, "b"), ("guide", "a", 1, "a"), ("guide", "same-b", 1, "sb"),
                         ("guide", "same-a", 1, "sa")])
    assert [str(n.ref) for n in kb.reader.neighbors("document:guide", direction="out", limit=2)] == [
        "chunk:guide:a", "chunk:guide:same-a"]
    assert names(kb.reader.neighbors("chunk:guide:same-a", direction="out")) == [
        ("chunk:guide:same-b", "sequence", "out")]


def test_entities_and_unknown_refs_have_no_structure(guide):
    assert guide.reader.neighbors("entity:x") == []
    assert guide.reader.neighbors("chunk:s:missing") == []
    assert guide.reader.neighbors("document:nope") == []


def add(kb, *rows):
    kb.add_edges(pd.DataFrame([{"evidence": ["chunk:s:c1"], **r} for r in rows]))


def test_persisted_after_structural_in_upstream_order_and_symmetric_twice(guide):
    add(guide,
        {"from_ref": "chunk:s:c1", "to_ref": "entity:zed", "type": "mentions"},
        {"from_ref": "chunk:s:c1", "to_ref": "entity:amy", "type": "mentions"},
        {"from_ref": "chunk:s:c1", "to_ref": "entity:amy", "type": "cites"},
        {"from_ref": "chunk:t:x", "to_ref": "chunk:s:c1", "type": "references"},
        {"from_ref": "chunk:s:c1", "to_ref": "chunk:s:c3", "type": "related", "direction": "symmetric"})
    got = names(guide.reader.neighbors("chunk:s:c1"))
    assert got == [  # structural by (ordinal, ref): c0 and p1 share ordinal 0
        ("chunk:s:c0", "sequence", "in"), ("parent:s:p1", "hierarchy", "in"), ("chunk:s:c2", "sequence", "out"),
        ("chunk:s:c3", "related", "out"), ("chunk:s:c3", "related", "in"),
        ("chunk:t:x", "references", "in"),
        ("entity:amy", "cites", "out"), ("entity:amy", "mentions", "out"), ("entity:zed", "mentions", "out")]
    assert names(guide.reader.neighbors("chunk:s:c3", types=["related"])) == [
        ("chunk:s:c1", "related", "out"), ("chunk:s:c1", "related", "in")]
    assert names(guide.reader.neighbors("entity:amy", direction="in")) == [
        ("chunk:s:c1", "cites", "in"), ("chunk:s:c1", "mentions", "in")]


def test_filters_limit_after_merge_and_evidence(guide):
    add(guide, {"from_ref": "chunk:s:c1", "to_ref": "entity:amy", "type": "mentions",
                "evidence": ["chunk:s:c1", "chunk:s:c2"]})
    reader = guide.reader
    assert names(reader.neighbors("chunk:s:c1", limit=4)) == names(reader.neighbors("chunk:s:c1"))[:4]
    assert reader.neighbors("chunk:s:c1", limit=0) == []
    assert len(reader.neighbors("chunk:s:c1", limit=2.9)) == 2
    assert reader.neighbors("chunk:s:c1", limit=-3) == []
    assert names(reader.neighbors("chunk:s:c1", types=["mentions"], direction="in")) == []
    assert names(reader.neighbors("chunk:s:c1", types=["nope"])) == []
    plain = reader.neighbors("chunk:s:c1", types=["mentions", "sequence"])
    assert all(n.evidence is None for n in plain)
    rich = reader.neighbors("chunk:s:c1", types=["mentions", "sequence"], include_evidence=True)
    assert [n.evidence for n in rich[:2]] == [(), ()]
    assert rich[2].evidence == (Support("s", ChunkRef("s", "c1"), "exact"), Support("s", ChunkRef("s", "c2"), "exact"))


def test_reader_is_pinned_to_its_state(guide):
    old = guide.reader
    add(guide, {"from_ref": "chunk:s:c1", "to_ref": "entity:amy", "type": "mentions"})
    assert old.neighbors("entity:amy") == []
    assert names(guide.reader.neighbors("entity:amy")) == [("chunk:s:c1", "mentions", "in")]


def test_index_is_built_once_per_state(guide, monkeypatch):
    add(guide, {"from_ref": "chunk:s:c1", "to_ref": "entity:amy", "type": "mentions"})
    builds = []
    original = adjacency.AdjacencyIndex.__init__

    def counting(self, *a, **k):
        builds.append(1)
        original(self, *a, **k)

    monkeypatch.setattr(adjacency.AdjacencyIndex, "__init__", counting)
    reader = guide.reader
    for _ in range(50):
        reader.neighbors("entity:amy")
        guide.reader.neighbors("chunk:s:c1")
    assert len(builds) == 1


@pytest.mark.parametrize("kwargs,name", [
    ({"direction": "both"}, "direction"), ({"limit": math.nan}, "limit"), ({"limit": "3"}, "limit"),
    ({"types": "mentions"}, "types"), ({"types": [1]}, "types"), ({"limit": True}, "limit"),
])
def test_bad_parameters(guide, kwargs, name):
    with pytest.raises(ParameterError, match=f"parameter '{name}'"):
        guide.reader.neighbors("chunk:s:c1", **kwargs)


def test_bad_refs(guide):
    with pytest.raises(RefError):
        guide.reader.neighbors("chunk:only-two")


def test_hydrate(guide):
    hit = guide.reader.hydrate("chunk:s:c1")
    assert isinstance(hit, EvidenceHit) and hit.score == 0 and hit.kind == "evidence"
    assert (hit.namespace, hit.source.id, hit.chunk_id, hit.content) == ("kb", "s", "c1", "one")
    assert hit.parent.parent_id == "p1" and hit.parent.title == "Part one" and hit.metadata == {"team": "a"}
    assert guide.reader.hydrate(ChunkRef("s", "c0")).parent is None
    assert guide.reader.hydrate("chunk:s:nope") is None
    assert guide.reader.hydrate("document:s") is None
    assert guide.reader.hydrate(EntityRef("x")) is None
    assert guide.reader.hydrate("garbage") is None


def test_hydrate_row_is_hydrate_by_chunk_row(guide):
    """Rows are the traversal index's (``row_of_code``); score and provenance are set on the hit as built."""
    index = guide.reader.traversal_index
    refs = guide.chunks["ref"].tolist()
    assert len(refs) > 1
    for ref in refs:
        row = int(index.row_of_code[index.code[ref]])
        assert guide.reader.hydrate_row(row) == guide.reader.hydrate(ref)
    row = int(index.row_of_code[index.code["chunk:s:c1"]])
    hit = guide.reader.hydrate_row(row, score=0.25, provenance=Provenance(raw_score=0.0, fused_score=0.25))
    assert (hit.chunk_id, hit.score, hit.provenance.fused_score, hit.parent.title) == ("c1", 0.25, 0.25, "Part one")


def test_cost_is_proportional_to_degree(guide):
    """A node's lookup touches its own CSR segment only (indptr bounds equal its degree)."""
    add(guide, *[{"from_ref": "chunk:s:c1", "to_ref": f"entity:e{i}", "type": "mentions"} for i in range(30)])
    index = guide.reader._adjacency
    code = index.code["entity:e7"]
    assert index.indptr[code + 1] - index.indptr[code] == 1
    code = index.code["chunk:s:c1"]
    assert index.indptr[code + 1] - index.indptr[code] == 30


def test_reach_matches_a_breadth_first_search_over_neighbors(guide):
    add(guide,
        {"from_ref": "chunk:s:c1", "to_ref": "entity:a", "type": "mentions"},
        {"from_ref": "chunk:s:c2", "to_ref": "entity:a", "type": "mentions"},
        {"from_ref": "entity:a", "to_ref": "entity:b", "type": "related", "direction": "symmetric"},
        {"from_ref": "entity:b", "to_ref": "entity:c", "type": "related", "direction": "symmetric"},
        {"from_ref": "chunk:t:x", "to_ref": "entity:c", "type": "mentions"})
    reader = guide.reader

    def bfs(seed, depth, types, direction=None):
        seen, frontier, out = {seed}, [seed], []
        for hop in range(1, depth + 1):
            nxt = []
            for node in frontier:
                for n in reader.neighbors(node, types=types, direction=direction):
                    if str(n.ref) not in seen:
                        seen.add(str(n.ref))
                        nxt.append(str(n.ref))
                        out.append((str(n.ref), hop))
            frontier = nxt
        return sorted(out, key=lambda x: (x[1], x[0]))

    for seed in ("chunk:s:c1", "entity:b", "chunk:t:x"):
        for depth in (1, 2, 3):
            for types, direction in ((["mentions", "related"], None), (["related"], None), (["mentions"], "out")):
                got = list(reader.reach(seed, depth=depth, types=types, direction=direction).items())
                assert got == bfs(seed, depth, types, direction), (seed, depth, types, direction)
    assert reader.reach("entity:zzz") == {} and reader.reach("entity:a", depth=0) == {}
    assert reader.reach("entity:a", types=["nope"]) == {}
    with pytest.raises(ParameterError, match="depth"):
        reader.reach("entity:a", depth=-1)
