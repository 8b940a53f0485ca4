"""The subgraph behind one expansion, as a networkx ``MultiDiGraph``.

Reads an ``expand_relations`` step's details (its ``seeds`` and ``Expansion`` records) from a
retrieval result or trace, duck-typed, so it sits below the retrieval layer: ``crux_nb.io`` and
``ExpansionView.to_networkx()`` both use it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..errors import ParameterError

__all__ = ["expansion_graph"]

if TYPE_CHECKING:  # networkx is imported where a graph is built: open() need not load it
    import networkx as nx


def _expansion_step(trace: Any, step: str | None) -> Any:
    steps = [s for s in getattr(trace, "steps", ()) if isinstance(s.details, dict) and "expansions" in s.details
             and (step is None or s.step_id == step)]
    if not steps:
        ran = ", ".join(repr(s.step_id) for s in getattr(trace, "steps", ())) or "none"
        raise ParameterError("expansion_graph()", "result", f"a result whose recipe ran an expand_relations() step"
                             f"{'' if step is None else f' with id {step!r}'} that added hits (steps run: {ran})",
                             getattr(trace, "recipe_id", trace),
                             hint="run kb.recipe(steps=[retrieve(limit=5), expand_relations()]).retrieve_with_trace(q).")
    return steps[0]


def _field(record: Any, name: str) -> Any:
    return record[name] if isinstance(record, dict) else getattr(record, name)


def expansion_graph(result: Any, *, kb: Any = None, step: str | None = None) -> nx.MultiDiGraph:
    """The subgraph behind one expansion: its seeds, every path's nodes and edges, the hits it added.

    Parameters
    ----------
    result : RetrievalResult or RecipeTrace, or an object with ``seeds`` and ``expansions``
        What ``recipe.retrieve_with_trace(query)`` returned (or its trace); ``ExpansionView.data``
        works too.
    kb : KnowledgeBase, optional
        Adds entity names and document titles as node labels.
    step : str, optional
        The step id, when a recipe expands more than once.

    Returns
    -------
    networkx.MultiDiGraph
        Nodes carry ``kind``, ``label`` and ``role`` (``seed``, ``added`` or ``path``); added hits also
        ``seed``, ``distance``, ``score`` and ``position``. Edges follow each path from the seed towards
        the added hit, keyed by the traversed edge's type, with ``paths`` (how many added hits' paths use it).

    Examples
    --------
    >>> from crux_nb.datasets import load_sample
    >>> from crux_nb.retrieval import expand_relations, retrieve
    >>> kb = load_sample()
    >>> _ = kb.extract_entities(progress=False)
    >>> result = kb.recipe(steps=[retrieve(limit=3), expand_relations(limit=4)]).retrieve_with_trace("launch plan")
    >>> graph = expansion_graph(result, kb=kb)
    >>> sorted({role for _, role in graph.nodes(data="role")})
    ['added', 'path', 'seed']
    """
    if hasattr(result, "seeds") and hasattr(result, "expansions"):
        seeds, expansions = tuple(result.seeds), tuple(result.expansions)
    else:
        trace = getattr(result, "trace", result)
        details = _expansion_step(trace, step).details
        seeds, expansions = tuple(details.get("seeds", ())), tuple(details["expansions"])
    names: dict[str, str] = dict(getattr(result, "names", None) or {})
    if kb is not None:
        names.update(zip(kb.entities["ref"], kb.entities["canonical_name"]))
    import networkx as nx

    graph = nx.MultiDiGraph()

    def node(ref: str, role: str) -> None:
        if ref not in graph:
            graph.add_node(ref, kind=ref.split(":", 1)[0], label=str(names.get(ref, ref)), role=role)

    for ref in seeds:
        node(str(ref), "seed")
    for x in expansions:
        path, types = [str(r) for r in _field(x, "path")], [str(t) for t in _field(x, "edges")]
        for ref in path[:-1]:
            node(ref, "path")
        added = str(_field(x, "ref"))
        node(added, "added")
        if graph.nodes[added]["role"] == "path":  # reached as a hit after serving as a hop
            graph.nodes[added]["role"] = "added"
        graph.nodes[added].update(seed=str(_field(x, "seed")), distance=int(_field(x, "distance")),
                                  score=float(_field(x, "score")), position=int(_field(x, "position")))
        for a, b, etype in zip(path, path[1:], types):
            if graph.has_edge(a, b, key=etype):
                graph.edges[a, b, etype]["paths"] += 1
            else:
                graph.add_edge(a, b, key=etype, type=etype, paths=1)
    return graph
