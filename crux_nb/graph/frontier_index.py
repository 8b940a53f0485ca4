"""The traversal index of ``expand_relations``: every node's neighbour list (structural first, then
persisted, in ``neighbors()`` order) as one CSR, and per (types, direction, fan-out) a cut of it
(a :class:`View`) with what the vectorised traversal (:mod:`.frontier`) reads per entry: the row's
owner, the hop cost of each entry under both entity-hop rules, the waypoints' specificity, and (built
on first use) the transposed lists, entry ids grouped by peer.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .structure import distinct_sorted, required_codes, stable_order, structural_entries, structural_refs

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

    def __init__(self, state, adjacency, *, coded: "Coded | None" = None):
        """From ``adjacency`` (the graph's :class:`~crux_nb.graph.adjacency.AdjacencyIndex`) and ``state``'s
        chunks, sections and documents, their refs numbered by ``coded`` (from the factorisation the adjacency was
        built from: :func:`~crux_nb.graph.build.build_with_adjacency`) or else looked up here."""
        chunks, parents, docs = state.chunks, state.parents, state.documents
        coded = coded if coded is not None else _looked_up(state, adjacency)
        refs, n = coded.refs, len(coded.refs)
        type_names = list(dict.fromkeys(list(adjacency.type_names) + list(STRUCTURAL_TYPES)))
        tcode = {t: i for i, t in enumerate(type_names)}
        s_node, s_peer, s_type, s_dir = _sorted_structure(parents, chunks, docs, coded.structural, n)
        s_type = np.array([tcode[t] for t in STRUCTURAL_TYPES], dtype=np.int32)[s_type]
        remap = required_codes(coded.adjacency)
        p_node = remap[np.repeat(np.arange(len(remap)), np.diff(adjacency.indptr))] if len(remap) else \
            np.zeros(0, dtype=np.int64)
        p_peer = remap[adjacency.peer] if len(remap) else np.zeros(0, dtype=np.int64)
        ptype_map = np.array([tcode[t] for t in adjacency.type_names], dtype=np.int32)
        p_type = ptype_map[adjacency.etype] if len(ptype_map) else np.zeros(0, dtype=np.int32)
        node = np.concatenate([s_node, p_node])
        section = np.concatenate([np.zeros(len(s_node), dtype=np.int8), np.ones(len(p_node), dtype=np.int8)])
        # both parts arrive in their final order within a node: a stable sort only puts structure first
        order = np.lexsort((section, node))
        node = node[order]
        self._install(refs, type_names, required_codes(coded.structural["chunk"]), remap, node=node,
                      peer=np.concatenate([s_peer, p_peer])[order], etype=np.concatenate([s_type, p_type])[order],
                      direction=np.concatenate([s_dir.astype(np.int8),
                                                np.asarray(adjacency.direction, dtype=np.int8)])[order],
                      indptr=np.concatenate([[0], np.cumsum(np.bincount(node, minlength=n))]).astype(np.int64))

    def _install(self, refs: np.ndarray, type_names: list[str], chunk_code: np.ndarray, adjacency_code: np.ndarray,
                 *, node: np.ndarray, peer: np.ndarray, etype: np.ndarray, direction: np.ndarray,
                 indptr: np.ndarray) -> None:
        """Keep the index's arrays and derive the rest (the node kinds, each chunk code's row)."""
        self.refs, self.type_names, self.chunk_code, self.adjacency_code = refs, type_names, chunk_code, adjacency_code
        self.node, self.peer, self.etype, self.direction, self.indptr = node, peer, etype, direction, indptr
        n = len(refs)
        self.kind = np.full(n, KIND_OTHER, dtype=np.int8)
        for name, kind in (("chunk", KIND_CHUNK), ("entity", KIND_ENTITY)):
            self.kind[_with_prefix(refs, name)] = kind
        self.row_of_code = np.full(n, -1, dtype=np.int64)  # per code: its chunk row, -1 for other nodes
        self.row_of_code[chunk_code] = np.arange(len(chunk_code))
        self._views: dict[tuple, View] = {}
        self._view_lock = threading.Lock()

    def arrays(self) -> dict[str, np.ndarray]:
        """What :meth:`from_arrays` takes back (a disk cache stores them: :mod:`crux_nb.graph.cached`): the sorted
        refs, type names, each chunk row's code, each adjacency code's code, and the CSR (its rows' node array is
        derived)."""
        return {"refs": self.refs, "type_names": np.array(self.type_names, dtype=object),
                "chunk_code": self.chunk_code, "adjacency_code": self.adjacency_code, "peer": self.peer,
                "etype": self.etype, "direction": self.direction, "indptr": self.indptr}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray]) -> "TraversalIndex":
        """The index :meth:`arrays` came from, array for array."""
        index = cls.__new__(cls)
        indptr = arrays["indptr"]
        node = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
        index._install(arrays["refs"], arrays["type_names"].tolist(), arrays["chunk_code"], arrays["adjacency_code"],
                       node=node, peer=arrays["peer"], etype=arrays["etype"], direction=arrays["direction"],
                       indptr=indptr)
        return index

    @cached_property
    def code(self) -> dict[str, int]:
        """Node code by encoded ref (built on first use: a query looks its few refs up by :meth:`codes_of`)."""
        return dict(zip(self.refs.tolist(), range(len(self.refs))))

    def codes_of(self, encoded: list[str]) -> list[int | None]:
        """The codes of ``encoded`` refs, None for a ref not indexed: by bisection of the sorted refs, so a query
        needs no dictionary of every ref (310k refs at 200k chunks: 0.07 s to build).

        >>> import crux_nb
        >>> kb = crux_nb.knowledge_base(id="guide")
        >>> kb.add_text("guide", "Plan.")
        >>> kb.reader.traversal_index.codes_of(["document:guide", "chunk:guide:c9", "chunk:guide:c0000"])
        [1, None, 0]
        """
        at = np.searchsorted(self.refs, np.array(encoded, dtype=object)).tolist() if encoded else []
        refs, n = self.refs, len(self.refs)
        return [i if i < n and refs[i] == ref else None for i, ref in zip(at, encoded)]

    def view(self, types: frozenset[str] | None, direction: int | None, fan_out: int,
             hub_share: float | None = None) -> View:
        """The neighbour lists cut by type, direction and the fan-out ceiling (cached per key); with ``hub_share``,
        without the entries of a hub (:func:`hub_mask`): such an entity routes nothing."""
        key = (types, direction, fan_out, hub_share)
        cached = self._views.get(key)
        if cached is None:
            with self._view_lock:  # a query asking while the background build (crux_nb.open) cuts it waits for it
                cached = self._views.get(key)
                if cached is None:
                    cached = self._views[key] = self._cut(types, direction, fan_out, hub_share)
        return cached

    def _cut(self, types: frozenset[str] | None, direction: int | None, fan_out: int,
             hub_share: float | None) -> View:
        """:meth:`view`'s build."""
        mask = np.ones(len(self.peer), dtype=bool)
        if types is not None:
            codes = [i for i, t in enumerate(self.type_names) if t in types]
            mask &= np.isin(self.etype, np.asarray(codes, dtype=np.int32))
        if direction is not None:
            mask &= self.direction == direction
        idx = np.flatnonzero(mask)
        # every entry (the default view): the arrays themselves, no copies of them (2.8M entries at 200k chunks)
        every = len(idx) == len(self.peer)
        node, peer = (self.node, self.peer) if every else (self.node[idx], self.peer[idx])
        # specificity of a waypoint: 1 / distinct chunk neighbours (all of them, not only the first 64)
        chunk_peer = self.kind[peer] == KIND_CHUNK
        pairs = distinct_sorted(node[chunk_peer] * len(self.refs) + peer[chunk_peer], runs=True)
        df = np.bincount(pairs // max(len(self.refs), 1), minlength=len(self.refs)).astype(float)
        spec = np.where(self.kind == KIND_CHUNK, 1.0, 1.0 / np.maximum(df, 1.0))
        hubs = hub_mask(self.kind, df, len(self.chunk_code), hub_share)
        if hubs.any():  # before the fan-out cut, so a chunk's other neighbours take the hub's places
            idx = idx[~(hubs[node] | hubs[peer])]
            every = False
        owner = node if every else self.node[idx]
        counts = np.bincount(owner, minlength=len(self.refs))
        starts = np.concatenate([[0], np.cumsum(counts)[:-1]])
        rank = np.arange(len(idx)) - starts[owner]
        keep = idx[rank < fan_out]
        kept = np.minimum(counts, fan_out)
        if every and len(keep) == len(self.peer):  # nothing cut: the view reads the index's own arrays
            keep = slice(None)
        peer, owner = self.peer[keep], self.node[keep]
        entity = self.kind == KIND_ENTITY
        cost = {"free": (~(entity[owner] | entity[peer])).astype(np.int8),
                "counted": (~(entity[peer] & ~entity[owner])).astype(np.int8)}
        zero = {rule: np.bincount(owner[c == 0], minlength=len(self.refs)) > 0 for rule, c in cost.items()}
        return View(
            indptr=np.concatenate([[0], np.cumsum(kept)]).astype(np.int64), peer=peer,
            etype=self.etype[keep], truncated=counts >= fan_out, spec=spec, df=df, fan_out=fan_out,
            owner=owner, cost=cost, zero_cost=zero, degree=kept.astype(np.int32), hubs=int(hubs.sum()))


def _sorted_unique(refs: np.ndarray) -> np.ndarray:
    """``np.unique`` of an object array of refs, through Arrow's hash unique and string sort (UTF-8 byte order
    is Python's str order): ~2-3x faster than numpy's sort of Python strings on 250k refs.

    >>> _sorted_unique(np.array(["b", "a", "é", "b"], dtype=object)).tolist()
    ['a', 'b', 'é']
    """
    if not len(refs):
        return np.unique(refs)
    distinct = pc.unique(pa.array(refs, type=pa.large_string()))
    return distinct.take(pc.sort_indices(distinct)).to_numpy(zero_copy_only=False)


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
    _lock: Any = field(default_factory=threading.Lock, repr=False, compare=False)

    def transposed(self) -> tuple[np.ndarray, np.ndarray]:
        """(indptr over peers, entry ids): each node's incoming entries, ascending entry id (read order)."""
        cached = self._lazy.get("transposed")
        if cached is None:
            with self._lock:  # one build when the background build and a query ask together
                cached = self._lazy.get("transposed")
                if cached is None:
                    cached = self._lazy["transposed"] = self._transpose()
        return cached

    def _transpose(self) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`transposed`'s build."""
        order = stable_order(self.peer, len(self.truncated))
        counts = np.bincount(self.peer, minlength=len(self.truncated))
        return np.concatenate([[0], np.cumsum(counts)]).astype(np.int64), order

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


def _with_prefix(refs: np.ndarray, name: str) -> np.ndarray:
    """Positions of the sorted ``refs`` whose text before the first ':' is ``name``: ``name`` itself and the
    ``name:`` prefix range (';' follows ':'), found by bisection, not by splitting every ref."""
    bounds = np.searchsorted(refs, np.array([name, name + ":", name + ";"], dtype=object))
    exact = np.arange(bounds[0], bounds[1])
    return np.concatenate([exact[refs[exact] == name], np.arange(bounds[1], bounds[2])]).astype(np.int64)


@dataclass(frozen=True)
class Coded:
    """The traversal index's node numbering: its sorted refs, the codes of :func:`structural_refs` by name, and
    each adjacency node's code (by adjacency code)."""
    refs: np.ndarray
    structural: dict
    adjacency: np.ndarray


def _looked_up(state, adjacency) -> Coded:
    """:class:`Coded` for an adjacency built on its own (kept from an earlier state): the union of refs sorted,
    every other ref looked up in it."""
    named = structural_refs(state.parents, state.chunks, state.documents)
    members = (np.asarray(named[k], dtype=object) for k in ("chunk", "parent", "document"))
    refs = _sorted_unique(np.concatenate([np.asarray(adjacency.ref_array, dtype=object), *members]))
    lookup = _lookup(refs)
    return Coded(refs, {k: lookup(v) for k, v in named.items()}, lookup(adjacency.ref_array))


def _lookup(refs: np.ndarray):
    """Encoded refs -> their codes in the sorted ``refs`` (-1 when absent), by hash, not a dict per ref."""
    index = pd.Index(refs, dtype=object)
    return lambda values: index.get_indexer(np.asarray(values, dtype=object)).astype(np.int64)


def _sorted_structure(parents, chunks, docs, codes: dict, n: int) -> tuple[np.ndarray, ...]:
    """The structural entries (node, peer, type, direction), each node's in ``neighbors()`` order: ``project``'s
    tuples sorted, i.e. by (ordinal, peer ref, type name, direction name). Codes of the sorted refs compare as the
    refs do; ``hierarchy`` < ``sequence`` as the type codes 0 < 1; ``in`` < ``out`` reverses direction codes."""
    node, peer, etype, direction, ordinal = structural_entries(parents, chunks, docs, codes, n)
    order = np.lexsort((-direction, etype, peer, ordinal, node))
    return node[order], peer[order], etype[order], direction[order]
