"""The vectorised traversal (crux_nb.graph.frontier) against the per-node Python oracle on random typed,
directed graphs: the same candidates in the same discovery order, distances, seed ranks, support, paths,
edge types, warnings and (for the relevance ranking) mass."""

from __future__ import annotations

import math
from unittest import mock

import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crux_nb.graph import frontier, frontier_kernel
from crux_nb.graph.frontier import traverse
from crux_nb.graph.traversal import Traversal
from crux_nb.refs import decode_ref
from crux_nb.testing import make_kb

import expand_oracle

TYPES = ("mentions", "related", "references")


@st.composite
def graphs(draw):
    n_sources = draw(st.integers(1, 3))
    chunks, parents = [], []
    for s in range(n_sources):
        n = draw(st.integers(1, 4))
        sectioned = draw(st.booleans())
        if sectioned:
            parents.append((f"s{s}", "sec", 0))
        chunks += [(f"s{s}", f"c{i}", i, f"text {s} {i}", "sec" if sectioned and i % 2 == 0 else None)
                   for i in range(n)]
    chunk_refs = [f"chunk:{c[0]}:{c[1]}" for c in chunks]
    n_entities = draw(st.integers(0, 5))
    entity_refs = [f"entity:e{i}" for i in range(n_entities)]
    nodes = chunk_refs + entity_refs
    edges = draw(st.lists(st.tuples(st.sampled_from(nodes), st.sampled_from(nodes), st.sampled_from(TYPES),
                                    st.sampled_from(["directed", "symmetric"])), max_size=18))
    edges = [e for e in edges if e[0] != e[1]]
    return chunks, parents, entity_refs, edges, nodes


def build(chunks, parents, entity_refs, edges):
    kb = make_kb(chunks=chunks, parents=parents)
    if entity_refs:
        kb.add_entities(pd.DataFrame({"entity_id": [r.split(":", 1)[1] for r in entity_refs],
                                      "canonical_name": [r.split(":", 1)[1] for r in entity_refs]}))
    if edges:
        evidence = f"chunk:{chunks[0][0]}:{chunks[0][1]}"
        kb.add_edges(pd.DataFrame([{"from_ref": f, "to_ref": t, "type": ty, "direction": d, "evidence": [evidence]}
                                   for f, t, ty, d in edges]))
    return kb


def spec_of(reader, types, direction):
    def spec(encoded):
        chunks = {str(n.ref) for n in reader.neighbors(encoded, types=types, direction=direction)
                  if n.ref.kind == "chunk"}
        return 1.0 / max(len(chunks), 1)
    return spec


#: the engines under test: the compiled one needs numba (the `fast` extra); tests/test_frontier_kernel.py
#: skips (fails in CI) when it is missing
ENGINES = ["numpy"] + (["kernel"] if frontier_kernel.installed() else [])


def compare(kb, seeds, *, types, direction, depth, entity_hops, fan_out, max_candidates, weights=None, floor=None,
            damping=1.0, engine="numpy"):
    reader = kb.reader
    index = reader.traversal_index
    wanted = None if types is None else frozenset(types)
    dcode = None if direction is None else (0 if direction == "out" else 1)
    view = index.view(wanted, dcode, fan_out)
    spec = spec_of(reader, types, direction) if weights is not None else None
    expected, warnings = expand_oracle.traverse(
        reader, [decode_ref(s) for s in seeds], types=types, direction=direction, depth=depth,
        entity_hops=entity_hops, fan_out=fan_out, max_candidates=max_candidates, weights=weights, spec=spec,
        floor=floor, pruned=(pruned := []), damping=damping)
    got = traverse(index, view, [index.code.get(s) for s in seeds], depth=depth, entity_hops=entity_hops,
                   max_candidates=max_candidates, weights=weights, floor=floor, damping=damping, engine=engine)
    assert [index.refs[c] for c in got.codes] == list(expected)
    assert got.warnings == warnings
    assert got.pruned == len(pruned)
    for i, (ref, cand) in enumerate(expected.items()):
        nodes, etypes = got.path(i)
        assert (int(got.distance[i]), int(got.seed_rank[i]), int(got.support[i])) == (
            cand.distance, cand.seed_rank, len(cand.support)), ref
        assert tuple(index.refs[n] for n in nodes) == cand.path, ref
        assert tuple(index.type_names[t] for t in etypes) == cand.edges, ref
        assert [index.refs[s] for s in got.supports(i)] == sorted(cand.support), ref
        if weights is not None:
            assert math.isclose(got.mass[i], cand.mass, rel_tol=1e-9, abs_tol=1e-12), ref
    return expected


settings_ = settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.parametrize("sort_tree", [Traversal.SORT_TREE, 0], ids=["scan", "sorted"])
@pytest.mark.parametrize("engine", ENGINES)
@settings_
@given(graph=graphs(), data=st.data())
def test_vectorised_traversal_matches_the_python_oracle(engine, sort_tree, graph, data):
    """Routes are looked up in a seed's tree by a scan (small trees) or in its sorted copy (``sort_tree`` 0: all)."""
    chunks, parents, entity_refs, edges, nodes = graph
    kb = build(chunks, parents, entity_refs, edges)
    seeds = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=4))
    types = data.draw(st.sampled_from([None, ["mentions", "related"], ["sequence", "references"], list(TYPES),
                                       ["hierarchy", "related"]]))
    relevance = data.draw(st.booleans())
    with mock.patch.object(Traversal, "SORT_TREE", sort_tree):
        _compare_drawn(kb, seeds, types, relevance, data, engine)


def _compare_drawn(kb, seeds, types, relevance, data, engine):
    compare(kb, seeds, types=types, direction=data.draw(st.sampled_from([None, "out", "in"])),
            depth=data.draw(st.integers(1, 3)), entity_hops=data.draw(st.sampled_from(["free", "counted"])),
            fan_out=data.draw(st.integers(1, 4)), max_candidates=data.draw(st.integers(1, 8)),
            weights=[1.0 / (r + 1) for r in range(len(seeds))] if relevance else None,
            floor=data.draw(st.sampled_from([None, 0.25, 0.5, 1.0])) if relevance else None,
            damping=data.draw(st.sampled_from([1.0, 0.5, 0.01])) if relevance else 1.0, engine=engine)


def test_oracle_comparison_can_fail():
    """A traversal that differs from the oracle (a lower candidate ceiling) is caught."""
    chunks = [("s", f"c{i}", i, "t") for i in range(4)]
    kb = build(chunks, [], [], [("chunk:s:c0", "chunk:s:c2", "related", "directed")])
    assert list(compare(kb, ["chunk:s:c0"], types=None, direction=None, depth=2, entity_hops="free", fan_out=64,
                        max_candidates=512)) == ["document:s", "chunk:s:c1", "chunk:s:c2", "chunk:s:c3"]
    reader = kb.reader
    index = reader.traversal_index
    got = traverse(index, index.view(None, None, 64), [index.code["chunk:s:c0"]], depth=2, entity_hops="free",
                   max_candidates=2)
    assert [index.refs[c] for c in got.codes] == ["document:s", "chunk:s:c1"]
    assert got.warnings == ["expand_relations truncated graph candidates at 2."]


@pytest.mark.parametrize("ratio", [0.0, float("inf")])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), data=st.data())
def test_terminal_generations_match_the_oracle_both_ways(ratio, graph, data):
    """Past the candidate ceiling a terminal generation reads either its own entries (ratio 0) or the
    candidates' incoming entries (ratio inf): both give the oracle's candidates, support and mass."""
    chunks, parents, entity_refs, edges, nodes = graph
    kb = build(chunks, parents, entity_refs, edges)
    seeds = data.draw(st.lists(st.sampled_from(nodes), min_size=1, max_size=4))
    with mock.patch.object(frontier._Run, "BACKWARD_RATIO", ratio):  # the numpy traversal's settlement
        compare(kb, seeds, types=data.draw(st.sampled_from([None, list(TYPES)])), direction=None,
                depth=data.draw(st.integers(1, 3)), entity_hops="counted", fan_out=data.draw(st.integers(1, 4)),
                max_candidates=data.draw(st.integers(1, 4)), weights=[1.0 / (r + 1) for r in range(len(seeds))],
                floor=data.draw(st.sampled_from([None, 0.5])), damping=data.draw(st.sampled_from([1.0, 0.25])))


def test_floor_prunes_reads_reached_through_a_hub():
    """Seed c0 mentions hub h (4 chunks, a read returns 2): c1 reached through h holds 1/4 of the seed's
    weight, under the floor 1/2, so it is not read and c4 (through c1's entity x) is not reached; without
    a floor it is. Both as the oracle has them."""
    chunks = [("s", f"c{i}", i, "t") for i in range(5)]
    edges = [(f"chunk:s:c{i}", "entity:h", "mentions", "directed") for i in range(4)]
    edges += [("chunk:s:c1", "entity:x", "mentions", "directed"), ("chunk:s:c4", "entity:x", "mentions", "directed")]
    kb = build(chunks, [], ["entity:h", "entity:x"], edges)
    args = dict(types=["mentions"], direction=None, depth=2, entity_hops="counted", fan_out=2, max_candidates=64,
                weights=[1.0])
    pruned = compare(kb, ["chunk:s:c0"], floor=0.5, **args)
    full = compare(kb, ["chunk:s:c0"], floor=None, **args)
    assert "chunk:s:c1" in pruned and "chunk:s:c4" not in pruned and "entity:x" not in pruned
    assert "chunk:s:c4" in full and math.isclose(full["chunk:s:c4"].mass, 0.25 * 0.5)
    damped = compare(kb, ["chunk:s:c0"], floor=None, damping=0.5, **args)  # c4's hop is the second
    assert math.isclose(damped["chunk:s:c4"].mass, 0.25 * 0.5 * 0.5)
    # c1: 1/4 on its first hop, undamped, and 1/8 back from x on a second hop, damped
    assert math.isclose(full["chunk:s:c1"].mass, 0.25 + 0.125)
    assert math.isclose(damped["chunk:s:c1"].mass, 0.25 + 0.125 * 0.5)
    index = kb.reader.traversal_index
    got = traverse(index, index.view(frozenset(["mentions"]), None, 2), [index.code["chunk:s:c0"]], depth=2,
                   entity_hops="counted", max_candidates=64, weights=[1.0], floor=0.5, engine="numpy")
    assert got.pruned == 1


def test_terminal_shortcut_runs_and_keeps_results():
    """A chunk mentioning entities, each mentioned by other chunks: depth 1 counted, ceiling 1. The seed's
    second generation (entities at distance 0 read, every entry landing at depth 1) is terminal and
    comes after the ceiling; the results are the oracle's and the shortcut ran."""
    chunks = [("s", f"c{i}", i, "t") for i in range(6)]
    entity_refs = ["entity:a", "entity:b"]
    edges = [(f"chunk:s:c{i}", e, "mentions", "directed") for i in range(6) for e in entity_refs]
    kb = build(chunks, [], entity_refs, edges)
    calls = []
    original = frontier._Run.terminal

    def spy(self, *args):
        calls.append(1)
        return original(self, *args)

    with mock.patch.object(frontier._Run, "terminal", spy):
        expected = compare(kb, ["chunk:s:c0"], types=["mentions"], direction=None, depth=1, entity_hops="counted",
                           fan_out=64, max_candidates=1, weights=[1.0])
    assert calls and list(expected) == ["entity:a"] and math.isclose(expected["entity:a"].mass, 1.0)
