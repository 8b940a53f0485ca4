"""The knowledge base as a graph for other tools: node and edge frames, and a networkx ``MultiDiGraph``.

One node per visible ref (every chunk and entity; documents and sections when structural edges
are asked for, or when a semantic edge touches them), one edge per semantic edge (a symmetric
edge both ways, under the same key), structural ``hierarchy``/``sequence`` edges on request (as
the reader projects them, one directed edge each). ``members`` (a view's source ids) limits what
is visible: chunks, documents and sections of member sources, semantic edges with evidence in
them (counted over that evidence only), and entities such an edge touches.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import pandas as pd

from ..errors import ParameterError
from ..refs import DocumentRef, ParentRef, decode_ref, encode_ref
from .structure import StructureIndex

__all__ = ["NODE_COLUMNS", "EDGE_COLUMNS", "STRUCTURAL_TYPES", "graph_frames", "kb_frames", "frames_to_networkx",
           "present"]

NODE_COLUMNS = ["ref", "kind", "label", "source_id", "title", "entity_type"]
EDGE_COLUMNS = ["from_ref", "to_ref", "key", "type", "direction", "weight", "evidence", "evidence_refs",
                "description", "structural"]
STRUCTURAL_TYPES = ("hierarchy", "sequence")

if TYPE_CHECKING:  # networkx is imported where a graph is built: open() need not load it
    import networkx as nx


def check_types(owner: str, types: Any) -> frozenset[str] | None:
    if types is None:
        return None
    if isinstance(types, str) or not isinstance(types, Iterable) or not all(isinstance(t, str) for t in types):
        raise ParameterError(owner, "types", "a list of edge type names or None", types)
    return frozenset(types)


def present(value: Any) -> bool:
    """Not None and not NaN (what pandas stores for a missing value); such attributes are left out."""
    return value is not None and not (isinstance(value, float) and value != value)


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None


def _node_rows(state: Any, members: set[str] | None) -> dict[str, dict[str, Any]]:
    """Every document, section, chunk and entity (entities are filtered later, by their edges)."""
    docs, parents, chunks = state.documents, state.parents, state.chunks
    if members is not None:
        docs, parents, chunks = (f[f["source_id"].isin(members)] for f in (docs, parents, chunks))
    titles = dict(zip(docs["source_id"], docs["title"]))
    sections = dict(zip(zip(parents["source_id"], parents["parent_id"]), parents["title"]))
    rows: dict[str, dict[str, Any]] = {}
    for source, title in titles.items():
        rows[encode_ref(DocumentRef(source))] = {"kind": "document", "label": _text(title) or source,
                                                 "source_id": source, "title": _text(title)}
    for (source, parent), title in sections.items():
        rows[encode_ref(ParentRef(source, parent))] = {"kind": "parent", "label": _text(title) or parent,
                                                       "source_id": source, "title": _text(title)}
    for ref, source, chunk, parent in zip(chunks["ref"], chunks["source_id"], chunks["chunk_id"], chunks["parent_id"]):
        title = sections.get((source, parent)) if isinstance(parent, str) else None
        rows[ref] = {"kind": "chunk", "label": f"{source} {chunk}", "source_id": source,
                     "title": _text(title) or _text(titles.get(source))}
    entities = state.entities
    for ref, name, etype in zip(entities["ref"], entities["canonical_name"], entities["type"]):
        rows[ref] = {"kind": "entity", "label": _text(name) or ref, "title": _text(name), "entity_type": _text(etype)}
    return rows


def _semantic_edges(state: Any, visible_chunks: set[str] | None) -> pd.DataFrame:
    edges, evidence = state.edges, state.edge_evidence
    if visible_chunks is not None:
        evidence = evidence[evidence["chunk_ref"].isin(visible_chunks)]
    support = (evidence.drop_duplicates(["edge_id", "chunk_ref"]).sort_values(["edge_id", "chunk_ref"])
               .groupby("edge_id")["chunk_ref"].agg(tuple))
    edges = edges[edges["edge_id"].isin(support.index)]  # an edge without visible evidence is not visible
    return edges.assign(evidence_refs=edges["edge_id"].map(support))


def _structural_edges(state: Any, nodes: dict[str, dict[str, Any]], types: frozenset[str] | None) -> list[dict]:
    wanted = [t for t in STRUCTURAL_TYPES if types is None or t in types]
    if not wanted:
        return []
    index = StructureIndex(state.parents, state.chunks)
    out = []
    for ref, row in nodes.items():
        kind = row["kind"]
        if kind == "entity":
            continue
        segments = decode_ref(ref).segments()
        for _, peer, etype, direction in index.project(kind, segments, ref):
            if direction == "out" and etype in wanted and peer in nodes:
                out.append({"from_ref": ref, "to_ref": peer, "key": etype, "type": etype, "direction": "directed",
                            "weight": 1.0, "evidence": 0, "evidence_refs": (), "description": None,
                            "structural": True})
    return out


def graph_frames(state: Any, *, types: Any = None, include_structural: bool = False,
                 members: set[str] | None = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Node and edge frames of a knowledge-base state (columns ``NODE_COLUMNS`` and ``EDGE_COLUMNS``).

    Parameters
    ----------
    state : KBState
        The state to read (``kb.state``).
    types : list of str, optional
        Edge types to keep (semantic and structural); None keeps all.
    include_structural : bool
        Add the projected ``hierarchy`` and ``sequence`` edges (and document and section nodes).
    members : set of str, optional
        Visible source ids (a view's members); None: every source.

    Returns
    -------
    tuple of pandas.DataFrame
        ``(nodes, edges)``; a symmetric edge is one row here (``to_networkx`` adds it both ways).

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="g")
    >>> kb.add_text("a.md", "Ada Lovelace met Charles Babbage.")
    >>> kb.add_edges(pd.DataFrame({"from_ref": ["entity:ada"], "to_ref": ["entity:charles"], "type": ["knows"],
    ...                            "evidence": [["chunk:a.md:c0000"]]}))
    >>> nodes, edges = graph_frames(kb.state)
    >>> nodes["kind"].tolist(), edges[["from_ref", "to_ref", "type", "evidence"]].values.tolist()
    (['chunk', 'entity', 'entity'], [['entity:ada', 'entity:charles', 'knows', 1]])
    """
    owner = "to_networkx()"
    wanted = check_types(owner, types)
    if not isinstance(include_structural, bool):
        raise ParameterError(owner, "include_structural", "True or False", include_structural)
    rows = _node_rows(state, members)
    visible_chunks = None if members is None else {r for r, row in rows.items() if row["kind"] == "chunk"}
    edges = _semantic_edges(state, visible_chunks)
    if members is not None:  # both endpoints visible: an entity always is, a chunk or section only in the view
        ok = lambda refs: refs.isin(list(rows)) | refs.str.startswith("entity:")  # noqa: E731
        edges = edges[ok(edges["from_ref"]) & ok(edges["to_ref"])]
    # entities visible in a view are those its edges touch, whatever types are exported
    seen = set(edges["from_ref"]) | set(edges["to_ref"])
    if wanted is not None:
        edges = edges[edges["type"].isin(wanted)]
    touched = set(edges["from_ref"]) | set(edges["to_ref"])
    keep = {r: row for r, row in rows.items()
            if row["kind"] == "chunk" or r in touched or (row["kind"] == "entity" and (members is None or r in seen))
            or (include_structural and row["kind"] in ("document", "parent"))}
    records = [{"from_ref": f, "to_ref": t, "key": e, "type": ty, "direction": d, "weight": float(w),
                "evidence": len(ev), "evidence_refs": ev, "description": _text(desc), "structural": False}
               for e, ty, f, t, d, w, ev, desc in zip(edges["edge_id"], edges["type"], edges["from_ref"],
                                                      edges["to_ref"], edges["direction"], edges["weight"],
                                                      edges["evidence_refs"], edges["description"])]
    if include_structural:
        records = _structural_edges(state, keep, wanted) + records
    for ref in touched - set(keep):  # an endpoint no frame names (an entity without a row): still a node
        keep[ref] = {"kind": ref.split(":", 1)[0], "label": ref}
    node_frame = pd.DataFrame([{"ref": r, **row} for r, row in keep.items()], columns=NODE_COLUMNS)
    edge_frame = pd.DataFrame(records, columns=EDGE_COLUMNS)
    edge_frame["weight"] = edge_frame["weight"].astype("float64")
    edge_frame["evidence"] = edge_frame["evidence"].astype("int64")
    edge_frame["structural"] = edge_frame["structural"].astype("bool")
    return node_frame, edge_frame


def kb_frames(kb: Any, *, types: Any = None, include_structural: bool = False,
              view: Any = None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """:func:`graph_frames` of a knowledge base's current state, seen through ``view`` (a view of it).

    What ``kb.to_networkx`` and ``kb.to_igraph`` are built from.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="g")
    >>> kb.add_text("a.md", "# A\\n\\nText.", metadata={"team": "x"})
    >>> nodes, edges = kb_frames(kb, include_structural=True, view=kb.view(id="x", where={"team": "x"}))
    >>> nodes["kind"].tolist(), edges["type"].tolist()
    (['document', 'parent', 'chunk'], ['hierarchy', 'hierarchy'])
    """
    members = None
    if view is not None:
        if getattr(view, "kb", None) is not kb or not callable(getattr(view, "members", None)):
            raise ParameterError("to_networkx()", "view", "a view of this knowledge base (kb.view(...))", view)
        members = view.members()  # a pinned view whose members changed raises here
    return graph_frames(kb.state, types=types, include_structural=include_structural, members=members)


def frames_to_networkx(nodes: pd.DataFrame, edges: pd.DataFrame) -> nx.MultiDiGraph:
    """A ``MultiDiGraph`` from :func:`graph_frames`: node attributes without missing values; edge keys
    are edge ids (the type for structural edges); symmetric edges both ways.

    Examples
    --------
    >>> nodes = pd.DataFrame({"ref": ["entity:a", "entity:b"], "kind": ["entity", "entity"], "label": ["A", "B"]})
    >>> edges = pd.DataFrame({"from_ref": ["entity:a"], "to_ref": ["entity:b"], "key": ["e1"], "type": ["knows"],
    ...                       "direction": ["symmetric"], "weight": [1.0], "evidence": [1],
    ...                       "evidence_refs": [("chunk:x:c0000",)], "description": [None], "structural": [False]})
    >>> sorted(frames_to_networkx(nodes, edges).edges(keys=True))
    [('entity:a', 'entity:b', 'e1'), ('entity:b', 'entity:a', 'e1')]
    """
    import networkx as nx

    graph = nx.MultiDiGraph()
    attrs = [c for c in nodes.columns if c != "ref"]
    for record in nodes.itertuples(index=False):
        row = record._asdict()
        graph.add_node(row["ref"], **{k: row[k] for k in attrs if present(row[k])})
    for row in edges.to_dict("records"):
        data = {k: v for k, v in row.items() if k not in ("from_ref", "to_ref", "key") and present(v)}
        data["evidence_refs"] = tuple(row["evidence_refs"])
        graph.add_edge(row["from_ref"], row["to_ref"], key=row["key"], **data)
        if row["direction"] == "symmetric" and row["from_ref"] != row["to_ref"]:
            graph.add_edge(row["to_ref"], row["from_ref"], key=row["key"], **data)
    return graph
