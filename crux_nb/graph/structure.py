"""Structural edges (``hierarchy`` and ``sequence``), projected from sections and chunk order.

They are never stored. Upstream's rules (section 1.4): a document points out to
its sections and to its parentless chunks; a section points in to its document
and out to its chunks; a chunk points in to its section (or its document) and
along ``sequence`` to the next and previous chunk of the whole source.
"""

from __future__ import annotations

import numpy as np
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


def encoded_refs(kind: str, *columns: pd.Series) -> np.ndarray:
    """``encode_ref`` of a column of refs of ``kind`` (one column per segment), as an object array.

    >>> encoded_refs("parent", pd.Series(["a:b%", "c"]), pd.Series(["p1", "p2"])).tolist()
    ['parent:a%3Ab%25:p1', 'parent:c:p2']
    """
    joined = encoded_ref_column(kind, *columns)
    return joined.to_numpy(dtype=object) if len(joined) else np.zeros(0, dtype=object)


def encoded_ref_column(kind: str, *columns: pd.Series) -> pd.Series:
    """:func:`encoded_refs` as a string Series (no Python string per value)."""
    # encode_ref's escaping, column-wise: '%' first, so the '%' of an escaped ':' is not escaped again
    escaped = [c.reset_index(drop=True).str.replace("%", "%25", regex=False).str.replace(":", "%3A", regex=False)
               for c in columns]
    joined = escaped[0]
    for segment in escaped[1:]:
        joined = joined + ":" + segment
    return kind + ":" + joined


def structural_refs(parents: pd.DataFrame, chunks: pd.DataFrame, documents: pd.DataFrame) -> dict[str, pd.Series]:
    """The refs :func:`structural_entries` reads codes of, by name: each chunk's, its document's and (rows with a
    section only) its section's; each section's and its document's; each document's."""
    has = chunks["parent_id"].notna()
    return {"chunk": chunks["ref"].reset_index(drop=True),
            "chunk_document": encoded_ref_column("document", chunks["source_id"]),
            "chunk_parent": encoded_ref_column("parent", chunks["source_id"][has], chunks["parent_id"][has]),
            "parent": encoded_ref_column("parent", parents["source_id"], parents["parent_id"]),
            "parent_document": encoded_ref_column("document", parents["source_id"]),
            "document": encoded_ref_column("document", documents["source_id"])}


def structural_entries(parents: pd.DataFrame, chunks: pd.DataFrame, documents: pd.DataFrame,
                       codes: dict[str, np.ndarray], n: int) -> tuple[np.ndarray, ...]:
    """Every projected entry of every chunk, section and document row at once: (node, peer, type, direction,
    ordinal) code arrays (type 0 ``hierarchy``, 1 ``sequence``; direction 0 ``out``, 1 ``in``), unordered.

    What :meth:`StructureIndex.project` returns for each row's ref, a repeated ref once per row (its entries
    repeated), so a build from these equals one from ``project`` row by row. ``codes`` holds the codes (-1 when
    unknown, else in ``range(n)``) of each of :func:`structural_refs`.
    """
    c_code = codes["chunk"]
    c_ord = chunks["ordinal"].to_numpy(dtype=np.int64)
    c_doc = codes["chunk_document"]
    c_par = np.full(len(chunks), -1, dtype=np.int64)  # per chunk row: its section's code, -1 for none
    c_par[chunks["parent_id"].notna().to_numpy()] = codes["chunk_parent"]
    p_code = codes["parent"]
    p_doc = codes["parent_document"]
    d_rows = np.bincount(_known(codes["document"]), minlength=n)
    p_rows = np.bincount(_known(p_code), minlength=n)  # a repeated section projects once per row
    p_ord = np.zeros(n, dtype=np.int64)
    last = _last(p_code)  # a dict from the section rows: the last row's ordinal wins
    p_ord[p_code[last]] = parents["ordinal"].to_numpy(dtype=np.int64)[last]
    c_par = np.where((c_par >= 0) & (p_rows[c_par] > 0), c_par, -1)  # a gone section: the document is the parent
    at = np.zeros(n, dtype=np.int64)
    last = _last(c_code)  # a repeated chunk ref projects from its last row
    at[c_code[last]] = last
    parts = [_chunk_rows(c_code, c_ord, c_doc, c_par, chunks["source_id"], p_ord, at[c_code])]
    # a section: in to its document, out to its chunks
    parts.append((p_code, required_codes(p_doc), np.zeros(len(p_code)), np.ones(len(p_code)), p_ord[p_code]))
    rows = np.repeat(np.flatnonzero(c_par >= 0), p_rows[c_par[c_par >= 0]])
    parts.append((c_par[rows], c_code[rows], np.zeros(len(rows)), np.zeros(len(rows)), c_ord[rows]))
    # a document: out to its sections and to its parentless chunks (not to those whose section is gone)
    sections, first = np.unique(p_code, return_index=True)
    doc = p_doc[first]
    keep = np.repeat(np.arange(len(sections)), d_rows[doc] * (doc >= 0))
    parts.append((doc[keep], sections[keep], np.zeros(len(keep)), np.zeros(len(keep)), p_ord[sections[keep]]))
    loose = chunks["parent_id"].isna().to_numpy() & (c_doc >= 0)
    rows = np.repeat(np.flatnonzero(loose), d_rows[c_doc[loose]])
    parts.append((c_doc[rows], c_code[rows], np.zeros(len(rows)), np.zeros(len(rows)), c_ord[rows]))
    return tuple(np.concatenate([np.asarray(p[i], dtype=np.int64) for p in parts]) for i in range(5))


def _chunk_rows(code, ordinal, doc, parent, sources, p_ord, at) -> tuple[np.ndarray, ...]:
    """A chunk row's entries, read at row ``at`` (its ref's last row): in from its section or else its
    document, and ``sequence`` out to the next and in from the previous row of the same source."""
    up = parent[at] >= 0
    peer = np.where(up, parent[at], required_codes(np.where(up, 0, doc[at])))
    ord_ = np.where(up, p_ord[np.maximum(parent[at], 0)], ordinal[at])
    src = pd.factorize(sources)[0]
    same = np.zeros(len(code) + 1, dtype=bool)  # same[i + 1]: rows i and i + 1 are of one source
    same[1:-1] = src[1:] == src[:-1]
    nxt, prv = np.flatnonzero(same[at + 1]), np.flatnonzero(same[at])
    n_up, n_next, n_prev = len(code), len(nxt), len(prv)
    return (np.concatenate([code, code[nxt], code[prv]]),
            np.concatenate([peer, code[at[nxt] + 1], code[at[prv] - 1]]),
            np.concatenate([np.zeros(n_up), np.ones(n_next + n_prev)]),
            np.concatenate([np.ones(n_up), np.zeros(n_next), np.ones(n_prev)]),
            np.concatenate([ord_, ordinal[at[nxt] + 1], ordinal[at[prv] - 1]]))


def _last(codes: np.ndarray) -> np.ndarray:
    """The row of each distinct code's last occurrence (what a dict built from the rows keeps)."""
    _, first_reversed = np.unique(codes[::-1], return_index=True)
    return len(codes) - 1 - first_reversed


def _known(codes: np.ndarray) -> np.ndarray:
    return codes[codes >= 0]


def required_codes(codes: np.ndarray) -> np.ndarray:
    """``codes``, raising KeyError as a dict lookup would when a ref a projection names is not indexed."""
    if len(codes) and codes.min() < 0:
        raise KeyError("a ref the structure or the edges name is not among the indexed refs")
    return codes


def distinct_sorted(values: np.ndarray, *, runs: bool = False) -> np.ndarray:
    """``np.unique(values)`` of integers by one sort and a compare: numpy 2.4's integer ``np.unique`` hashes
    first, several times slower (a hop's few thousand codes, a view's million (node, peer) pairs). ``runs``: the
    values are mostly in ascending runs (keys of entries grouped by node), which numpy's stable sort (timsort)
    merges in a pass where its default sort starts over (2.8M keys: 1 ms against 0.1 s).

    >>> distinct_sorted(np.array([3, 1, 3, 2])).tolist(), distinct_sorted(np.array([1, 3, 2, 2]), runs=True).tolist()
    ([1, 2, 3], [1, 2, 3])
    """
    values = np.sort(values, kind="stable" if runs else None)
    if len(values) > 1:
        values = values[np.concatenate(([True], values[1:] != values[:-1]))]
    return values


def stable_order(values: np.ndarray, upper: int) -> np.ndarray:
    """``np.argsort(values, kind="stable")`` of integers in ``range(upper)``, by 16-bit digits, lowest first:
    numpy sorts ``uint16`` by radix, so two passes over 2.8M values below 2**32 cost under half of one int64 sort.

    >>> stable_order(np.array([70000, 3, 70000, 65536, 3]), 70001).tolist()
    [1, 4, 3, 0, 2]
    """
    order = np.argsort((values & 0xFFFF).astype(np.uint16), kind="stable")
    shift = 16
    while (upper - 1) >> shift > 0:
        digit = ((values[order] >> shift) & 0xFFFF).astype(np.uint16)
        order = order[np.argsort(digit, kind="stable")]
        shift += 16
    return order
