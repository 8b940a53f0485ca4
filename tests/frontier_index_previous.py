"""``TraversalIndex.__init__`` as it was before the build was vectorised (main at ea32ef5,
``crux_nb/graph/frontier_index.py``): a Python loop projecting every chunk, section and document through
``StructureIndex.project``. ``tests/test_frontier_index_build.py`` checks the vectorised build against it array
by array (``bench/traversal_build.py`` times this checkout against main's code)."""

from __future__ import annotations

import threading

import numpy as np
import pandas as pd

from crux_nb.graph import frontier_index
from crux_nb.graph.frontier_index import KIND_CHUNK, KIND_ENTITY, KIND_OTHER, STRUCTURAL_TYPES, View
from crux_nb.graph.structure import StructureIndex
from crux_nb.refs import DocumentRef, ParentRef, decode_ref, encode_ref

__all__ = ["TraversalIndex"]


def _structure(state):
    return StructureIndex(state.parents, state.chunks)


class TraversalIndex(frontier_index.TraversalIndex):
    """The same views (inherited ``view``) over the arrays of the previous build."""

    def __init__(self, state, adjacency):
        chunks, parents, docs = state.chunks, state.parents, state.documents
        chunk_refs = chunks["ref"].tolist()
        parent_refs = [encode_ref(ParentRef(s, p)) for s, p in zip(parents["source_id"], parents["parent_id"])]
        doc_refs = [encode_ref(DocumentRef(s)) for s in docs["source_id"]]
        refs = np.unique(np.asarray(list(adjacency.refs) + chunk_refs + parent_refs + doc_refs, dtype=object))
        self.refs = refs
        self.code = {r: i for i, r in enumerate(refs.tolist())}
        n = len(refs)
        prefix = pd.Series(refs, dtype=object).str.split(":", n=1).str[0].to_numpy()
        self.kind = np.where(prefix == "chunk", KIND_CHUNK, np.where(prefix == "entity", KIND_ENTITY, KIND_OTHER))
        self.kind = self.kind.astype(np.int8)
        self.type_names = list(dict.fromkeys(list(adjacency.type_names) + list(STRUCTURAL_TYPES)))
        tcode = {t: i for i, t in enumerate(self.type_names)}
        self.chunk_code = np.array([self.code[r] for r in chunk_refs], dtype=np.int64)  # per chunk row
        self.row_of_code = np.full(n, -1, dtype=np.int64)
        self.row_of_code[self.chunk_code] = np.arange(len(chunk_refs))
        # structural entries, each node's list in neighbors() order (sorted projection)
        s_node, s_peer, s_type, s_dir, s_pos = [], [], [], [], []
        structure = _structure(state)
        for ref in chunk_refs + parent_refs + doc_refs:
            decoded = decode_ref(ref)
            projected = sorted(structure.project(decoded.kind, decoded.segments(), ref))
            node = self.code[ref]
            for pos, (_, peer, t, d) in enumerate(projected):
                s_node.append(node)
                s_peer.append(self.code[peer])
                s_type.append(tcode[t])
                s_dir.append(0 if d == "out" else 1)
                s_pos.append(pos)
        remap = np.array([self.code[r] for r in adjacency.refs], dtype=np.int64)
        p_node = remap[np.repeat(np.arange(len(adjacency.refs)), np.diff(adjacency.indptr))] if len(remap) else \
            np.zeros(0, dtype=np.int64)
        p_peer = remap[adjacency.peer] if len(remap) else np.zeros(0, dtype=np.int64)
        ptype_map = np.array([tcode[t] for t in adjacency.type_names], dtype=np.int32)
        p_type = ptype_map[adjacency.etype] if len(ptype_map) else np.zeros(0, dtype=np.int32)
        node = np.concatenate([np.asarray(s_node, dtype=np.int64), p_node])
        section = np.concatenate([np.zeros(len(s_node), dtype=np.int8), np.ones(len(p_node), dtype=np.int8)])
        pos = np.concatenate([np.asarray(s_pos, dtype=np.int64), np.arange(len(p_node), dtype=np.int64)])
        order = np.lexsort((pos, section, node))
        self.node = node[order]
        self.peer = np.concatenate([np.asarray(s_peer, dtype=np.int64), p_peer])[order]
        self.etype = np.concatenate([np.asarray(s_type, dtype=np.int32), p_type])[order]
        self.direction = np.concatenate([np.asarray(s_dir, dtype=np.int8),
                                         np.asarray(adjacency.direction, dtype=np.int8)])[order]
        self.indptr = np.concatenate([[0], np.cumsum(np.bincount(self.node, minlength=n))]).astype(np.int64)
        self._views: dict[tuple, View] = {}
        self._view_lock = threading.Lock()
