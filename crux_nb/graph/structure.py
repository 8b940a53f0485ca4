"""Structural edges (``hierarchy`` and ``sequence``), projected from sections and chunk order.

They are never stored. Upstream's rules (section 1.4): a document points out to
its sections and to its parentless chunks; a section points in to its document
and out to its chunks; a chunk points in to its section (or its document) and
along ``sequence`` to the next and previous chunk of the whole source.
"""

from __future__ import annotations


import pandas as pd

from ..refs import DocumentRef, ParentRef, encode_ref

# one projected neighbour: (sort ordinal, encoded ref, type, direction)
Projected = tuple[int, str, str, str]


class StructureIndex:
    """Per-source positions of sections and chunks; each lookup costs O(degree)."""

    def __init__(self, parents: pd.DataFrame, chunks: pd.DataFrame):
        # frames arrive sorted by (source_id, ordinal, id): positions follow source order
        self._chunk_refs: list[str] = chunks["ref"].tolist()
        self._chunk_ord: list[int] = chunks["ordinal"].tolist()
        self._chunk_source: list[str] = chunks["source_id"].tolist()
        parent_ids = chunks["parent_id"]
        self._chunk_parent: list[str | None] = [None if p != p else p for p in parent_ids.tolist()]
        self._chunk_pos = {ref: i for i, ref in enumerate(self._chunk_refs)}
        self._parent_ord: dict[tuple[str, str], int] = {
            (s, p): o for s, p, o in zip(parents["source_id"], parents["parent_id"], parents["ordinal"])}
        self._parent_refs = {key: encode_ref(ParentRef(*key)) for key in self._parent_ord}
        self._source_parents: dict[str, list[tuple[int, str]]] = {}
        for (s, p), o in self._parent_ord.items():
            self._source_parents.setdefault(s, []).append((o, self._parent_refs[(s, p)]))
        self._parent_chunks: dict[tuple[str, str], list[int]] = {}
        self._loose_chunks: dict[str, list[int]] = {}
        for i, (s, p) in enumerate(zip(self._chunk_source, self._chunk_parent)):
            if p is None:
                self._loose_chunks.setdefault(s, []).append(i)
            else:
                self._parent_chunks.setdefault((s, p), []).append(i)
        self._sources = set(self._chunk_source) | {s for s, _ in self._parent_ord}

    def project(self, kind: str, segments: tuple[str, ...], encoded: str) -> list[Projected]:
        if kind == "document":
            return self._document(segments[0])
        if kind == "parent":
            return self._parent(segments[0], segments[1])
        if kind == "chunk":
            return self._chunk(encoded)
        return []

    def _document(self, source: str) -> list[Projected]:
        if source not in self._sources:
            return []
        out = [(o, ref, "hierarchy", "out") for o, ref in self._source_parents.get(source, ())]
        out += [(self._chunk_ord[i], self._chunk_refs[i], "hierarchy", "out") for i in self._loose_chunks.get(source, ())]
        return out

    def _parent(self, source: str, parent: str) -> list[Projected]:
        ordinal = self._parent_ord.get((source, parent))
        if ordinal is None:
            return []
        out = [(ordinal, encode_ref(DocumentRef(source)), "hierarchy", "in")]
        out += [(self._chunk_ord[i], self._chunk_refs[i], "hierarchy", "out")
                for i in self._parent_chunks.get((source, parent), ())]
        return out

    def _chunk(self, encoded: str) -> list[Projected]:
        i = self._chunk_pos.get(encoded)
        if i is None:
            return []
        source, parent = self._chunk_source[i], self._chunk_parent[i]
        ordinal = self._parent_ord.get((source, parent)) if parent is not None else None
        if ordinal is not None:
            out = [(ordinal, self._parent_refs[(source, parent)], "hierarchy", "in")]
        else:  # parentless, or its section is gone: the document is the parent (upstream quirk)
            out = [(self._chunk_ord[i], encode_ref(DocumentRef(source)), "hierarchy", "in")]
        if i + 1 < len(self._chunk_refs) and self._chunk_source[i + 1] == source:
            out.append((self._chunk_ord[i + 1], self._chunk_refs[i + 1], "sequence", "out"))
        if i > 0 and self._chunk_source[i - 1] == source:
            out.append((self._chunk_ord[i - 1], self._chunk_refs[i - 1], "sequence", "in"))
        return out
