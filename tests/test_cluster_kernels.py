"""The fast kernels under cluster() agree with the plain numpy / igraph operations they replace."""

import random

import igraph as ig
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crux_nb.community import leaves as L


def _canonical_by_unique(labels):
    _, first, inverse = np.unique(labels, return_index=True, return_inverse=True)
    rank = np.empty(len(first), dtype=np.int64)
    rank[np.argsort(first, kind="stable")] = np.arange(len(first))
    return rank[inverse]


@settings(max_examples=60, deadline=None)
@given(st.lists(st.integers(0, 40), min_size=1, max_size=200))
def test_canonical_is_first_occurrence_order(values):
    labels = np.asarray(values, dtype=np.int64)
    assert L.canonical(labels).tolist() == _canonical_by_unique(labels).tolist()


@pytest.mark.parametrize("k", [5, 300])  # dense table (k*k small) and the sorted path
def test_group_links_sums_cross_links_in_sorted_pair_order(k):
    rng = np.random.default_rng(k)
    n, m = 400, 3000
    labels = rng.integers(0, k, n)
    src, dst = rng.integers(0, n, m), rng.integers(0, n, m)
    weight = rng.random(m)
    a, b, w = L.group_links(labels, src, dst, weight, k)
    expected: dict[tuple[int, int], float] = {}
    for x, y, v in zip(labels[src].tolist(), labels[dst].tolist(), weight.tolist()):
        if x != y:
            key = (min(x, y), max(x, y))
            expected[key] = expected.get(key, 0.0) + v
    assert list(zip(a.tolist(), b.tolist())) == sorted(expected)
    assert np.allclose(w, [expected[key] for key in sorted(expected)])


def test_runs_equal_np_split():
    keys = np.asarray([0, 0, 1, 3, 3, 3, 7])
    order = np.arange(10, 17)
    got = L.runs(order, keys)
    want = np.split(order, np.flatnonzero(np.diff(keys)) + 1)
    assert [g.tolist() for g in got] == [w.tolist() for w in want]
    assert [g.tolist() for g in L.runs(order[:0], keys[:0])] == [[]]


def test_subgraph_from_links_is_induced_subgraph_edge_for_edge():
    """The splitter builds each subgraph from its links, ordered (dst, src): exactly what igraph's
    induced_subgraph gives, so Leiden sees the same graph (and returns the same leaves)."""
    rng = np.random.default_rng(3)
    n = 300
    keys = np.unique(rng.integers(0, n, 2000) * n + rng.integers(0, n, 2000))
    src, dst = keys // n, keys % n
    keep = src < dst
    src, dst, weight = src[keep], dst[keep], rng.random(int(keep.sum()))
    whole = L.graph_of(n, src, dst, weight)
    members = np.sort(rng.choice(n, 120, replace=False))
    rank = np.full(n, -1)
    rank[members] = np.arange(len(members))
    inner = (rank[src] >= 0) & (rank[dst] >= 0)
    s, d, w = rank[src[inner]], rank[dst[inner]], weight[inner]
    order = np.lexsort((s, d))
    ours = L.bare_graph(len(members), s[order], d[order])
    theirs = whole.induced_subgraph(members.tolist())
    assert ours.get_edgelist() == theirs.get_edgelist()
    assert w[order].tolist() == theirs.es["weight"]
    with L.seeded(0):
        a = L.leiden(ours, 1.0, 5, weights=w[order].tolist())
    b = L.leiden(theirs, 1.0, 5)
    assert a.tolist() == b.tolist()


def test_leiden_inside_one_seeded_block_equals_fresh_seeding_and_restores_random():
    g = ig.Graph.Erdos_Renyi(n=200, m=800)
    g.es["weight"] = [1.0 + (k % 3) for k in range(g.ecount())]
    fresh = [L.leiden(g, 1.0, seed).tolist() for seed in (0, 1, 0)]
    random.seed(42)
    before = random.random()
    random.seed(42)
    with L.seeded(7):
        reused = [L.leiden(g, 1.0, seed).tolist() for seed in (0, 1, 0)]
    assert reused == fresh
    assert random.random() == before  # the caller's global RNG state is untouched


def test_chunk_flags_sorted_and_unsorted_names():
    names = ("chunk:a:1", "chunk:b:2", "entity:x", "entity:y")
    assert L.chunk_flags(names).tolist() == [True, True, False, False]
    mixed = ("entity:x", "chunk:a:1", "chunkish", "chunk:")
    assert L.chunk_flags(mixed).tolist() == [False, True, False, True]
    assert L.chunk_flags(("chunk;", "chunk:z", "chunk:a")).tolist() == [False, True, True]
