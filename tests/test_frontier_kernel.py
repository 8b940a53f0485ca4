"""The compiled traversal (crux_nb.graph.frontier_kernel, numba: the `fast` extra) against the numpy one, bit for
bit: candidates, distances, seed ranks, support, mass, paths, supports, warnings and pruned reads, on random
typed, directed graphs (small ones from hypothesis, larger ones with hubs that hit every ceiling), and the
hits ``expand_relations`` returns with each engine. Without numba these skip (in CI they fail)."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from crux_nb import expand_relations, retrieve
from crux_nb.graph import frontier, frontier_kernel
from crux_nb.testing import make_kb, require_system

from test_frontier import TYPES, build, graphs
from test_frontier_previous import assert_same

# without numba: skipped on a user's machine; in CI (CRUX_REQUIRE_SYSTEM=1) they run and fail
needs_numba = pytest.mark.skipif(not frontier_kernel.installed() and os.environ.get("CRUX_REQUIRE_SYSTEM") != "1",
                                 reason="numba is not installed (pip install 'crux_nb[fast]')")


def both(kb, seeds, *, types, direction, fan_out, **args):
    index = kb.reader.traversal_index
    view = index.view(None if types is None else frozenset(types),
                      None if direction is None else (0 if direction == "out" else 1), fan_out)
    codes = [index.code.get(s) for s in seeds]
    return (frontier.traverse(index, view, codes, engine="kernel", **args),
            frontier.traverse(index, view, codes, engine="numpy", **args))


def assert_identical(kernel, numpy):
    assert_same(kernel, numpy)
    assert kernel.pruned == numpy.pruned
    assert np.array_equal(kernel._tokens, numpy._tokens)


def test_numba_is_installed():
    require_system(frontier_kernel.installed(), "numba is not installed (pip install 'crux_nb[fast]')")
    assert frontier_kernel.available() or os.environ.get("CRUX_NB_TRAVERSAL") == "numpy"


@needs_numba
@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), data=st.data())
def test_kernel_is_bit_for_bit_the_numpy_traversal(graph, data):
    chunks, parents, entity_refs, edges, nodes = graph
    kb = build(chunks, parents, entity_refs, edges)
    seeds = data.draw(st.lists(st.sampled_from(nodes + ["chunk:missing:c0"]), min_size=1, max_size=5))
    relevance = data.draw(st.booleans())
    kernel, numpy = both(
        kb, seeds, types=data.draw(st.sampled_from([None, ["mentions", "related"], list(TYPES)])),
        direction=data.draw(st.sampled_from([None, "out", "in"])), fan_out=data.draw(st.integers(1, 4)),
        depth=data.draw(st.integers(1, 3)), entity_hops=data.draw(st.sampled_from(["free", "counted"])),
        max_candidates=data.draw(st.integers(1, 8)),
        weights=np.array([1.0 / (r + 1) for r in range(len(seeds))]) if relevance else None,
        floor=data.draw(st.sampled_from([None, 0.25, 0.5, 1.0])) if relevance else None,
        damping=data.draw(st.sampled_from([1.0, 0.5, 0.01])) if relevance else 1.0)
    assert_identical(kernel, numpy)


def hub_graph(seed: int, n_chunks=240, n_entities=60):
    """Chunks in a few sources mentioning Zipf-popular entities (hubs past the fan-out), plus related edges."""
    rng = np.random.default_rng(seed)
    chunks = [(f"s{i % 6}", f"c{i}", i // 6, f"text {i}") for i in range(n_chunks)]
    popularity = 1.0 / np.arange(1, n_entities + 1)
    rows = []
    for i in range(n_chunks):
        for e in rng.choice(n_entities, size=3, replace=False, p=popularity / popularity.sum()):
            rows.append((f"chunk:s{i % 6}:c{i}", f"entity:e{e}", "mentions", "directed"))
    for a, b in rng.integers(0, n_chunks, size=(80, 2)):
        if a != b:
            rows.append((f"chunk:s{a % 6}:c{a}", f"chunk:s{b % 6}:c{b}", "related", "symmetric"))
    kb = make_kb(chunks=chunks)
    kb.add_entities(pd.DataFrame({"entity_id": [f"e{i}" for i in range(n_entities)],
                                  "canonical_name": [f"e{i}" for i in range(n_entities)]}))
    kb.add_edges(pd.DataFrame([{"from_ref": f, "to_ref": t, "type": ty, "direction": d,
                                "evidence": ["chunk:s0:c0"]} for f, t, ty, d in rows]))
    return kb, [f"chunk:s{i % 6}:c{i}" for i in rng.choice(n_chunks, size=10, replace=False)]


@needs_numba
@pytest.mark.parametrize("graph_seed", [0, 1])
@pytest.mark.parametrize("depth, max_candidates, fan_out", [(1, 16, 8), (2, 40, 8), (2, 512, 64), (3, 64, 4)])
@pytest.mark.parametrize("ranking", ["relevance", "upstream"])
def test_kernel_matches_on_graphs_with_hubs(graph_seed, depth, max_candidates, fan_out, ranking):
    """Ten seeds over hubs: the ceiling is hit early, later seeds run terminal generations past it, the floor
    prunes (relevance) and free hops flood (upstream), as in the latency bench, only smaller."""
    kb, seeds = hub_graph(graph_seed)
    relevance = ranking == "relevance"
    kernel, numpy = both(kb, seeds, types=list(TYPES), direction=None, fan_out=fan_out, depth=depth,
                         entity_hops="counted" if relevance else "free", max_candidates=max_candidates,
                         weights=1.0 / (np.arange(10) + 1.0) if relevance else None,
                         floor=1 / fan_out if relevance else None, damping=0.01 if relevance else 1.0)
    assert len(kernel.codes) > 0
    assert_identical(kernel, numpy)


@needs_numba
def test_the_kernel_comparison_can_fail():
    """A different traversal (another damping) is caught by the comparison."""
    kb, seeds = hub_graph(0)
    index = kb.reader.traversal_index
    view = index.view(frozenset(TYPES), None, 8)
    args = dict(depth=2, entity_hops="counted", max_candidates=64, weights=1.0 / (np.arange(10) + 1.0))
    codes = [index.code[s] for s in seeds]
    kernel = frontier.traverse(index, view, codes, engine="kernel", damping=0.5, **args)
    numpy = frontier.traverse(index, view, codes, engine="numpy", damping=0.01, **args)
    with pytest.raises(AssertionError):
        assert_identical(kernel, numpy)


@needs_numba
@pytest.mark.parametrize("ranking", ["relevance", "upstream"])
def test_expand_relations_returns_the_same_hits_with_either_engine(sample_kb, monkeypatch, ranking):
    recipe = sample_kb.recipe(steps=[retrieve(limit=5), expand_relations(depth=2, limit=5, ranking=ranking)])
    query = "Who owns the Ingest Gateway?"
    kernel = recipe.retrieve(query)
    monkeypatch.setenv("CRUX_NB_TRAVERSAL", "numpy")
    assert not frontier_kernel.available()
    numpy = recipe.retrieve(query)
    assert len(kernel) > 5
    assert [(str(h.ref), h.score, h.provenance.graph) for h in kernel] == \
        [(str(h.ref), h.score, h.provenance.graph) for h in numpy]


def test_engine_is_checked():
    kb, seeds = hub_graph(0, n_chunks=12, n_entities=4)
    index = kb.reader.traversal_index
    with pytest.raises(ValueError, match="engine must be one of"):
        frontier.traverse(index, index.view(None, None, 8), [index.code[seeds[0]]], depth=1, entity_hops="counted",
                          max_candidates=8, engine="gpu")
