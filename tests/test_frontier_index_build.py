"""The vectorised ``TraversalIndex`` build against the per-node one it replaced (tests/frontier_index_previous.py):
every array identical, element for element and dtype for dtype, and the views cut from them equal, on real
knowledge bases (the sample with entities, edited and edge-added ones) and on random structural frames with the
shapes the store should never produce but the old build accepted (repeated rows, sections gone, interleaved
sources, tied ordinals, escaped and non-ASCII ids)."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

import crux_nb
import frontier_index_previous as previous
from crux_nb.graph.adjacency import AdjacencyIndex
from crux_nb.graph.build import build_with_adjacency
from crux_nb.graph.frontier_index import HUB_SHARE, TraversalIndex
from crux_nb.refs import ChunkRef, encode_ref
from crux_nb.testing import make_kb

ARRAYS = ("refs", "kind", "chunk_code", "row_of_code", "node", "peer", "etype", "direction", "indptr")


ADJACENCY_ARRAYS = ("ref_array", "indptr", "peer", "direction", "edge_row", "etype")


def assert_same_index(state, adjacency):
    """The index built from ``adjacency`` (refs looked up), and the one built with its own adjacency from one
    factorisation of every ref (``build_with_adjacency``, what a reader builds first), against the old build."""
    new, old = TraversalIndex(state, adjacency), previous.TraversalIndex(state, adjacency)
    together, own_adjacency = build_with_adjacency(state)
    for name in ADJACENCY_ARRAYS:
        a, b = getattr(own_adjacency, name), getattr(adjacency, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert own_adjacency.type_names == adjacency.type_names
    assert all(type(r) is str for r in own_adjacency.ref_array.tolist())
    for index in (new, together):
        _assert_same_arrays(index, old)
    return new


def _assert_same_arrays(new, old):
    for name in ARRAYS:
        a, b = getattr(new, name), getattr(old, name)
        assert a.dtype == b.dtype and np.array_equal(a, b), name
    assert new.code == old.code and list(new.code) == list(old.code)
    probes = list(old.code) + ["", "chunk", "chunk:", "entity:e3", "\uffff", "document:zz"]
    assert new.codes_of(probes) == [old.code.get(r) for r in probes]
    assert new.type_names == old.type_names
    for key in [(None, None, 64, None), (frozenset({"hierarchy"}), 0, 3, None), (None, 1, 2, HUB_SHARE)]:
        a, b = new.view(*key), old.view(*key)
        for name in ("indptr", "peer", "etype", "truncated", "spec", "df", "owner", "degree"):
            assert np.array_equal(getattr(a, name), getattr(b, name)), (key, name)
        assert all(np.array_equal(a.cost[r], b.cost[r]) for r in b.cost) and a.hubs == b.hubs


def check_kb(kb):
    reader = kb.reader
    return assert_same_index(reader._state, reader._adjacency)


def test_sample_with_entities_is_identical():
    kb = crux_nb.datasets.load_sample()
    kb.extract_entities(progress=False)
    index = check_kb(kb)
    assert len(index.node) > len(index.refs)  # the sample has structure and edges to compare


def test_sections_single_chunk_documents_unicode_and_custom_edges():
    chunks = [("guide:v1", "intro%1", 0, "Intro.", "top"), ("guide:v1", "use", 1, "Use.", "top"),
              ("guide:v1", "loose", 2, "Loose.", None), ("guide:v1", "tail", 3, "Tail.", "gone"),
              ("ñandú.md", "ç0", 5, "Único.", "sección"), ("ñandú.md", "ç1", 5, "Dos.", None),
              ("solo", "only", 0, "One chunk.")]
    parents = [("guide:v1", "top", 0, "Top"), ("ñandú.md", "sección", 7, "Sección"), ("empty", "hollow", 0)]
    kb = make_kb(chunks=chunks, parents=parents)
    check_kb(kb)
    first, second = (encode_ref(ChunkRef(*c[:2])) for c in chunks[:2])
    kb.add_entities(pd.DataFrame({"entity_id": ["ünï", "b:c"], "canonical_name": ["Ünï", "BC"]}))
    kb.add_edges(pd.DataFrame([
        {"from_ref": first, "to_ref": "entity:ünï", "type": "zz-custom", "direction": "directed", "evidence": [first]},
        {"from_ref": "entity:ünï", "to_ref": "entity:b%3Ac", "type": "Alpha", "direction": "symmetric",
         "evidence": [second]},
        {"from_ref": second, "to_ref": first, "type": "hier", "direction": "directed", "evidence": [second]},
        {"from_ref": "document:solo", "to_ref": "parent:guide%3Av1:top", "type": "sequences",
         "direction": "symmetric", "evidence": [first]}]))
    index = check_kb(kb)
    assert "zz-custom" in index.type_names


def test_text_sources_and_edits():
    kb = crux_nb.knowledge_base(id="edits")
    text = "# One\n\n" + "First part, long enough. " * 4 + "\n\n## Two\n\n" + "Second part. " * 9 + "\n\nThird."
    kb.add_text("a", text, format="markdown", chunk_size=50)
    kb.add_text("b", "A single line.", format="text")
    kb.add_text("c", "# Heading only", format="markdown")  # a section with no chunk under it, if any
    check_kb(kb)
    kb.remove("b")
    check_kb(kb)


def test_empty_knowledge_base():
    index = check_kb(crux_nb.knowledge_base(id="none"))
    assert len(index.refs) == 0


def _random_state(rng):
    sources = ["s:1", "s%2", "ß", "a", "b\u00e9", "zz"]
    rows = []
    for _ in range(int(rng.integers(0, 40))):
        s = sources[int(rng.integers(len(sources)))]
        parent = [None, "p", "q:1", "gone", "ü"][int(rng.integers(5))]
        rows.append({"ref": encode_ref(ChunkRef(s, f"c{int(rng.integers(6))}")), "source_id": s,
                     "parent_id": parent, "ordinal": int(rng.integers(-1, 2))})
    chunks = pd.DataFrame(rows, columns=["ref", "source_id", "parent_id", "ordinal"])
    order = int(rng.integers(3))  # the store's order, sources grouped in any order, or sources interleaved
    if order < 2:
        chunks = chunks.sort_values(["source_id", "ordinal", "ref"][: 3 - 2 * order], kind="stable")
    parents = pd.DataFrame([{"source_id": sources[int(rng.integers(len(sources)))],
                             "parent_id": ["p", "q:1", "ü", "x"][int(rng.integers(4))], "ordinal": int(rng.integers(4))}
                            for _ in range(int(rng.integers(0, 8)))], columns=["source_id", "parent_id", "ordinal"])
    docs = pd.DataFrame({"source_id": list(rng.permutation(sources + sources[:2]))})  # two documents repeated
    frames = [f.reset_index(drop=True).astype({c: "int64" if c == "ordinal" else "str" for c in f.columns})
              for f in (chunks, parents, docs)]
    return SimpleNamespace(chunks=frames[0], parents=frames[1], documents=frames[2])


def _adjacency(state, rng):
    # and refs no store writes, whose kind only the text before the first ':' tells
    nodes = state.chunks["ref"].tolist() + ["entity:e1", "entity:e2", "document:a", "chunk", "chunk-x:1", "chunk;",
                                            "entity", "entityz", "chunk:", "Entity:e"]
    n = int(rng.integers(0, 12))
    edges = pd.DataFrame({"edge_id": [f"e{i:03d}" for i in range(n)],
                          "from_ref": [nodes[int(rng.integers(len(nodes)))] for _ in range(n)],
                          "to_ref": [nodes[int(rng.integers(len(nodes)))] for _ in range(n)],
                          "type": [["mentions", "hierarchy", "b"][int(rng.integers(3))] for _ in range(n)],
                          "direction": [["directed", "symmetric"][int(rng.integers(2))] for _ in range(n)]})
    evidence = pd.DataFrame({"edge_id": pd.Series([], dtype="str"), "source_id": pd.Series([], dtype="str"),
                             "chunk_ref": pd.Series([], dtype="str"), "provenance": pd.Series([], dtype="str")})
    adjacency = AdjacencyIndex(edges.astype("str"), evidence)
    state.edges, state.edge_evidence = edges.astype("str"), evidence  # what build_with_adjacency reads
    assert adjacency.refs == sorted(set(edges["from_ref"]) | set(edges["to_ref"]))
    assert all(type(r) is str for r in adjacency.ref_array)
    return adjacency


@pytest.mark.parametrize("seed", range(60))
def test_random_structural_frames_are_identical(seed):
    rng = np.random.default_rng(seed)
    state = _random_state(rng)
    assert_same_index(state, _adjacency(state, rng))


def test_a_missing_document_fails_as_before():
    state = _random_state(np.random.default_rng(3))
    state = SimpleNamespace(chunks=state.chunks, parents=state.parents.iloc[:0],
                            documents=state.documents.iloc[:0])
    if len(state.chunks):
        for build in (TraversalIndex, previous.TraversalIndex):
            with pytest.raises(KeyError):
                build(state, _adjacency(state, np.random.default_rng(0)))
        with pytest.raises(KeyError):
            build_with_adjacency(state)


@pytest.mark.parametrize("seed", range(10))
def test_stable_order_is_numpys_stable_argsort(seed):
    from crux_nb.graph.structure import stable_order

    rng = np.random.default_rng(seed)
    upper = int(rng.choice([1, 2, 300, 2**16, 2**16 + 1, 2**33]))
    values = rng.integers(0, upper, size=int(rng.integers(0, 3000)))
    assert stable_order(values, upper).tolist() == np.argsort(values, kind="stable").tolist()


@pytest.mark.parametrize("seed", range(10))
def test_a_views_incoming_lists_are_its_entries_by_peer_in_entry_order(seed):
    rng = np.random.default_rng(seed)
    state = _random_state(rng)
    _adjacency(state, rng)  # gives the state edges
    index, _ = build_with_adjacency(state)
    view = index.view(None, None, 3)
    indptr, by_peer = view.transposed()
    assert by_peer.tolist() == np.argsort(view.peer, kind="stable").tolist()
    assert indptr.tolist() == [0] + np.cumsum(np.bincount(view.peer, minlength=len(index.refs))).tolist()


@pytest.mark.parametrize("seed", range(12))
def test_adjacency_entries_are_in_upstream_order(seed):
    """Each node's entries by (peer ref, type, edge row, direction), from a plain sort of every entry: with and
    without symmetric edges (without, the entries are made already in edge-row order and only the key is sorted)."""
    rng = np.random.default_rng(seed)
    nodes = ["chunk:a:c1", "chunk:a:c2", "entity:é", "entity:b", "document:a"]
    n = int(rng.integers(1, 30))
    symmetric = ["directed", "symmetric"] if seed % 2 else ["directed"]
    edges = pd.DataFrame({"edge_id": [f"e{i:03d}" for i in range(n)],
                          "from_ref": [nodes[int(rng.integers(len(nodes)))] for _ in range(n)],
                          "to_ref": [nodes[int(rng.integers(len(nodes)))] for _ in range(n)],
                          "type": [["mentions", "b", "zz"][int(rng.integers(3))] for _ in range(n)],
                          "direction": [symmetric[int(rng.integers(len(symmetric)))] for _ in range(n)]})
    edges = edges.astype("str")
    adjacency = AdjacencyIndex(edges, None)
    entries = []
    for row, (a, b, t, d) in enumerate(zip(edges["from_ref"], edges["to_ref"], edges["type"], edges["direction"])):
        entries += [(a, b, t, row, 0), (b, a, t, row, 1)]
        entries += [(b, a, t, row, 0), (a, b, t, row, 1)] if d == "symmetric" else []
    entries.sort()
    refs = adjacency.refs
    got = [(refs[node], refs[p], adjacency.type_names[t], r, d) for node in range(len(refs))
           for p, t, r, d in zip(*(a[adjacency.indptr[node]:adjacency.indptr[node + 1]].tolist()
                                   for a in (adjacency.peer, adjacency.etype, adjacency.edge_row, adjacency.direction)))]
    assert got == entries
