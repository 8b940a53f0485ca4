"""The graph's two indexes built together: the adjacency of the persisted edges (``neighbors()``, ``reach``) and
the traversal index over them and the structure (``expand_relations``), from one factorisation of every ref."""

from __future__ import annotations

import numpy as np

from .adjacency import AdjacencyIndex
from .frontier_index import Coded, TraversalIndex
from .ref_codes import sorted_codes
from .structure import structural_refs

__all__ = ["build_with_adjacency"]


def build_with_adjacency(state) -> tuple[TraversalIndex, AdjacencyIndex]:
    """The traversal index of ``state`` and the adjacency of its edges, from one factorisation of every ref
    (:func:`~crux_nb.graph.ref_codes.sorted_codes`): what building the adjacency and then the index from it
    gives, array for array, without hashing each string twice."""
    edges = state.edges
    named = structural_refs(state.parents, state.chunks, state.documents)
    members = ("chunk", "parent", "document")
    refs, (src, dst, *member_codes), lookup_codes = sorted_codes(
        [edges["from_ref"], edges["to_ref"], *(named[k] for k in members)],
        [v for k, v in named.items() if k not in members])
    structural = dict(zip(members, member_codes)) | dict(zip([k for k in named if k not in members], lookup_codes))
    # the refs the edges name, renumbered in the same order (what factorising the ends alone gives)
    used = np.flatnonzero(np.bincount(np.concatenate([src, dst]), minlength=len(refs)))  # adjacency code -> code
    compact = np.zeros(len(refs), dtype=np.int64)
    compact[used] = np.arange(len(used))
    adjacency = AdjacencyIndex(edges, state.edge_evidence, coded=(refs[used], compact[src], compact[dst]))
    return TraversalIndex(state, adjacency, coded=Coded(refs, structural, used)), adjacency
