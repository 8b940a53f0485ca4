"""The traversal against the one it replaced (tests/frontier_previous.py, the code before the latency work) on
random typed, directed graphs: bit-for-bit the same candidates, distances, seed ranks, support, mass, paths,
supports and warnings, so ``expand_relations``' hits, order and scores cannot move. The per-node oracle
(tests/test_frontier.py) stays the reference for what the traversal means; this checks nothing changed."""

from __future__ import annotations

from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import frontier_previous as previous
from crux_nb.graph import frontier
from crux_nb.retrieval.trace import collapse_warnings

from test_frontier import TYPES, build, graphs


def run_both(kb, seeds, *, types, direction, depth, entity_hops, fan_out, max_candidates, weights):
    index = kb.reader.traversal_index
    view = index.view(None if types is None else frozenset(types),
                      None if direction is None else (0 if direction == "out" else 1), fan_out)
    codes = [index.code.get(s) for s in seeds]
    args = dict(depth=depth, entity_hops=entity_hops, max_candidates=max_candidates, weights=weights)
    return frontier.traverse(index, view, codes, engine="numpy", **args), previous.traverse(index, view, codes, **args)


def assert_same(new, old):
    for name in ("codes", "distance", "seed_rank", "support", "mass"):
        assert np.array_equal(getattr(new, name), getattr(old, name)), name  # exact: the same floats
    assert new.warnings == old.warnings
    assert new.collapsed_warnings() == old.collapsed_warnings()
    for i in range(len(new.codes)):
        assert new.path(i) == old.path(i)
        assert new.supports(i) == old.supports(i)


@pytest.mark.parametrize("ratio", [0.0, 1.0, float("inf")])
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graph=graphs(), data=st.data())
def test_traversal_is_bit_for_bit_the_previous_one(ratio, graph, data):
    chunks, parents, entity_refs, edges, nodes = graph
    kb = build(chunks, parents, entity_refs, edges)
    seeds = data.draw(st.lists(st.sampled_from(nodes + ["chunk:missing:c0"]), min_size=1, max_size=5))
    relevance = data.draw(st.booleans())
    with mock.patch.object(frontier._Run, "BACKWARD_RATIO", ratio), \
            mock.patch.object(previous._Run, "BACKWARD_RATIO", ratio):
        new, old = run_both(kb, seeds, types=data.draw(st.sampled_from([None, ["mentions", "related"], list(TYPES)])),
                            direction=data.draw(st.sampled_from([None, "out", "in"])),
                            depth=data.draw(st.integers(1, 3)),
                            entity_hops=data.draw(st.sampled_from(["free", "counted"])),
                            fan_out=data.draw(st.integers(1, 4)), max_candidates=data.draw(st.integers(1, 8)),
                            weights=np.array([1.0 / (r + 1) for r in range(len(seeds))]) if relevance else None)
    assert_same(new, old)


def test_the_comparison_can_fail():
    """A traversal that differs (a lower candidate ceiling) is caught."""
    chunks = [("s", f"c{i}", i, "t") for i in range(5)]
    kb = build(chunks, [], ["entity:a"], [(f"chunk:s:c{i}", "entity:a", "mentions", "directed") for i in range(5)])
    index = kb.reader.traversal_index
    view = index.view(None, None, 64)
    args = dict(depth=2, entity_hops="counted", weights=np.array([1.0]))
    new = frontier.traverse(index, view, [index.code["chunk:s:c0"]], max_candidates=2, engine="numpy", **args)
    old = previous.traverse(index, view, [index.code["chunk:s:c0"]], max_candidates=3, **args)
    with pytest.raises(AssertionError):
        assert_same(new, old)


def test_warning_collapse_keeps_the_previous_output():
    """The shortcut for warnings that do not repeat returns what the counting collapse returns."""
    for warnings in (["a", "b", "c"], ["a", "b", "a", "a"], [], ["x"] * 3, ["b", "a"]):
        assert collapse_warnings(iter(warnings)) == previous.collapse_warnings(warnings)
        assert collapse_warnings(warnings) == previous.collapse_warnings(warnings)
