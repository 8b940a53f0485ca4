"""The ``mentions`` and ``related`` edges of the entity graph, gathered as integer codes and written as columns.

Extraction of a large corpus yields tens of edges per short passage (every two entities named in one chunk
are related): 10k passages give about 600k edges with their evidence. Held as a tuple, dict and set per pair
and then as a dict per row, they took most of the peak memory of ``kb.extract_entities()`` (1.8 GB at 10k
passages, 17 GB at 100k). Here each entity id and chunk ref is numbered once; a mention is two integers and
a related pair's chunk three, in flat arrays; the rows are ordered, deduplicated and counted by numpy, the
edge ids hashed column-wise (:func:`crux_nb.store.edge_ids.edge_ids`, byte for byte ``stable_id``'s) and
every string column is one Arrow take. The frames are those of the row-by-row build, row for row.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable

import numpy as np
import pandas as pd
import pyarrow as pa

from ..refs import EntityRef, encode_ref
from ..schema import coerce, empty_frame
from ..store.edge_ids import constant, edge_ids, head_keys, hex_ids, strings, text_column, text_ranks

__all__ = ["EdgeCodes"]


def _ranks(values: list[str]) -> tuple[np.ndarray, np.ndarray]:
    """``(rank, by_rank)`` of distinct values: each value's place in code-point order, and the codes in that order."""
    rank, _ = text_ranks(strings(values))
    by_rank = np.empty(len(values), dtype=np.int64)
    by_rank[rank] = np.arange(len(values), dtype=np.int64)
    return rank.astype(np.int64), by_rank


def _codes(values: array) -> np.ndarray:
    return np.frombuffer(values, dtype=np.int64) if len(values) else np.zeros(0, dtype=np.int64)


class EdgeCodes:
    """Mentions ``(chunk, entity)`` and related pairs ``(entity a, entity b, chunk)`` with the first description
    of each pair, as codes; :meth:`frames` writes the ``edges`` and ``edge_evidence`` frames.

    >>> codes = EdgeCodes({"chunk:a.md:c0000": "a.md"})
    >>> codes.mention("chunk:a.md:c0000", "ada-lovelace")
    >>> codes.relate("ada-lovelace", "london", ["chunk:a.md:c0000", "chunk:gone.md:c0000"], "Ada lived in London.")
    >>> edges, evidence = codes.frames("entities")
    >>> for row in edges[["type", "from_ref", "to_ref", "weight", "description"]].itertuples(index=False):
    ...     print(*row)
    mentions chunk:a.md:c0000 entity:ada-lovelace 1.0 nan
    related entity:ada-lovelace entity:london 1.0 Ada lived in London.
    >>> evidence["chunk_ref"].tolist()
    ['chunk:a.md:c0000', 'chunk:a.md:c0000']
    """

    def __init__(self, chunk_sources: dict[str, str]) -> None:
        self._chunk_sources = chunk_sources
        self._chunks = {ref: i for i, ref in enumerate(chunk_sources)}
        self._entities: dict[str, int] = {}
        self._mentions = (array("q"), array("q"))  # chunk, entity
        self._related = (array("q"), array("q"), array("q"))  # entity a < entity b (as ids), chunk
        self._described: dict[int, str] = {}  # a << 32 | b -> the first description given

    def _entity(self, eid: str) -> int:
        code = self._entities.get(eid)
        if code is None:
            code = self._entities[eid] = len(self._entities)
        return code

    def mention(self, chunk: str, eid: str) -> None:
        """Chunk ``chunk`` (a known chunk ref) mentions entity ``eid``."""
        self._mentions[0].append(self._chunks[chunk])
        self._mentions[1].append(self._entity(eid))

    def relate(self, a: str, b: str, chunks: Iterable[str], description: str | None) -> None:
        """Entities ``a < b`` named together in ``chunks`` (refs of removed chunks are skipped; none left: no
        pair); the pair's description is the first non-empty one given."""
        known = [self._chunks[c] for c in chunks if c in self._chunks]
        if not known:
            return
        ca, cb = self._entity(a), self._entity(b)
        for chunk in known:
            self._related[0].append(ca)
            self._related[1].append(cb)
            self._related[2].append(chunk)
        if description:
            self._described.setdefault(ca << 32 | cb, description)

    def frames(self, stage: str) -> tuple[pd.DataFrame, pd.DataFrame]:
        """``(edges, evidence)`` ordered as they are stored: edges by id, evidence by edge id, then chunk ref."""
        eids, chunks = list(self._entities), list(self._chunks)
        if not (self._mentions[0] or self._related[0]):
            return empty_frame("edges"), empty_frame("edge_evidence")
        refs = [encode_ref(EntityRef(e)) for e in eids]
        e_rank, e_by_rank = _ranks(eids)
        c_rank, c_by_rank = _ranks(chunks)
        tables = {"chunks": strings(chunks), "refs": strings(refs),
                  "sources": strings([self._chunk_sources[c] for c in chunks])}
        m_chunk, m_entity = self._mention_rows(e_rank, e_by_rank, c_rank, c_by_rank)
        r_from, r_to, weights, descriptions, ev_edge, ev_chunk = self._related_rows(e_rank, e_by_rank, c_rank,
                                                                                   c_by_rank, refs)
        n_m, n_r = len(m_chunk), len(r_from)
        m_heads = edge_ids(constant("directed", n_m), (m_chunk, tables["chunks"]), (m_entity, tables["refs"]),
                           constant("mentions", n_m), stage)
        r_heads = edge_ids(constant("symmetric", n_r), (r_from, tables["refs"]), (r_to, tables["refs"]),
                           constant("related", n_r), stage)
        heads = np.concatenate([m_heads, r_heads])
        order = np.argsort(head_keys(heads), kind="stable")  # rows by edge id (the ids are the heads in hex)
        related = (order >= n_m).astype(np.int64)
        edges = pd.DataFrame({
            "edge_id": pd.Series(hex_ids(heads[order]), dtype="str"),
            "type": text_column((related, strings(["mentions", "related"]))),
            "from_ref": text_column((np.concatenate([m_chunk, len(chunks) + r_from])[order],
                                  pa.concat_arrays([tables["chunks"], tables["refs"]]))),
            "to_ref": text_column((np.concatenate([m_entity, r_to])[order], tables["refs"])),
            "direction": text_column((related, strings(["directed", "symmetric"]))),
            "description": text_column((np.concatenate([np.full(n_m, -1), np.arange(n_r)])[order],
                                        strings(descriptions))),
            "weight": np.concatenate([np.ones(n_m), weights])[order],
            "stage": text_column(constant(stage, n_m + n_r)),
        })
        # evidence rows by edge id, then chunk ref: a pair's rows come in chunk order, and the sort is stable
        ev_edge = np.concatenate([np.arange(n_m), n_m + ev_edge])
        position = np.empty(n_m + n_r, dtype=np.int64)
        position[order] = np.arange(n_m + n_r)
        rows = np.argsort(position[ev_edge], kind="stable")
        ev_edge, ev_chunks = ev_edge[rows], np.concatenate([m_chunk, ev_chunk])[rows]
        evidence = pd.DataFrame({
            "edge_id": pd.Series(hex_ids(heads[ev_edge]), dtype="str"),
            "source_id": text_column((ev_chunks, tables["sources"])),
            "chunk_ref": text_column((ev_chunks, tables["chunks"])),
            "provenance": text_column(constant("derived", len(ev_chunks))),
        })
        return coerce(edges, "edges"), coerce(evidence, "edge_evidence")

    def _mention_rows(self, e_rank, e_by_rank, c_rank, c_by_rank) -> tuple[np.ndarray, np.ndarray]:
        """Distinct mentions ``(chunk codes, entity codes)`` by (chunk ref, entity id)."""
        n_e = len(e_rank)
        keys = np.unique(c_rank[_codes(self._mentions[0])] * n_e + e_rank[_codes(self._mentions[1])])
        return c_by_rank[keys // n_e], e_by_rank[keys % n_e]

    def _related_rows(self, e_rank, e_by_rank, c_rank, c_by_rank, refs):
        """Distinct pairs by (a, b): from / to entity codes (the refs in order), weights (distinct chunks) and
        descriptions; their evidence as (pair index, chunk code) by pair, then chunk ref."""
        a, b, chunk = (_codes(v) for v in self._related)
        ra, rb, rc = e_rank[a], e_rank[b], c_rank[chunk]
        order = np.lexsort((rc, rb, ra))
        ra, rb, rc = ra[order], rb[order], rc[order]
        fresh = np.ones(len(order), dtype=bool)
        fresh[1:] = (ra[1:] != ra[:-1]) | (rb[1:] != rb[:-1]) | (rc[1:] != rc[:-1])
        ra, rb, rc = ra[fresh], rb[fresh], rc[fresh]
        starts = np.ones(len(ra), dtype=bool)
        starts[1:] = (ra[1:] != ra[:-1]) | (rb[1:] != rb[:-1])
        pair_of_row = np.cumsum(starts) - 1
        first = np.flatnonzero(starts)
        pa_codes, pb_codes = e_by_rank[ra[first]], e_by_rank[rb[first]]
        weights = np.diff(np.append(first, len(ra))).astype(np.float64)
        described = self._described
        descriptions = [described.get(x << 32 | y) for x, y in zip(pa_codes.tolist(), pb_codes.tolist())]
        ref_rank, _ = _ranks(refs)
        swap = ref_rank[pa_codes] > ref_rank[pb_codes]  # an edge's ends are its two refs in order
        r_from, r_to = np.where(swap, pb_codes, pa_codes), np.where(swap, pa_codes, pb_codes)
        return r_from, r_to, weights, descriptions, pair_of_row, c_by_rank[rc]
