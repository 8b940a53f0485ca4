"""``GraphReader.reach`` / ``reach_arrays`` against a plain breadth-first search over the edge list, on random
skewed graphs: the same nodes, the same distances, the same (distance, ref) order, in the compiled and in the
numpy traversal."""

from __future__ import annotations

import collections

import numpy as np
import pandas as pd
import pytest

import crux_nb
from crux_nb.graph import compiled, frontier_kernel

MODES = ["numpy"] + (["kernel"] if frontier_kernel.installed() else [])


def _graph(seed: int, n_nodes: int = 400, n_edges: int = 1600):
    """A knowledge base of random typed edges (hub-heavy ends, both directions) and the same edges as triples."""
    rng = np.random.default_rng(seed)
    weights = 1.0 / np.arange(1, n_nodes + 1) ** 0.9  # a few hubs, as entity graphs have
    weights = weights[rng.permutation(n_nodes)] / weights.sum()
    a, b = rng.choice(n_nodes, n_edges, p=weights), rng.choice(n_nodes, n_edges, p=weights)
    keep = a != b
    refs = [f"entity:n{i:04d}" for i in range(n_nodes)]
    frame = pd.DataFrame({"from_ref": [refs[i] for i in a[keep]], "to_ref": [refs[i] for i in b[keep]],
                          "type": rng.choice(["mentions", "related", "references"], int(keep.sum())),
                          "direction": rng.choice(["directed", "symmetric"], int(keep.sum()))})
    frame = frame.drop_duplicates(["from_ref", "to_ref", "type"]).reset_index(drop=True)
    kb = crux_nb.knowledge_base(id=f"g{seed}")
    kb.add_text("a.md", "Evidence for every edge.", format="text")
    kb.add_edges(frame.assign(evidence=[["chunk:a.md:c0000"]] * len(frame)))
    return kb, refs, list(frame.itertuples(index=False))


def _bfs(edges, start: str, depth: int, types, direction) -> list[tuple[str, int]]:
    """(ref, hop) by a breadth-first search over (from, to, type, direction) rows, sorted by (hop, ref)."""
    step = collections.defaultdict(set)
    for frm, to, kind, how in edges:
        if types is not None and kind not in types:
            continue
        pairs = [(frm, to), (to, frm)] if how == "symmetric" else [(frm, to)]
        for x, y in pairs:
            if direction in (None, "out"):
                step[x].add(y)
            if direction in (None, "in"):
                step[y].add(x)
    seen, frontier, out = {start}, [start], []
    for hop in range(1, depth + 1):
        nxt = sorted({y for x in frontier for y in step[x]} - seen)
        seen.update(nxt)
        out += [(y, hop) for y in nxt]
        frontier = nxt
    return out


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("seed", [11, 12])
def test_reach_is_a_breadth_first_search(seed, mode, monkeypatch):
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", mode)
    kb, refs, edges = _graph(seed)
    reader = kb.reader
    rng = np.random.default_rng(seed)
    found = 0
    for start in rng.choice(refs, 15, replace=False).tolist():
        for depth in (1, 2, 3):
            for types, direction in ((None, None), (["mentions", "related"], None), (["related"], "out"),
                                     (["references"], "in"), (None, "out")):
                want = _bfs(edges, start, depth, types, direction)
                got = reader.reach(start, depth=depth, types=types, direction=direction)
                assert list(got.items()) == want, (start, depth, types, direction)
                arrays = reader.reach_arrays(start, depth=depth, types=types, direction=direction)
                assert list(zip(arrays.refs.tolist(), arrays.hops.tolist())) == want
                assert arrays.hops.dtype == np.int64
                found += len(want)
    assert found > 10_000  # the walks reach far: the comparison is not between empty results
    if mode == "kernel":
        assert compiled.ready("reach")  # the compiled loop answered, not the numpy fallback


def test_reach_arrays_of_nothing_are_empty():
    kb, refs, _ = _graph(3, n_nodes=20, n_edges=30)
    for args in (("entity:zzz", {}), (refs[0], {"depth": 0}), (refs[0], {"types": ["nope"]})):
        got = kb.reader.reach_arrays(args[0], **args[1])
        assert got.refs.tolist() == [] and got.hops.tolist() == [] and got.hops.dtype == np.int64
        assert kb.reader.reach(args[0], **args[1]) == {}


@pytest.mark.parametrize("mode", MODES)
def test_a_huge_depth_is_a_whole_component(mode, monkeypatch):
    """A depth past the node count walks the whole component (nothing is allocated per hop asked for)."""
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", mode)
    kb, refs, edges = _graph(5, n_nodes=60, n_edges=80)
    for start in refs[:5]:
        want = _bfs(edges, start, 60, None, None)
        assert list(kb.reader.reach(start, depth=10**12).items()) == want
        assert kb.reader.reach_arrays(start, depth=10**12).hops.tolist() == [h for _, h in want]
