"""The knowledge graph in and out of networkx: GraphML for Gephi, yEd and Cytoscape, and edges back.

* :func:`write_graphml` writes ``kb.to_networkx(...)`` as GraphML (node ids are refs; the
  tuple of evidence refs is written as JSON text, since GraphML holds only scalars).
* :func:`edges_from_networkx` turns the edges of any networkx graph into the frame
  ``kb.add_edges`` takes (which validates it as it validates every frame).
* :func:`expansion_graph` (defined in ``crux_nb.graph.expansion_export``, so widgets can use it)
  is the subgraph behind one expansion.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import networkx as nx
import pandas as pd

from ..errors import InputError, ParameterError
from ..graph.expansion_export import expansion_graph

__all__ = ["write_graphml", "edges_from_networkx", "expansion_graph", "ADD_EDGES_COLUMNS"]

ADD_EDGES_COLUMNS = ["from_ref", "to_ref", "type", "direction", "evidence", "weight", "description"]


def write_graphml(kb: Any, path: str | os.PathLike, *, types: Any = None, include_structural: bool = False,
                  view: Any = None) -> Path:
    """Write the knowledge graph as GraphML (what Gephi, yEd and Cytoscape open).

    Parameters
    ----------
    kb : KnowledgeBase
        The knowledge base to export.
    path : str or os.PathLike
        The file to write (replaced if it exists).
    types, include_structural, view
        As for ``kb.to_networkx``.

    Returns
    -------
    pathlib.Path
        The file written. ``networkx.read_graphml(path)`` reads it back as a ``MultiDiGraph``
        (``evidence_refs`` is then JSON text; :func:`edges_from_networkx` reads either form).

    Examples
    --------
    >>> import tempfile, networkx as nx
    >>> from crux_nb.datasets import load_sample
    >>> kb = load_sample()
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     graph = nx.read_graphml(write_graphml(kb, Path(folder) / "lumen.graphml", include_structural=True))
    >>> graph.number_of_nodes() == kb.to_networkx(include_structural=True).number_of_nodes()
    True
    """
    if not isinstance(path, (str, os.PathLike)):
        raise ParameterError("write_graphml()", "path", "a file path (str or os.PathLike)", path)
    graph = kb.to_networkx(types=types, include_structural=include_structural, view=view)
    for _, _, data in graph.edges(data=True):
        data["evidence_refs"] = json.dumps(list(data.get("evidence_refs", ())))
    target = Path(path)
    nx.write_graphml(graph, target)
    return target


def _evidence(value: Any, where: str) -> list[Any]:
    if isinstance(value, str):  # JSON text from GraphML, or one ref
        try:
            value = json.loads(value) if value.startswith("[") else [value]
        except json.JSONDecodeError as err:
            raise InputError(f"{where}: evidence_refs {value[:80]!r} is not a JSON list of chunk refs.") from err
    if value is None or isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
        raise InputError(f"{where}: no evidence; every semantic edge needs the chunk refs that support it.",
                         hint="give each edge an 'evidence_refs' attribute (a list of chunk refs), or pass "
                              "evidence=[...] for edges without one.")
    return list(value)


def _edge_rows(graph: Any):
    if graph.is_multigraph():
        for u, v, key, data in graph.edges(keys=True, data=True):
            yield u, v, key, f"edge ({u!r}, {v!r}, {key!r})", data
    else:
        for u, v, data in graph.edges(data=True):
            yield u, v, data.get("id"), f"edge ({u!r}, {v!r})", data  # GraphML keeps a key as "id"


def edges_from_networkx(graph: Any, *, type: str | None = None, evidence: Any = None,
                        direction: str | None = None) -> pd.DataFrame:
    """The frame ``kb.add_edges`` takes, from the edges of a networkx graph.

    Each edge's attributes ``type``, ``direction``, ``evidence_refs`` (a list of chunk refs, or its
    JSON text as in GraphML), ``weight`` and ``description`` are used when present; ``type``,
    ``evidence`` and ``direction`` give defaults for edges without them (direction: ``directed`` in a
    directed graph, ``symmetric`` in an undirected one). Structural edges of an export
    (``structural`` true) are skipped: the knowledge base projects them itself. A symmetric edge
    exported both ways gives one row. Node ids must be refs (``chunk:...``, ``entity:...``).

    Parameters
    ----------
    graph : networkx.Graph
        Any networkx graph (``Graph``, ``DiGraph``, ``MultiGraph``, ``MultiDiGraph``).
    type : str, optional
        Edge type for edges without a ``type`` attribute.
    evidence : list of str, optional
        Chunk refs supporting edges without an ``evidence_refs`` attribute.
    direction : {"directed", "symmetric"}, optional
        Direction for edges without a ``direction`` attribute.

    Returns
    -------
    pandas.DataFrame
        Columns ``ADD_EDGES_COLUMNS``, one row per edge, in the graph's edge order.

    Examples
    --------
    >>> import crux_nb, networkx as nx
    >>> kb = crux_nb.knowledge_base(id="g")
    >>> kb.add_text("a.md", "Ada Lovelace worked with Charles Babbage.")
    >>> graph = nx.Graph([("entity:ada", "entity:charles")])
    >>> kb.add_edges(edges_from_networkx(graph, type="worked_with", evidence=["chunk:a.md:c0000"]))
    >>> kb.edges[["from_ref", "to_ref", "type", "direction"]].values.tolist()
    [['entity:ada', 'entity:charles', 'worked_with', 'symmetric']]
    """
    owner = "edges_from_networkx()"
    if not isinstance(graph, nx.Graph):
        raise ParameterError(owner, "graph", "a networkx graph", graph)
    if type is not None and not isinstance(type, str):
        raise ParameterError(owner, "type", "an edge type name (str) or None", type)
    if direction is not None and direction not in ("directed", "symmetric"):
        raise ParameterError(owner, "direction", "'directed', 'symmetric' or None", direction)
    fallback_direction = direction or ("directed" if graph.is_directed() else "symmetric")
    rows, seen = [], set()
    for u, v, key, where, data in _edge_rows(graph):
        if data.get("structural") is True:
            continue
        etype = data.get("type", type)
        if etype is None:
            raise InputError(f"{owner}: {where} has no type.", hint="pass type=... for edges without a 'type' attribute.")
        edge_direction = data.get("direction", fallback_direction)
        refs = _evidence(data.get("evidence_refs", evidence), f"{owner}: {where}")
        if edge_direction == "symmetric":  # exported both ways (under one key): keep one
            ident = (key, etype, *sorted((str(u), str(v))))
            if ident in seen:
                continue
            seen.add(ident)
        rows.append({"from_ref": u, "to_ref": v, "type": etype, "direction": edge_direction, "evidence": refs,
                     "weight": data.get("weight"), "description": data.get("description")})
    return pd.DataFrame(rows, columns=ADD_EDGES_COLUMNS)
