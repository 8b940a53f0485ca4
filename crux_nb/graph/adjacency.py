"""A CSR adjacency index over persisted semantic edges.

Built once per knowledge-base state. Every edge gives an ``out`` entry on its
``from`` ref and an ``in`` entry on its ``to`` ref; a symmetric edge also gives
the reverse pair, so an undirected read sees its peer twice (as upstream).
Within a node, entries are ordered by (encoded peer ref, type, edge id,
direction), which is upstream's order; refs are codes of a sorted
factorisation, so comparing codes compares strings in code-point order.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

OUT, IN = 0, 1
DIRECTION_NAMES = ("out", "in")


class AdjacencyIndex:
    def __init__(self, edges: pd.DataFrame, evidence: pd.DataFrame):
        ends = pd.concat([edges["from_ref"], edges["to_ref"]], ignore_index=True)
        codes, uniques = pd.factorize(ends, sort=True)
        n_edges = len(edges)
        src, dst = codes[:n_edges], codes[n_edges:]
        type_codes, self.type_names = pd.factorize(edges["type"], sort=True)
        self.type_names = list(self.type_names)
        sym = (edges["direction"] == "symmetric").to_numpy()
        rows = np.arange(n_edges)
        node = np.concatenate([src, dst, dst[sym], src[sym]])
        peer = np.concatenate([dst, src, src[sym], dst[sym]])
        direction = np.concatenate([np.full(n_edges, OUT), np.full(n_edges, IN),
                                    np.full(sym.sum(), OUT), np.full(sym.sum(), IN)])
        edge_row = np.concatenate([rows, rows, rows[sym], rows[sym]])
        etype = np.asarray(type_codes)[edge_row]
        # edges arrive sorted by edge id, so the edge row orders ties by edge id
        order = np.lexsort((direction, edge_row, etype, peer, node))
        self.peer = peer[order]
        self.direction = direction[order].astype(np.int8)
        self.edge_row = edge_row[order]
        self.etype = etype[order].astype(np.int32)
        counts = np.bincount(node, minlength=len(uniques))
        self.indptr = np.concatenate([[0], np.cumsum(counts)])
        self.refs: list[str] = list(uniques)
        self.code = {ref: i for i, ref in enumerate(self.refs)}
        self.type_code = {name: i for i, name in enumerate(self.type_names)}
        self.edge_types: list[str] = edges["type"].tolist()
        # evidence rows grouped per edge row (evidence is sorted by edge id, like edges)
        ev_rows = np.searchsorted(edges["edge_id"].to_numpy(), evidence["edge_id"].to_numpy())
        ev_counts = np.bincount(ev_rows, minlength=n_edges) if len(ev_rows) else np.zeros(n_edges, dtype=np.int64)
        self.ev_indptr = np.concatenate([[0], np.cumsum(ev_counts)])
        self.ev_source: list[str] = evidence["source_id"].tolist()
        self.ev_chunk: list[str] = evidence["chunk_ref"].tolist()
        self.ev_provenance: list[str] = evidence["provenance"].tolist()

    @property
    def n_entries(self) -> int:
        return len(self.peer)

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
        start, stop = self.ev_indptr[edge_row], self.ev_indptr[edge_row + 1]
        return [(self.ev_source[i], self.ev_chunk[i], self.ev_provenance[i]) for i in range(start, stop)]
