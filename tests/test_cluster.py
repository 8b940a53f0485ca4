import random

import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crux_nb.community.cluster import cluster
from crux_nb.community.graph_input import CommunityGraph, build_graph
from crux_nb.errors import InputError
from crux_nb.testing import make_kb


def planted(n_groups=4, per_group=6, chunk_chars=900, seed=0, shuffle=False):
    """Chunks that mention their group's entities; groups barely touch."""
    rng = random.Random(seed)
    chunks, edges = [], []
    for g in range(n_groups):
        for k in range(per_group):
            cid = f"g{g}-{k}"
            chunks.append((f"src{g}", cid, k, "x" * chunk_chars))
            for e in rng.sample(range(4), 2):
                edges.append({"from_ref": f"chunk:src{g}:{cid}", "to_ref": f"entity:e{g}-{e}", "type": "mentions",
                              "evidence": [f"chunk:src{g}:{cid}"]})
    edges.append({"from_ref": "chunk:src0:g0-0", "to_ref": "entity:e1-0", "type": "mentions", "evidence": ["chunk:src0:g0-0"]})
    if shuffle:
        rng.shuffle(chunks)
        rng.shuffle(edges)
    kb = make_kb(chunks=chunks)
    kb.add_edges(pd.DataFrame(edges))
    return kb


def leaves(communities):
    return [c for c in communities if not c.child_ids]


def check_invariants(graph: CommunityGraph, communities, budget=24_000, max_children=8):
    check_shape(communities, max_children)
    assert sum(c.kind == "root" for c in communities) == 1
    assert communities[0].kind == "root" and communities[0].parent_id is None
    chunks = [r for c in leaves(communities) for r in c.chunk_refs]
    assert sorted(chunks) == sorted(n for n in graph.nodes if n.startswith("chunk:"))  # each chunk in exactly one leaf
    by_id = {c.community_id: c for c in communities}
    assert len(by_id) == len(communities)
    for c in communities:
        if c.child_ids:
            assert c.level == 1 + max(by_id[k].level for k in c.child_ids)
            assert all(by_id[k].parent_id == c.community_id for k in c.child_ids)
            assert set(c.chunk_refs) == {r for k in c.child_ids for r in by_id[k].chunk_refs}
        else:
            assert c.level == 0 and (c.estimated_chars <= budget or len(c.chunk_refs) == 1)
        if c.parent_id is not None:
            assert c.community_id in by_id[c.parent_id].child_ids


def check_shape(communities, max_children=8):
    """Every parent has 2..max_children children and no parent child holds more than half of its chunks."""
    by_id = {c.community_id: c for c in communities}
    for c in communities:
        if not c.child_ids:
            continue
        assert 2 <= len(c.child_ids) <= max_children, (c.community_id, len(c.child_ids))
        for k in c.child_ids:
            child = by_id[k]
            if child.child_ids and max_children >= 3:  # with 2 children per parent, halves cannot always be even
                assert len(child.chunk_refs) <= len(c.chunk_refs) / 2, (c.community_id, k)


def test_planted_groups_are_found_and_invariants_hold():
    kb = planted()
    graph = build_graph(kb.state)
    communities = cluster(graph)
    check_invariants(graph, communities)
    groups = sorted({r.split(":")[1] for r in c.chunk_refs} for c in leaves(communities))
    assert groups == [{"src0"}, {"src1"}, {"src2"}, {"src3"}]


def test_budget_splits_big_communities_into_parents():
    kb = planted(n_groups=2, per_group=20, chunk_chars=2000)
    graph = build_graph(kb.state)
    communities = cluster(graph, budget=12_000)
    check_invariants(graph, communities, budget=12_000)
    assert max(c.level for c in communities) >= 2
    assert all(c.estimated_chars <= 12_000 for c in leaves(communities))


def test_same_input_same_seed_same_ids_whatever_the_row_order():
    one = cluster(build_graph(planted(seed=3).state), seed=7)
    two = cluster(build_graph(planted(seed=3, shuffle=True).state), seed=7)
    assert one == two
    assert [c.community_id for c in one] == [c.community_id for c in cluster(build_graph(planted(seed=3).state), seed=7)]


def test_residual_chunks_and_empty_input():
    kb = make_kb(chunks=[("s", f"c{i}", i, "text " * 50) for i in range(5)])
    graph = build_graph(kb.state)
    communities = cluster(graph)
    check_invariants(graph, communities)
    assert cluster(build_graph(make_kb(chunks=[]).state)) == []


def test_a_single_chunk_over_budget_is_a_clear_error():
    kb = make_kb(chunks=[("s", "huge", 0, "x" * 30_000), ("s", "small", 1, "y")])
    with pytest.raises(InputError, match="exceeds the input budget"):
        cluster(build_graph(kb.state))


@settings(max_examples=25, deadline=None)
@given(n_groups=st.integers(1, 5), per_group=st.integers(1, 8), chars=st.integers(100, 9000),
       seed=st.integers(0, 1000), budget=st.sampled_from([9_000, 24_000]))
def test_invariants_property(n_groups, per_group, chars, seed, budget):
    kb = planted(n_groups=n_groups, per_group=per_group, chunk_chars=chars, seed=seed)
    graph = build_graph(kb.state)
    communities = cluster(graph, seed=seed, budget=budget)
    check_invariants(graph, communities, budget=budget)


@pytest.mark.parametrize("max_children", [2, 3, 8])
def test_tree_shape_on_many_leaves(max_children):
    """Budget splits and many groups still give 2..max_children children, each level coarser."""
    kb = planted(n_groups=12, per_group=10, chunk_chars=2500, seed=1)
    graph = build_graph(kb.state)
    communities = cluster(graph, budget=9_000, max_children=max_children)
    check_invariants(graph, communities, budget=9_000, max_children=max_children)
    per_level = {}
    for c in communities:
        per_level[c.level] = per_level.get(c.level, 0) + 1
    assert len(leaves(communities)) > max_children and max(per_level) >= 2
    if max_children == 2:  # a binary tree over n leaves has n - 1 parents
        assert len(communities) == 2 * len(leaves(communities)) - 1


def test_ids_hash_the_sorted_members_and_level_even_for_odd_names():
    """cluster() assembles the id JSON itself; it must equal stable_hash({"members": ..., "level": ...})."""
    from crux_nb._hashing import stable_hash

    names = sorted(["chunk:a:1", 'chunk:a:"2","x"', "chunk:b:é\\", "entity:\u2028x", 'entity:y\\","z', "entity:w"])
    links = tuple(sorted((i, j, 1.0 + (i + j) % 3) for i in range(len(names)) for j in range(i + 1, len(names))
                         if (i + j) % 2))
    graph = CommunityGraph(nodes=tuple(names), links=links, sizes=tuple([9_000] * len(names)),
                           chunk_count=sum(n.startswith("chunk:") for n in names))
    communities = cluster(graph, budget=20_000)
    assert len(communities) > 1
    for c in communities:
        expected = "c-" + stable_hash({"members": sorted(c.chunk_refs + c.entity_refs), "level": c.level}, length=12)
        assert c.community_id == expected
