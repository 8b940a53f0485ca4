"""Clustering as a public seam: the community graph of a knowledge base, and the hierarchical Leiden over it.

``kb.communities.prepare()`` runs these two with the configuration's settings, then writes reports. Called
directly they let a user look at (or benchmark, or re-cluster) the graph without writing any report:

>>> import crux_nb
>>> from crux_nb.community import cluster_graph, community_graph
>>> kb = crux_nb.knowledge_base(id="docs")
>>> kb.add_text("a.md", "Ada Park leads the Lumen launch. Ada Park works with Ben Ito in Dublin.")
>>> _ = kb.extract_entities()
>>> graph = community_graph(kb)
>>> graph.chunk_count, [c.kind for c in cluster_graph(graph)]
(1, ['root'])
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..errors import ParameterError
from ..validation import check_choice, check_int, check_positive
from .cluster import LEAF_BUDGET, MAX_CHILDREN, Community, cluster
from .config import INCREMENTAL_ENGINE, INCREMENTAL_ENGINES
from .graph_input import CommunityGraph, build_graph

__all__ = ["community_graph", "cluster_graph"]


def community_graph(kb: Any, *, sources: Iterable[str] | None = None) -> CommunityGraph:
    """The graph communities are found in: visible chunks and the entities they mention, weighted links.

    Parameters
    ----------
    kb : KnowledgeBase
        The knowledge base (anything with a ``state``); its entity graph is read as it is (nothing is
        extracted: ``kb.extract_entities()`` or ``kb.add_edges()`` first).
    sources : iterable of str, optional
        Only these source ids' chunks (default: every source).

    Returns
    -------
    CommunityGraph
        Sorted node names (chunk refs, then entity refs), links ``(i, j, weight)`` with ``i < j`` and the
        estimated report input characters per node; the input of :func:`cluster_graph`.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Ada Park met Ben Ito."); kb.add_text("b.md", "Ben Ito flew to Dublin.")
    >>> _ = kb.extract_entities()
    >>> community_graph(kb).nodes
    ('chunk:a.md:c0000', 'chunk:b.md:c0000', 'entity:ada-park', 'entity:ben-ito', 'entity:dublin')
    >>> community_graph(kb, sources=["b.md"]).chunk_count
    1
    """
    owner = "community_graph()"
    state = getattr(kb, "state", None)
    if state is None or not hasattr(state, "chunks"):
        raise ParameterError(owner, "kb", "a knowledge base (crux_nb.knowledge_base(...))", kb)
    visible = None
    if sources is not None:
        if isinstance(sources, (str, bytes)) or not isinstance(sources, Iterable):
            raise ParameterError(owner, "sources", "an iterable of source ids or None", sources)
        items = list(sources)
        if not all(isinstance(s, str) for s in items):
            raise ParameterError(owner, "sources", "an iterable of source ids (strings) or None", sources)
        visible = set(items)
    return build_graph(state, visible)


def cluster_graph(graph: CommunityGraph, *, resolution: float = 1.0, seed: int = 0, budget: int = LEAF_BUDGET,
                  max_children: int = MAX_CHILDREN, previous: Sequence[Community] | None = None,
                  engine: str = INCREMENTAL_ENGINE) -> list[Community]:
    """Hierarchical Leiden under a report budget: the communities of ``graph`` as a tree.

    The same algorithm as ``kb.communities.prepare()`` (which calls it with the configuration's settings):
    seeded leaves whose estimated report input fits ``budget``, a balanced tree of 2..``max_children``
    children per parent above them, one root. The same graph and seed give the same communities.

    Parameters
    ----------
    graph : CommunityGraph
        From :func:`community_graph` (or built by hand).
    resolution : float
        Leiden's resolution (higher: smaller communities).
    seed : int
        Leiden's seed.
    budget : int
        Estimated report input characters per leaf (default :data:`LEAF_BUDGET`, 24,000).
    max_children : int
        Children per parent (at least 2).
    previous : sequence of Community, optional
        The previous generation (e.g. ``kb.communities.records()``): start from it, keep every leaf whose
        members did not change (same id) and place only what is new.
    engine : {"leidenalg", "igraph"}
        With ``previous``: ``"leidenalg"`` keeps the nodes of untouched leaves fixed; ``"igraph"`` only
        starts igraph's Leiden from the previous membership (any node may move).

    Returns
    -------
    list of Community
        Parents before children, the root first.

    Examples
    --------
    >>> g = CommunityGraph(nodes=("chunk:a:1", "chunk:a:2", "entity:x"), links=((0, 2, 1.0), (1, 2, 1.0)),
    ...                    sizes=(10, 10, 3), chunk_count=2)
    >>> [(c.kind, c.chunk_refs) for c in cluster_graph(g)]
    [('root', ('chunk:a:1', 'chunk:a:2'))]
    >>> cluster_graph(g, previous=cluster_graph(g), engine="igraph")[0].community_id == cluster_graph(g)[0].community_id
    True
    """
    owner = "cluster_graph()"
    if not isinstance(graph, CommunityGraph):
        raise ParameterError(owner, "graph", "a CommunityGraph (crux_nb.community.community_graph(kb))", graph)
    resolution = check_positive(owner, "resolution", resolution)
    seed = check_int(owner, "seed", seed, minimum=0)
    budget = check_int(owner, "budget", budget, minimum=1)
    max_children = check_int(owner, "max_children", max_children, minimum=2)
    check_choice(owner, "engine", engine, INCREMENTAL_ENGINES)
    tree = None
    if previous is not None:
        ok = isinstance(previous, Sequence) and not isinstance(previous, str)
        tree = list(previous) if ok else []
        if not ok or not all(isinstance(c, Community) for c in tree):
            raise ParameterError(owner, "previous", "None or a sequence of Community (kb.communities.records())",
                                 previous)
    return cluster(graph, resolution=resolution, seed=seed, budget=budget, max_children=max_children,
                   previous=tree, engine=engine)
