"""The compiled reach and the background compilation (crux_nb.graph.compiled): same nodes, same order as the
numpy breadth-first reach; the first call never waits for numba."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

from crux_nb.graph import adjacency, compiled, frontier_kernel
from crux_nb.testing import require_system

needs_numba = pytest.mark.skipif(not frontier_kernel.installed() and os.environ.get("CRUX_REQUIRE_SYSTEM") != "1",
                                 reason="numba is not installed")


def _index(seed: int, n_nodes: int = 300, n_edges: int = 1500) -> adjacency.AdjacencyIndex:
    rng = np.random.default_rng(seed)
    a, b = rng.integers(0, n_nodes, n_edges), rng.integers(0, n_nodes, n_edges)
    keep = a != b
    refs = [f"entity:n{i:04d}" for i in range(n_nodes)]
    edges = pd.DataFrame({"edge_id": [f"edge_{i:016x}" for i in range(int(keep.sum()))],
                          "from_ref": [refs[i] for i in a[keep]], "to_ref": [refs[i] for i in b[keep]],
                          "type": rng.choice(["mentions", "related", "references"], int(keep.sum())),
                          "direction": rng.choice(["directed", "symmetric"], int(keep.sum()))})
    evidence = pd.DataFrame({"edge_id": edges["edge_id"], "source_id": "a.md", "chunk_ref": "chunk:a.md:c0000",
                             "provenance": "exact"})
    return adjacency.AdjacencyIndex(edges, evidence)


def _numpy_reach(index, start, depth, types, direction, monkeypatch):
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", "numpy")
    try:
        return index.reach(start, depth=depth, type_codes=types, direction=direction)
    finally:
        monkeypatch.delenv("CRUX_NB_TRAVERSAL")


@needs_numba
@pytest.mark.parametrize("seed", [1, 2, 3])
def test_compiled_reach_gives_the_numpy_nodes_in_the_numpy_order(seed, monkeypatch):
    require_system(frontier_kernel.installed(), "numba is not installed")
    index = _index(seed)
    rng = np.random.default_rng(seed)
    checked = 0
    for start in rng.choice(len(index.refs), 12, replace=False).tolist():
        for depth in (1, 2, 3):
            for types, direction in ((None, None), ({0, 2}, None), ({1}, 0), (None, 1)):
                want = _numpy_reach(index, start, depth, types, direction, monkeypatch)
                monkeypatch.setenv("CRUX_NB_TRAVERSAL", "kernel")
                got = index.reach(start, depth=depth, type_codes=types, direction=direction)
                monkeypatch.delenv("CRUX_NB_TRAVERSAL")
                assert got[0].tolist() == want[0].tolist() and got[1].tolist() == want[1].tolist()
                assert got[2].tolist() == want[2].tolist()  # each hop's end
                checked += len(want[0])
    assert checked > 1000  # the walks reach far: the comparison is not between empty results


@needs_numba
def test_the_first_call_answers_with_numpy_while_the_kernel_compiles(monkeypatch):
    monkeypatch.delenv("CRUX_NB_TRAVERSAL", raising=False)
    index = _index(9)
    want = _numpy_reach(index, 5, 2, None, None, monkeypatch)
    got = index.reach(5, depth=2, type_codes=None, direction=None)  # starts (or finds) the compilation
    assert got[0].tolist() == want[0].tolist()
    assert compiled.wait("reach", timeout=600)
    again = index.reach(5, depth=2, type_codes=None, direction=None)
    assert again[0].tolist() == want[0].tolist() and again[1].tolist() == want[1].tolist()


def test_mode_reads_the_environment(monkeypatch):
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", "numpy")
    assert compiled.mode() == "numpy"
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", "KERNEL")
    assert compiled.mode() == "kernel"
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", "")
    assert compiled.mode() == "auto"
