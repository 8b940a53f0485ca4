"""The knowledge base as an igraph ``Graph`` (igraph is imported only in this package).

Takes the node and edge frames of :func:`crux_nb.graph.export.graph_frames` (what
``kb.to_networkx`` is built from) and gives the same graph: directed, one vertex per ref
(``name`` is the ref), a symmetric edge both ways, the edge id in ``edge_id``.
"""

from __future__ import annotations

import igraph as ig
import pandas as pd

__all__ = ["frames_to_igraph"]


def _missing_as_none(frame: pd.DataFrame) -> pd.DataFrame:
    # igraph turns NaN names into "NA"; attributes keep None for "not set"
    return frame.astype(object).where(frame.notna(), None)


def frames_to_igraph(nodes: pd.DataFrame, edges: pd.DataFrame) -> ig.Graph:
    """A directed igraph ``Graph`` from node and edge frames (``graph_frames`` columns).

    Parameters
    ----------
    nodes : pandas.DataFrame
        One row per node; ``ref`` becomes the vertex ``name``, other columns vertex attributes.
    edges : pandas.DataFrame
        One row per edge (``from_ref``, ``to_ref``, ``key``, then attributes); rows whose
        ``direction`` is ``symmetric`` are added both ways.

    Returns
    -------
    igraph.Graph
        Vertices in ``nodes`` order, edges in ``edges`` order (a symmetric edge's reverse
        right after it); ``key`` is renamed ``edge_id``.

    Examples
    --------
    >>> nodes = pd.DataFrame({"ref": ["entity:a", "entity:b"], "kind": ["entity", "entity"]})
    >>> edges = pd.DataFrame({"from_ref": ["entity:a"], "to_ref": ["entity:b"], "key": ["e1"],
    ...                       "type": ["knows"], "direction": ["symmetric"]})
    >>> graph = frames_to_igraph(nodes, edges)
    >>> graph.vcount(), graph.ecount(), graph.es["edge_id"]
    (2, 2, ['e1', 'e1'])
    """
    vertices = _missing_as_none(nodes.rename(columns={"ref": "name"}))
    rows = []
    for row in _missing_as_none(edges.rename(columns={"key": "edge_id"})).to_dict("records"):
        rows.append(row)
        if row.get("direction") == "symmetric" and row["from_ref"] != row["to_ref"]:
            rows.append({**row, "from_ref": row["to_ref"], "to_ref": row["from_ref"]})
    columns = ["from_ref", "to_ref"] + [c for c in edges.columns if c not in ("from_ref", "to_ref", "key")] + ["edge_id"]
    both = pd.DataFrame(rows, columns=columns)
    if "evidence_refs" in both:
        both["evidence_refs"] = [tuple(v) if v is not None else () for v in both["evidence_refs"]]
    return ig.Graph.DataFrame(both, directed=True, vertices=vertices, use_vids=False)
