"""Graph exports of a knowledge base: ``kb.to_networkx()`` and ``kb.to_igraph()``.

:class:`GraphExports` holds both methods (``KnowledgeBase`` inherits them); they live here,
beside the igraph conversion, because igraph is imported only in this package. Both are built
from the node and edge frames of :func:`crux_nb.graph.export.kb_frames`.
"""

from __future__ import annotations

from typing import Any

import pandas as pd

from ..graph.export import frames_to_networkx, kb_frames

__all__ = ["GraphExports", "frames_to_igraph"]


class GraphExports:
    """``to_networkx`` and ``to_igraph`` for :class:`~crux_nb.KnowledgeBase` (a mixin)."""

    def to_networkx(self, *, types: Any = None, include_structural: bool = False, view: Any = None):
        """The knowledge graph as a ``networkx.MultiDiGraph``.

        One node per ref (``kind``, ``label``, ``source_id``, ``title`` (an entity's name), ``entity_type``), one
        edge per semantic edge keyed by its edge id (``type``, ``direction``, ``weight``, ``evidence`` count,
        ``evidence_refs``, ``description``), a symmetric edge both ways; ``include_structural`` adds the
        projected ``hierarchy``/``sequence`` edges with document and section nodes; ``types`` keeps only those
        edge types; ``view`` exports only what the view sees (its sources' chunks, edges with evidence there).

        Examples
        --------
        >>> from crux_nb.datasets import load_sample
        >>> kb = load_sample()
        >>> graph = kb.to_networkx(include_structural=True)
        >>> graph.nodes["chunk:team-data.md:c0000"]["kind"], graph.number_of_nodes() == kb.summary()["documents"] \\
        ...     + kb.summary()["sections"] + kb.summary()["chunks"]
        ('chunk', True)
        """
        return frames_to_networkx(*kb_frames(self, types=types, include_structural=include_structural, view=view))

    def to_igraph(self, *, types: Any = None, include_structural: bool = False, view: Any = None):
        """The same graph as :meth:`to_networkx`, as a directed ``igraph.Graph`` (vertex ``name`` = ref,
        ``edge_id`` per edge, a symmetric edge both ways).

        Examples
        --------
        >>> from crux_nb.datasets import load_sample
        >>> kb = load_sample()
        >>> kb.to_igraph().vcount() == len(kb.chunks)
        True
        """
        return frames_to_igraph(*kb_frames(self, types=types, include_structural=include_structural, view=view))


def _missing_as_none(frame: pd.DataFrame) -> pd.DataFrame:
    # igraph turns NaN names into "NA"; attributes keep None for "not set"
    return frame.astype(object).where(frame.notna(), None)


def frames_to_igraph(nodes: pd.DataFrame, edges: pd.DataFrame) -> Any:
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
    import igraph as ig  # here, not at the top: importing crux_nb does not load igraph

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
