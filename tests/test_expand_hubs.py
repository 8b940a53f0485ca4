"""Hubs routed out of the relevance ranking on request: with ``hub_share=HUB_SHARE``, an entity named in more than
that share of the chunks passes no path; ``kb.graph_report()`` flags the same entities; by default every entity
routes (issue 31)."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crux_nb.errors import ParameterError
from crux_nb.graph.frontier_index import HUB_MIN_CHUNKS, HUB_SHARE, KIND_ENTITY, hub_mask
from crux_nb.retrieval import expand_relations, retrieve
from crux_nb.testing import make_kb

N = 60  # chunks, above HUB_MIN_CHUNKS
HUB = 20  # chunks naming the hub: a third of them


def hub_kb(n: int = N):
    """``n`` one-chunk sources; ``s0`` matches the query; ``hub`` is named in ``s0`` and ``HUB - 1`` others,
    ``rare`` only in ``s0`` and ``s1``."""
    texts = ["gateway launch plan"] + [f"filler text number {i}" for i in range(1, n)]
    kb = make_kb(chunks=[(f"s{i}", "c0", 0, t) for i, t in enumerate(texts)])
    pairs = [(i, "hub") for i in range(HUB)] + [(0, "rare"), (1, "rare")]
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:s{i}:c0", "to_ref": f"entity:{e}", "type": "mentions",
                                "evidence": [f"chunk:s{i}:c0"]} for i, e in pairs]))
    return kb


def routed(kb, **kwargs):
    hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=30, compete=False, **kwargs)]) \
        .retrieve_with_trace("gateway launch")
    details = trace.step("expand-relations").details
    return {e.ref for e in details["expansions"]}, {w for e in details["expansions"] for w in e.path[1:-1]}, details


def test_a_hub_routes_nothing_under_the_cut():
    kb = hub_kb()
    reached, waypoints, details = routed(kb, hub_share=HUB_SHARE)
    assert waypoints == {"entity:rare"} and "chunk:s1:c0" in reached and details["hubs"] == 1
    assert not reached & {f"chunk:s{i}:c0" for i in range(2, HUB)}  # the hub's other chunks are not reached


@pytest.mark.parametrize("kwargs", [{}, {"hub_share": 1.0}])
def test_by_default_or_at_share_one_every_entity_routes(kwargs):
    reached, waypoints, details = routed(hub_kb(), **kwargs)
    assert "entity:hub" in waypoints and details["hubs"] == 0
    assert {f"chunk:s{i}:c0" for i in range(1, HUB)} <= reached


def test_a_small_knowledge_base_has_no_hubs():
    kb = hub_kb(HUB_MIN_CHUNKS - 10)  # the hub is in 20 of 40 chunks, but 40 chunks are too few to tell
    _reached, waypoints, details = routed(kb, hub_share=HUB_SHARE)
    assert "entity:hub" in waypoints and details["hubs"] == 0


def test_the_graph_report_flags_the_hubs_expansion_cuts():
    kb = hub_kb()
    assert kb.graph_report().hubs == ["hub"]
    index = kb.reader.traversal_index
    view = index.view(None, None, 64, HUB_SHARE)
    cut = [index.refs[i] for i in np.flatnonzero(hub_mask(index.kind, view.df, len(index.chunk_code), HUB_SHARE))]
    assert cut == ["entity:hub"] and index.kind[index.code["entity:hub"]] == KIND_ENTITY


def test_upstream_keeps_every_entity_and_refuses_hub_share():
    kb = hub_kb()
    _hits, trace = kb.recipe(steps=[retrieve(limit=1), expand_relations(limit=30, ranking="upstream")]) \
        .retrieve_with_trace("gateway launch")
    paths = {w for e in trace.step("expand-relations").details["expansions"] for w in e.path[1:-1]}
    assert "entity:hub" in paths
    with pytest.raises(ParameterError, match="parameter 'hub_share'"):
        expand_relations(ranking="upstream", hub_share=0.5)
    with pytest.raises(ParameterError, match="parameter 'hub_share'"):
        expand_relations(hub_share=1.5)
    assert "hub_share" not in repr(expand_relations()) and "hub_share=0.5" in repr(expand_relations(hub_share=0.5))
