"""The immutable state of a knowledge base and the pure functions that change it.

A :class:`KBState` holds the six frames. Every change builds a new state from
the old one; the knowledge base swaps states only when the whole change
succeeded, so a failed call leaves nothing half-done.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from .._hashing import text_hash
from ..errors import CruxError
from ..refs import DocumentRef, ParentRef, as_ref, decode_ref, encode_ref
from ..schema import SCHEMAS, coerce, empty_frame, require_columns
from .chunking import source_rows
from .derived import derived, kept
from .ingest import SourceSpec
from .rows import DIRECTIONS, STRUCTURAL_TYPES, edge_rows, entity_rows  # noqa: F401 (re-exported)
from .edge_ids import id_keys
from .splice import (ascending, frame_refs, insert_by_key, insert_sorted, is_in, masked, plan_removal, rows_where,
                     values_where)
from .rows_fast import fast_edge_rows, fast_entity_rows

TABLES = tuple(SCHEMAS)


@dataclass(frozen=True)
class KBState:
    documents: pd.DataFrame = field(default_factory=lambda: empty_frame("documents"))
    parents: pd.DataFrame = field(default_factory=lambda: empty_frame("parents"))
    chunks: pd.DataFrame = field(default_factory=lambda: empty_frame("chunks"))
    entities: pd.DataFrame = field(default_factory=lambda: empty_frame("entities"))
    edges: pd.DataFrame = field(default_factory=lambda: empty_frame("edges"))
    edge_evidence: pd.DataFrame = field(default_factory=lambda: empty_frame("edge_evidence"))
    extractions: pd.DataFrame = field(default_factory=lambda: empty_frame("extractions"))
    community_generations: pd.DataFrame = field(default_factory=lambda: empty_frame("community_generations"))
    communities: pd.DataFrame = field(default_factory=lambda: empty_frame("communities"))
    community_members: pd.DataFrame = field(default_factory=lambda: empty_frame("community_members"))
    reports: pd.DataFrame = field(default_factory=lambda: empty_frame("reports"))
    report_findings: pd.DataFrame = field(default_factory=lambda: empty_frame("report_findings"))
    embeddings: pd.DataFrame = field(default_factory=lambda: empty_frame("embeddings"))
    version: int = 0
    #: how text becomes BM25 terms (a :class:`~crux_nb.store.lexical.LexicalSettings`; None: the default), set
    #: by the knowledge base from its configuration
    lexical: Any = None
    #: Shared by every state derived from this one (``replace`` copies the reference): caches that stay valid
    #: per source across changes, such as the lexical index's token arrays.
    shared: dict = field(default_factory=dict, compare=False, repr=False)
    #: Derived indexes (lexical index, graph indexes) built once per state (:meth:`cached`); a field, not a
    #: cached property, so two threads asking first cannot each make one (``replace`` gives a new state its own)
    cache: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    #: one lock per :meth:`cached` key
    _build_locks: dict = field(default_factory=dict, init=False, compare=False, repr=False)
    _build_guard: Any = field(default_factory=threading.Lock, init=False, compare=False, repr=False)

    def cached(self, key: Any, build: Any, *, depends: tuple = ()) -> Any:
        """``self.cache[key]``, made by ``build()`` on first use: a thread that asks while another builds it waits
        for that build instead of making a second one (``crux_nb.open`` builds some in the background), and builds
        of different keys run side by side. With ``depends`` (the frames ``build`` reads), a value an earlier state
        of this knowledge base built from these very frames is taken instead (frames never change, and an edit
        replaces only the tables it touches: after ``add_text`` the entity and edge indexes still hold).

        >>> state = KBState()
        >>> state.cached("answer", lambda: 42), state.cached("answer", lambda: 0)
        (42, 42)
        >>> later = replace(state, chunks=state.chunks.iloc[:0])  # the same entities frame
        >>> later.cached("n", lambda: 1, depends=(later.entities,))
        1
        >>> state.cached("n", lambda: 2, depends=(state.entities,))  # what the later state built holds here too
        1
        """
        found = self.cache.get(key)
        if found is None:
            with self._build_guard:
                lock = self._build_locks.setdefault(key, threading.RLock())
            with lock:
                found = self.cache.get(key)
                if found is None:
                    found = self.cache[key] = derived(self.shared, key, build, depends) if depends else build()
        return found

    def built(self, key: Any, *, depends: tuple = ()) -> Any:
        """:meth:`cached`'s value for ``key`` (kept from these ``depends`` frames too) if built, else None."""
        found = self.cache.get(key)
        return found if found is not None or not depends else kept(self.shared, key, depends)

    @cached_property
    def lookup(self) -> Lookup:
        """Row lookups for hydration, built once per state."""
        return Lookup(self)

    def frame(self, table: str) -> pd.DataFrame:
        return getattr(self, table)


class Lookup:
    """Column lists and dicts over one state's chunks, sections and documents, each built on first use: a query
    that reads some of them (a retrieve reads no ref dict) does not pay for the rest (at 100k chunks the
    whole set costs ~0.12 s)."""

    #: the chunk columns :attr:`columns` serves as Python lists
    COLUMNS = ("source_id", "chunk_id", "parent_id", "content", "metadata")

    def __init__(self, state: KBState):
        # the frames, not the state: the state holds this lookup, and a cycle would keep an old state's frames
        # alive until the cyclic collector runs
        self._chunks, self._parents, self._documents = state.chunks, state.parents, state.documents
        self.columns = _ColumnLists(state.chunks, self.COLUMNS)

    @cached_property
    def chunk_row(self) -> dict[str, int]:
        return {ref: i for i, ref in enumerate(self._chunks["ref"].tolist())}

    @cached_property
    def parent_title(self) -> dict[tuple[str, str], Any]:
        parents = self._parents
        return dict(zip(zip(parents["source_id"], parents["parent_id"]), parents["title"]))

    @cached_property
    def document_path(self) -> dict[str, str | None]:
        docs = self._documents
        return {s: (p if isinstance(p, str) else None) for s, p in zip(docs["source_id"], docs["path"])}


class _ColumnLists(dict):
    """``{column: list of its values}`` over a chunks frame, each list made on first access (idempotent, so two
    threads racing on one key build equal lists)."""

    def __init__(self, chunks: pd.DataFrame, names: tuple[str, ...]):
        super().__init__()
        self._chunks, self._names = chunks, names

    def __missing__(self, key: str) -> list:
        if key not in self._names:
            raise KeyError(key)
        values = self[key] = self._chunks[key].tolist()
        return values


def embeddings_for(embeddings: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """The stored vectors whose chunk content is still among ``chunks`` (the others went with their chunks)."""
    if not len(embeddings):
        return embeddings
    alive = {text_hash(c) for c in chunks["content"].tolist()}
    kept = embeddings[embeddings["content_hash"].isin(alive)]
    return embeddings if len(kept) == len(embeddings) else kept.reset_index(drop=True)


def text_order(frame: pd.DataFrame, by: list[str]) -> np.ndarray:
    """Row order of a stable sort by text columns ``by`` (Arrow's sort: UTF-8 byte order is Python's str
    order, missing values last), several times faster than pandas' multi-column lexsort."""
    table = pa.table({c: pa.array(frame[c].array) for c in by})
    return pc.sort_indices(table, sort_keys=[(c, "ascending") for c in by]).to_numpy()  # nulls at the end


def _sorted(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if len(frame) > 1 and all(pd.api.types.is_string_dtype(frame[c]) for c in by):
        return frame.take(text_order(frame, by)).reset_index(drop=True)
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def _sorted_unique(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    """``frame.drop_duplicates(by)`` sorted by ``by``: after a stable sort duplicates are adjacent, first one first."""
    out = _sorted(frame, by)
    if len(out) < 2:
        return out
    same = np.ones(len(out) - 1, dtype=bool)
    for c in by:
        values = out[c].to_numpy(dtype=object)
        same &= values[1:] == values[:-1]
    return out[np.concatenate([[True], ~same])].reset_index(drop=True)


def _concat(table: str, frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_frame(table)
    return coerce(pd.concat(frames, ignore_index=True), table)


def _embeddings_left(embeddings: pd.DataFrame, gone: pd.Series, chunks: pd.DataFrame) -> pd.DataFrame:
    """``embeddings_for(embeddings, chunks)`` after the chunks whose contents are ``gone`` left (the vectors of
    the other chunks stay): only the gone contents are hashed and looked up."""
    if not len(embeddings) or not len(gone):
        return embeddings
    contents = set(gone.tolist())
    alive = {text_hash(c) for c in values_where(chunks["content"], is_in(chunks["content"], contents))}
    return masked(embeddings, is_in(embeddings["content_hash"], {text_hash(c) for c in contents} - alive))


def _contents(state: KBState, rows: np.ndarray) -> pd.Series:
    return pd.Series(values_where(state.chunks["content"], rows), dtype=object)


def without_sources(state: KBState, source_ids: set[str]) -> KBState:
    """Drop sources with their rows, the evidence they gave and the edges left unsupported
    (:mod:`~crux_nb.store.splice`: the rows of those sources are masked, nothing else is rebuilt)."""
    if not source_ids:
        return state
    plan = plan_removal(state.edges, state.edge_evidence, state.entities, source_ids)
    gone = is_in(state.chunks["source_id"], source_ids)
    chunks = masked(state.chunks, gone)
    return replace(state, documents=masked(state.documents, is_in(state.documents["source_id"], source_ids)),
                   parents=masked(state.parents, is_in(state.parents["source_id"], source_ids)),
                   chunks=chunks, embeddings=_embeddings_left(state.embeddings, _contents(state, gone), chunks),
                   entities=masked(state.entities, plan.entities), edges=masked(state.edges, plan.edges),
                   edge_evidence=masked(state.edge_evidence, plan.evidence), version=state.version + 1)


def _with_rows(table: str, base: pd.DataFrame, rows: list[dict], by: list[str]) -> pd.DataFrame:
    """``base`` with ``rows`` added, sorted by ``by``: spliced in at their sources' places when ``base`` is in
    source order (a few sources: no sort of the whole frame), else concatenated and sorted."""
    if not rows:
        return base
    new = _sorted(coerce(pd.DataFrame(rows), table), by)
    spliced = insert_sorted(base, new)
    return coerce(spliced, table) if spliced is not None else _sorted(_concat(table, [base, new]), by)


def with_sources(state: KBState, specs: list[SourceSpec], *, chunk_size: int) -> KBState:
    """Add (or replace) sources; replaced sources lose their old rows and evidence."""
    rows = [source_rows(s.source_id, s.text, metadata=s.metadata, media_type=s.media_type,
                        chunk_size=chunk_size, path=s.path) for s in specs]
    ids = {s.source_id for s in specs}
    base = without_sources(state, ids)
    chunks = _with_rows("chunks", base.chunks, [c for r in rows for c in r.chunks],
                        ["source_id", "ordinal", "chunk_id"])
    # vectors are keyed by content, so a re-added source with unchanged chunks keeps its vectors
    gone = _contents(state, is_in(state.chunks["source_id"], ids))
    return replace(base, documents=_with_rows("documents", base.documents, [r.document for r in rows], ["source_id"]),
                   parents=_with_rows("parents", base.parents, [p for r in rows for p in r.parents],
                                      ["source_id", "ordinal", "parent_id"]),
                   chunks=chunks, embeddings=_embeddings_left(state.embeddings, gone, chunks),
                   version=state.version + 1)


def _existing_refs(state: KBState) -> set[str]:
    return (set(state.chunks["ref"].tolist())
            | {encode_ref(DocumentRef(s)) for s in state.documents["source_id"].tolist()}
            | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"].tolist(),
                                                             state.parents["parent_id"].tolist())})


def _encoded(value: Any) -> str | None:
    try:
        return encode_ref(as_ref(value))
    except CruxError:
        return None


def _ref_lookups(state: KBState, frame: pd.DataFrame) -> tuple[set[str], dict[str, str]]:
    """``(existing refs, chunk ref -> source id)`` for checking ``frame``'s edges: for a frame small beside the
    knowledge base, only the refs it names (found by C scans of the refs' columns), not a set of every ref."""
    refs = frame_refs(frame, _encoded) if 4 * len(frame) < len(state.chunks) else None
    if refs is None:
        return _existing_refs(state), dict(zip(state.chunks["ref"].tolist(), state.chunks["source_id"].tolist()))
    found = is_in(state.chunks["ref"], refs)
    chunk_sources = dict(zip(values_where(state.chunks["ref"], found), values_where(state.chunks["source_id"], found)))
    decoded = [ref for ref in map(decode_ref, refs) if isinstance(ref, (DocumentRef, ParentRef))]
    sources = {ref.source_id for ref in decoded}
    docs = values_where(state.documents["source_id"], is_in(state.documents["source_id"], sources))
    of_sources = is_in(state.parents["source_id"], sources)
    found = ({encode_ref(DocumentRef(s)) for s in docs}
             | {encode_ref(ParentRef(s, p)) for s, p in zip(values_where(state.parents["source_id"], of_sources),
                                                             values_where(state.parents["parent_id"], of_sources))})
    return set(chunk_sources) | (found & refs), chunk_sources


def with_edges(state: KBState, frame: pd.DataFrame, *, stage: str = "user",
               provenance: str = "exact") -> KBState:
    """Add typed semantic edges with their chunk evidence (see ``KnowledgeBase.add_edges``).

    Column-wise validation first (:func:`~crux_nb.store.rows_fast.fast_edge_rows`); when it
    finds anything it cannot vouch for, the row-by-row loop runs instead and raises the error
    naming the first bad row (so both paths accept and reject exactly the same frames).
    """
    require_columns(frame, ["from_ref", "to_ref", "type", "evidence"], what="the frame passed to add_edges()")
    existing, chunk_sources = _ref_lookups(state, frame)
    rows = fast_edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage=stage, provenance=provenance)
    if rows is None:
        rows = edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage=stage, provenance=provenance)
    return _merge_edges(state, *rows)


def _column(values) -> pd.Series:
    """A column of the rows handed to the merge: a Series as it is (the fast path's, already typed), else objects."""
    return values if isinstance(values, pd.Series) else pd.Series(np.asarray(values, dtype=object), dtype=object)


def _take(columns: dict[str, pd.Series], order: np.ndarray | None) -> pd.DataFrame:
    if order is not None:
        columns = {c: v.take(order) for c, v in columns.items()}
    return pd.DataFrame({c: v.reset_index(drop=True) for c, v in columns.items()})


def _first_edges(edges: dict, evidence: dict) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The merge of the first edges of a state (no edges yet) without string sorts: the rows ordered by their
    ids' integer keys, the evidence by (edge key, chunk ref rank, provenance rank). ``None`` when an id is not
    ``edge_<16 hex>`` or an id repeats (the general merge handles those). Rows already in that order (the
    fast path's) are checked, not sorted."""
    keys, ev_keys = id_keys(edges["edge_id"]), id_keys(evidence["edge_id"])
    if keys is None or ev_keys is None:
        return None
    edges, evidence = {c: _column(v) for c, v in edges.items()}, {c: _column(v) for c, v in evidence.items()}
    order = None
    if len(keys) > 1 and not (keys[1:] > keys[:-1]).all():
        order = np.argsort(keys, kind="stable")
        if (keys[order][1:] == keys[order][:-1]).any():
            return None
    frame = coerce(_take(edges, order), "edges")
    if ascending([evidence["chunk_ref"], evidence["provenance"]], keys=ev_keys, strict=True):
        return frame, coerce(_take(evidence, None), "edge_evidence")
    chunk_rank, _ = pd.factorize(evidence["chunk_ref"], sort=True)
    prov_rank, _ = pd.factorize(evidence["provenance"], sort=True)
    ev_order = np.lexsort((prov_rank, chunk_rank, ev_keys))
    same = np.zeros(max(len(ev_order) - 1, 0), dtype=bool)
    if len(ev_order) > 1:
        a, b = ev_order[1:], ev_order[:-1]
        same = (ev_keys[a] == ev_keys[b]) & (chunk_rank[a] == chunk_rank[b]) & (prov_rank[a] == prov_rank[b])
    ev_order = ev_order[np.concatenate([[True], ~same])] if len(ev_order) else ev_order
    return frame, coerce(_take(evidence, ev_order), "edge_evidence")


EVIDENCE_KEY = ["edge_id", "chunk_ref", "provenance"]


def _unique_edges(all_edges: pd.DataFrame) -> pd.DataFrame:
    """One row per edge id, sorted: the first row wins, except that a later non-empty description fills an
    empty one."""
    unique = _sorted_unique(all_edges, ["edge_id"])
    if len(unique) < len(all_edges):
        described = all_edges.dropna(subset=["description"])
        first_desc = described.drop_duplicates("edge_id").set_index("edge_id")["description"]
        unique["description"] = unique["edge_id"].map(first_desc).astype("str")
    return unique


def _spliced_edges(state: KBState, edges: dict, evidence: dict) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    """The general merge for a few edges added to many: the rows of the edge ids concerned are merged as the
    general merge does, then spliced into the stored frames at their ids' places (no sort of every edge).
    ``None`` when the change is not small or an id is not ``edge_<16 hex>`` (the general merge runs)."""
    n_new = len(edges["edge_id"])
    if not n_new or 8 * n_new > len(state.edges):
        return None
    keys, ev_keys = id_keys(state.edges["edge_id"]), id_keys(state.edge_evidence["edge_id"])
    if keys is None or ev_keys is None or not (keys[1:] > keys[:-1]).all() or (ev_keys[1:] < ev_keys[:-1]).any():
        return None
    ids = set(pd.Series(_column(edges["edge_id"])).tolist())
    old, old_ev = is_in(state.edges["edge_id"], ids), is_in(state.edge_evidence["edge_id"], ids)
    small = _unique_edges(_concat("edges", [rows_where(state.edges, old), pd.DataFrame(edges)]))
    small_ev = _sorted_unique(_concat("edge_evidence", [rows_where(state.edge_evidence, old_ev),
                                                        pd.DataFrame(evidence)]), EVIDENCE_KEY)
    small_keys, small_ev_keys = id_keys(small["edge_id"]), id_keys(small_ev["edge_id"])
    if small_keys is None or small_ev_keys is None:
        return None
    out = insert_by_key(masked(state.edges, old), keys[~old], small, small_keys)
    out_ev = insert_by_key(masked(state.edge_evidence, old_ev), ev_keys[~old_ev], small_ev, small_ev_keys)
    return None if out is None or out_ev is None else (out, out_ev)


def _merge_edges(state: KBState, edges: dict, evidence: dict, new_entities: dict[str, str]) -> KBState:
    first = None
    if not len(state.edges) and not len(state.edge_evidence) and len(edges["edge_id"]) > 1:
        first = _first_edges(edges, evidence)
    if first is None:
        first = _spliced_edges(state, edges, evidence)
    if first is not None:
        unique, all_evidence = first
    else:
        unique = _unique_edges(_concat("edges", [state.edges, pd.DataFrame(edges)]))
        all_evidence = _sorted_unique(_concat("edge_evidence", [state.edge_evidence, pd.DataFrame(evidence)]),
                                      EVIDENCE_KEY)
    known = set(state.entities["ref"].tolist())
    add = [{"entity_id": eid, "ref": ref, "canonical_name": eid, "type": None, "aliases": (), "description": None}
           for ref, eid in sorted((r, e) for r, e in new_entities.items() if r not in known)]
    entities = state.entities  # stored frames are never changed in place: shared when nothing is added
    if add:
        entities = _sorted(_concat("entities", [state.entities, pd.DataFrame(add)]), ["entity_id"])
    return replace(state, edges=unique, edge_evidence=all_evidence, entities=entities, version=state.version + 1)


def with_entities(state: KBState, frame: pd.DataFrame) -> KBState:
    """Add or update entity rows (``entity_id``, ``canonical_name``; optional type, aliases, description)."""
    require_columns(frame, ["entity_id", "canonical_name"], what="the frame passed to add_entities()")
    rows = fast_entity_rows(frame)
    if rows is None:  # something to report: the row loop names the first bad row
        rows = entity_rows(frame)
    new = coerce(pd.DataFrame(rows) if len(rows["entity_id"]) else empty_frame("entities"), "entities")
    kept = state.entities[~state.entities["entity_id"].isin(new["entity_id"])]
    entities = _concat("entities", [kept, new.drop_duplicates("entity_id", keep="last")])
    return replace(state, entities=_sorted(entities, ["entity_id"]), version=state.version + 1)
