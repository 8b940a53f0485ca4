"""The traversal index of ``expand_relations``: every node's neighbour list (structural first, then
persisted, in ``neighbors()`` order) as one CSR, and per (types, direction, fan-out) a cut of it
(a :class:`View`) with what the vectorised traversal (:mod:`.frontier`) reads per entry: the row's
owner, the hop cost of each entry under both entity-hop rules, the waypoints' specificity, and (built
on first use) the transposed lists, entry ids grouped by peer.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from ..refs import DocumentRef, ParentRef, decode_ref, encode_ref

__all__ = ["TraversalIndex", "View", "KIND_CHUNK", "KIND_ENTITY", "KIND_OTHER", "STRUCTURAL_TYPES", "HUB_SHARE",
           "HUB_MIN_CHUNKS", "hub_mask"]

KIND_CHUNK, KIND_ENTITY, KIND_OTHER = 0, 1, 2
STRUCTURAL_TYPES = ("hierarchy", "sequence")
HOP_RULES = ("free", "counted")
#: An entity named in more than this share of the chunks is a hub: not specific (a path through it says little), so
#: ``expand_relations``' relevance ranking does not route through it and ``kb.graph_report()`` flags it
HUB_SHARE = 0.2
#: ... in a knowledge base of at least this many chunks (in a short note every name is everywhere)
HUB_MIN_CHUNKS = 50


def hub_mask(kind: np.ndarray, df: np.ndarray, n_chunks: int, share: float | None) -> np.ndarray:
    """Per node: an entity adjacent to more than ``share`` of the ``n_chunks`` chunks (``df``: its distinct chunk
    neighbours), in a knowledge base of at least :data:`HUB_MIN_CHUNKS` chunks; none when ``share`` is None.

    >>> hub_mask(np.array([KIND_ENTITY, KIND_ENTITY, KIND_CHUNK]), np.array([30.0, 5.0, 0.0]), 100, HUB_SHARE).tolist()
    [True, False, False]
    >>> hub_mask(np.array([KIND_ENTITY]), np.array([30.0]), 40, HUB_SHARE).tolist()  # too few chunks to tell
    [False]
    """
    if share is None or n_chunks < HUB_MIN_CHUNKS:
        return np.zeros(len(kind), dtype=bool)
    return (kind == KIND_ENTITY) & (df > share * n_chunks)


class TraversalIndex:
    """Every node's neighbour list (structural, then persisted) as one CSR, built once per reader."""

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

    def view(self, types: frozenset[str] | None, direction: int | None, fan_out: int,
             hub_share: float | None = None) -> View:
        """The neighbour lists cut by type, direction and the fan-out ceiling (cached per key); with ``hub_share``,
        without the entries of a hub (:func:`hub_mask`): such an entity routes nothing."""
        key = (types, direction, fan_out, hub_share)
        cached = self._views.get(key)
        if cached is None:
            mask = np.ones(len(self.peer), dtype=bool)
            if types is not None:
                codes = [i for i, t in enumerate(self.type_names) if t in types]
                mask &= np.isin(self.etype, np.asarray(codes, dtype=np.int32))
            if direction is not None:
                mask &= self.direction == direction
            idx = np.flatnonzero(mask)
            # specificity of a waypoint: 1 / distinct chunk neighbours (all of them, not only the first 64)
            chunk_peer = self.kind[self.peer[idx]] == KIND_CHUNK
            pairs = np.unique(self.node[idx][chunk_peer] * len(self.refs) + self.peer[idx][chunk_peer])
            df = np.bincount(pairs // max(len(self.refs), 1), minlength=len(self.refs)).astype(float)
            spec = np.where(self.kind == KIND_CHUNK, 1.0, 1.0 / np.maximum(df, 1.0))
            hubs = hub_mask(self.kind, df, len(self.chunk_code), hub_share)
            if hubs.any():  # before the fan-out cut, so a chunk's other neighbours take the hub's places
                idx = idx[~(hubs[self.node[idx]] | hubs[self.peer[idx]])]
            owner = self.node[idx]
            counts = np.bincount(owner, minlength=len(self.refs))
            starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
            rank = np.arange(len(idx)) - starts[owner]
            keep = idx[rank < fan_out]
            kept = np.minimum(counts, fan_out)
            peer, owner = self.peer[keep], self.node[keep]
            entity = self.kind == KIND_ENTITY
            cost = {"free": (~(entity[owner] | entity[peer])).astype(np.int8),
                    "counted": (~(entity[peer] & ~entity[owner])).astype(np.int8)}
            zero = {rule: np.bincount(owner[c == 0], minlength=len(self.refs)) > 0 for rule, c in cost.items()}
            cached = self._views[key] = View(
                indptr=np.concatenate([[0], np.cumsum(kept)]).astype(np.int64), peer=peer,
                etype=self.etype[keep], truncated=counts >= fan_out, spec=spec, df=df, fan_out=fan_out,
                owner=owner, cost=cost, zero_cost=zero, degree=kept.astype(np.int32), hubs=int(hubs.sum()))
        return cached


@dataclass(frozen=True)
class View:
    indptr: np.ndarray
    peer: np.ndarray
    etype: np.ndarray
    truncated: np.ndarray  # a read of this node returns fan_out neighbours (the warning's condition)
    spec: np.ndarray
    df: np.ndarray
    fan_out: int
    owner: np.ndarray = None  # the row (node) of each entry
    cost: dict = None  # hop rule -> per-entry hop cost (0 or 1)
    zero_cost: dict = None  # hop rule -> per-node: its row has an entry of cost 0
    degree: np.ndarray = None  # entries per row
    hubs: int = 0  # hub entities whose entries were left out (hub_share)
    _lazy: dict = field(default_factory=dict, repr=False, compare=False)

    def transposed(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr over peers, entry ids): each node's incoming entries, ascending entry id (read order)."""
        cached = self._lazy.get("transposed")
        if cached is None:
            e = len(self.peer)  # unique keys (peer, entry id): a plain sort is stable and ~4x faster than argsort's
            order = np.sort(self.peer * e + np.arange(e)) % e if e else np.zeros(0, dtype=np.int64)
            counts = np.bincount(self.peer, minlength=len(self.truncated))
            cached = self._lazy["transposed"] = (np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), order)
        return cached

    def hops(self, rule: str) -> np.ndarray:
        """Per entry ``peer << 1 | hop cost`` under entity-hop ``rule``: what the compiled traversal reads, one word
        an entry (int32 below 2**30 nodes), built on first use."""
        key = ("hops", rule)
        cached = self._lazy.get(key)
        if cached is None:
            dtype = np.int32 if len(self.truncated) < 2**30 else np.int64
            packed = (self.peer.astype(np.int64) << 1) | self.cost[rule].astype(np.int64)
            cached = self._lazy[key] = packed.astype(dtype)
        return cached

    def pool(self, name: str) -> list:
        """A list kept with the view under ``name``: reusable scratch for traversals over it (take one with
        ``pop()``, give it back with ``append()``, so concurrent traversals never share one)."""
        return self._lazy.setdefault(("pool", name), [])

    def warning_texts(self, refs: np.ndarray, codes: np.ndarray) -> list[str]:
        """The fan-out warning of each node in ``codes`` (texts built once per node and view)."""
        texts = self._lazy.get("warnings")
        if texts is None:
            texts = self._lazy["warnings"] = np.full(len(refs), None, dtype=object)
        missing = codes[texts[codes] == None]  # noqa: E711 (element-wise)
        if len(missing):
            missing = np.unique(missing)
            texts[missing] = [f"expand_relations truncated neighbors for {r} at {self.fan_out}."
                              for r in refs[missing].tolist()]
        return texts[codes].tolist()


def _structure(state):
    from .structure import StructureIndex

    return StructureIndex(state.parents, state.chunks)
