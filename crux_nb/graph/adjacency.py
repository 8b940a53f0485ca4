"""A CSR adjacency index over persisted semantic edges.

Built once per knowledge-base state. Every edge gives an ``out`` entry on its
``from`` ref and an ``in`` entry on its ``to`` ref; a symmetric edge also gives
the reverse pair, so an undirected read sees its peer twice (as upstream).
Within a node, entries are ordered by (encoded peer ref, type, edge id,
direction), which is upstream's order; refs are codes of a sorted
factorisation, so comparing codes compares strings in code-point order.
"""

from __future__ import annotations

from functools import cached_property

import numpy as np
import pandas as pd

from . import compiled, frontier_kernel
from .structure import distinct_sorted

OUT, IN = 0, 1
DIRECTION_NAMES = ("out", "in")


class AdjacencyIndex:
    def __init__(self, edges: pd.DataFrame, evidence: pd.DataFrame, *,
                 coded: tuple[np.ndarray, np.ndarray, np.ndarray] | None = None):
        """``coded``: (refs, from codes, to codes), what the factorisation below gives, made by the caller
        (:func:`~crux_nb.graph.build.build_with_adjacency`): the edges' distinct ends sorted, and their codes."""
        n_edges = len(edges)
        if coded is None:
            ends = pd.concat([edges["from_ref"], edges["to_ref"]], ignore_index=True)
            codes, uniques = pd.factorize(ends, sort=True)
            src, dst = codes[:n_edges], codes[n_edges:]
        else:
            uniques, src, dst = coded
        type_codes, self.type_names = pd.factorize(edges["type"], sort=True)
        self.type_names = list(self.type_names)
        sym = (edges["direction"] == "symmetric").to_numpy()
        node, peer, direction, edge_row = _entries(src, dst, sym)
        etype = np.asarray(type_codes, dtype=np.int32)[edge_row]
        order = _entry_order(node, peer, etype, edge_row, direction, n_nodes=len(uniques),
                             n_types=len(self.type_names), ordered=not sym.any())
        counts = np.bincount(node, minlength=len(uniques))
        # through numpy: iterating the string index itself costs ~10x more per ref
        self._install(edges, evidence, np.asarray(uniques, dtype=object), self.type_names, peer=peer[order],
                      direction=direction[order], edge_row=edge_row[order], etype=etype[order],
                      indptr=np.concatenate([[0], np.cumsum(counts)]))

    def _install(self, edges: pd.DataFrame, evidence: pd.DataFrame, ref_array: np.ndarray, type_names: list[str],
                 *, peer: np.ndarray, direction: np.ndarray, edge_row: np.ndarray, etype: np.ndarray,
                 indptr: np.ndarray) -> None:
        self.ref_array, self.type_names = ref_array, type_names
        self.peer, self.direction, self.edge_row, self.etype, self.indptr = peer, direction, edge_row, etype, indptr
        self.type_code = {name: i for i, name in enumerate(self.type_names)}
        self._edges, self._evidence = edges, evidence
        self._masks: dict[tuple, np.ndarray] = {}
        self._seen_pool: list[tuple[np.ndarray, np.ndarray]] = []

    def arrays(self) -> dict[str, np.ndarray]:
        """What :meth:`from_arrays` takes back with the edge frames (a disk cache stores them:
        :mod:`crux_nb.graph.cached`); the refs are left to the caller (the traversal index holds them all)."""
        return {"type_names": np.array(self.type_names, dtype=object), "peer": self.peer,
                "direction": self.direction, "edge_row": self.edge_row, "etype": self.etype, "indptr": self.indptr}

    @classmethod
    def from_arrays(cls, arrays: dict[str, np.ndarray], ref_array: np.ndarray, edges: pd.DataFrame,
                    evidence: pd.DataFrame) -> "AdjacencyIndex":
        """The index :meth:`arrays` came from, over ``edges`` and ``evidence`` and its nodes' ``ref_array``."""
        index = cls.__new__(cls)
        index._install(edges, evidence, ref_array, arrays["type_names"].tolist(), peer=arrays["peer"],
                       direction=arrays["direction"], edge_row=arrays["edge_row"], etype=arrays["etype"],
                       indptr=arrays["indptr"])
        return index

    @cached_property
    def refs(self) -> list[str]:
        """The node refs by code (built on first use: the traversal index reads :attr:`ref_array`)."""
        return self.ref_array.tolist()

    @cached_property
    def code(self) -> dict[str, int]:
        """Node code by ref."""
        return {ref: i for i, ref in enumerate(self.refs)}

    @cached_property
    def _evidence_index(self) -> tuple:
        """Evidence rows grouped per edge row, as integer codes into each column's distinct values (a million
        Python strings per column would cost ~100 MB each, the codes a few MB); built on the first read of
        evidence: a traversal never reads it (at 500k evidence rows it costs ~0.2 s)."""
        edges, evidence = self._edges, self._evidence
        # evidence is sorted by edge id, like edges
        ev_rows = pd.Index(edges["edge_id"]).get_indexer(evidence["edge_id"])
        ev_counts = np.bincount(ev_rows, minlength=len(edges)) if len(ev_rows) else np.zeros(len(edges), np.int64)
        return (np.concatenate([[0], np.cumsum(ev_counts)]), _codes(evidence["source_id"]),
                _codes(evidence["chunk_ref"]), _codes(evidence["provenance"]))

    def entries(self, encoded: str, *, type_codes: set[int] | None, direction: int | None) -> list[tuple[str, int, int, int]]:
        """(peer ref, type code, direction, edge row) for one node, in upstream order."""
        code = self.code.get(encoded)
        if code is None:
            return []
        start, stop = self.indptr[code], self.indptr[code + 1]
        if start == stop:
            return []
        peers = self.peer[start:stop].tolist()
        types = self.etype[start:stop].tolist()
        dirs = self.direction[start:stop].tolist()
        rows = self.edge_row[start:stop].tolist()
        refs = self.refs
        return [(refs[p], t, d, r) for p, t, d, r in zip(peers, types, dirs, rows)
                if (type_codes is None or t in type_codes) and (direction is None or d == direction)]

    def evidence(self, edge_row: int) -> list[tuple[str, str, str]]:
        indptr, (sources, source_names), (chunks, chunk_names), (provenance, provenance_names) = \
            self._evidence_index
        start, stop = indptr[edge_row], indptr[edge_row + 1]
        return [(source_names[s], chunk_names[c], provenance_names[p])
                for s, c, p in zip(sources[start:stop].tolist(), chunks[start:stop].tolist(),
                                   provenance[start:stop].tolist())]

    def _mask(self, type_codes: set[int] | None, direction: int | None) -> np.ndarray:
        key = (None if type_codes is None else frozenset(type_codes), direction)
        mask = self._masks.get(key)
        if mask is None:
            mask = np.ones(len(self.peer), dtype=bool)
            if type_codes is not None:
                mask &= np.isin(self.etype, np.fromiter(type_codes, dtype=np.int32))
            if direction is not None:
                mask &= self.direction == direction
            self._masks[key] = mask
        return mask

    def reach(self, start: int, *, depth: int, type_codes: set[int] | None,
              direction: int | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Breadth-first over the CSR arrays: (node codes, hop distances, each hop's end in them) within
        ``depth`` hops, start excluded; each hop's codes ascending."""
        n = len(self.ref_array)
        depth = min(depth, n)  # no node is further than n hops; the hop ends are kept per hop
        mask = self._mask(type_codes, direction)
        how = compiled.mode()
        # ready() first: it implies numba is installed, and installed() (a module search) costs more than a
        # small reach
        if how != "numpy" and compiled.ready("reach"):
            return self._reach_compiled(start, depth, mask)
        if how != "numpy" and frontier_kernel.installed():
            if how == "kernel":
                return self._reach_compiled(start, depth, mask)
            compiled.warm("reach", lambda: self._reach_compiled(start, depth, mask))  # this call: numpy's
        seen = np.zeros(n, dtype=bool)
        seen[start] = True
        frontier = np.array([start])
        found, dist = [], []
        for hop in range(1, depth + 1):
            starts, stops = self.indptr[frontier], self.indptr[frontier + 1]
            lengths = stops - starts
            total = int(lengths.sum())
            if total == 0:
                break
            offsets = np.repeat(starts - np.concatenate([[0], np.cumsum(lengths)[:-1]]), lengths)
            entries = offsets + np.arange(total)
            peers = self.peer[entries[mask[entries]]]
            peers = distinct_sorted(peers[~seen[peers]])
            if len(peers) == 0:
                break
            seen[peers] = True
            found.append(peers)
            dist.append(np.full(len(peers), hop, dtype=np.int64))
            frontier = peers
        ends = np.cumsum([len(f) for f in found] + [0] * (depth - len(found)), dtype=np.int64)
        if not found:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), ends
        return np.concatenate(found), np.concatenate(dist), ends


    def _reach_compiled(self, start: int, depth: int, mask: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """:meth:`reach` as one compiled loop (:mod:`.compiled`): the same nodes in the same order."""
        pool = self._seen_pool  # (a zeroed byte per node, a slot per node), given back zeroed; one per concurrent call
        seen, slots = pool.pop() if pool else (np.zeros(len(self.ref_array), dtype=np.uint8),
                                               np.empty(len(self.ref_array), dtype=np.int64))
        found = compiled.reach_kernel()(self.indptr, self.peer, mask, start, depth, seen, slots)
        pool.append((seen, slots))
        if not compiled.ready("reach"):
            compiled.mark_ready("reach")
        return found


def _entries(src: np.ndarray, dst: np.ndarray, sym: np.ndarray) -> tuple[np.ndarray, ...]:
    """(node, peer, direction, edge row) of every entry: an ``out`` entry on each edge's source and an ``in`` entry
    on its target, the reverse pair too for a symmetric edge. Without symmetric edges they come in (edge row,
    direction) order, each row's ``out`` entry then its ``in`` entry (:func:`_entry_order` needs no sort for it).

    >>> [a.tolist() for a in _entries(np.array([5, 6]), np.array([7, 8]), np.array([False, False]))]
    [[5, 7, 6, 8], [7, 5, 8, 6], [0, 1, 0, 1], [0, 0, 1, 1]]
    """
    n = len(src)
    if sym.any():
        rows = np.arange(n)
        return (np.concatenate([src, dst, dst[sym], src[sym]]), np.concatenate([dst, src, src[sym], dst[sym]]),
                np.concatenate([np.full(n, OUT, np.int8), np.full(n, IN, np.int8), np.full(sym.sum(), OUT, np.int8),
                                np.full(sym.sum(), IN, np.int8)]),
                np.concatenate([rows, rows, rows[sym], rows[sym]]))
    node, peer = np.empty(2 * n, dtype=np.int64), np.empty(2 * n, dtype=np.int64)
    node[0::2], node[1::2], peer[0::2], peer[1::2] = src, dst, dst, src
    # narrow types from the start: at a million edges each wide temporary is 16 MB of fresh pages
    return node, peer, np.tile(np.array([OUT, IN], dtype=np.int8), n), np.repeat(np.arange(n), 2)


def _entry_order(node: np.ndarray, peer: np.ndarray, etype: np.ndarray, edge_row: np.ndarray,
                 direction: np.ndarray, *, n_nodes: int, n_types: int, ordered: bool = False) -> np.ndarray:
    """The order of the entries by (node, peer, type, edge row, direction): ``np.lexsort`` of those five keys, as
    one sort of int64 keys where they fit (~3x faster at a million entries: numpy sorts int64 with SIMD).
    ``ordered``: the entries already come in (edge row, direction) order.

    >>> args = [np.array(v) for v in ([1, 0, 1, 0], [0, 1, 0, 1], [0, 0, 0, 0], [0, 0, 1, 1], [0, 1, 1, 0])]
    >>> _entry_order(*args, n_nodes=2, n_types=1).tolist() == np.lexsort(args[::-1]).tolist()
    True
    """
    m = len(node)
    if m == 0 or n_nodes * n_nodes * max(n_types, 1) * m >= 2 ** 62:
        return np.lexsort((direction, edge_row, etype, peer, node))
    if ordered:  # ties in the key below keep the (edge row, direction) order through the position
        return np.sort(((node.astype(np.int64) * n_nodes + peer) * max(n_types, 1) + etype) * m + np.arange(m)) % m
    base = np.lexsort((direction, edge_row))
    key = ((node[base].astype(np.int64) * n_nodes + peer[base]) * max(n_types, 1) + etype[base]) * m
    return base[np.sort(key + np.arange(m)) % m]


def _codes(column: pd.Series) -> tuple[np.ndarray, list[str]]:
    codes, names = pd.factorize(column)
    return codes.astype(np.int32), names.tolist()  # not list(): that iterates the Arrow values one call each
