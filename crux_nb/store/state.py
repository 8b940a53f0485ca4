"""The immutable state of a knowledge base and the pure functions that change it.

A :class:`KBState` holds the six frames. Every change builds a new state from
the old one; the knowledge base swaps states only when the whole change
succeeded, so a failed call leaves nothing half-done.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import Any

import pandas as pd

from .._hashing import stable_id, text_hash
from ..errors import InputError
from ..refs import DocumentRef, EntityRef, ParentRef, as_ref, encode_ref
from ..schema import SCHEMAS, check_unicode, coerce, empty_frame, require_columns
from .chunking import source_rows
from .ingest import SourceSpec

TABLES = tuple(SCHEMAS)
STRUCTURAL_TYPES = ("hierarchy", "sequence")
DIRECTIONS = ("directed", "symmetric")


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
    #: Shared by every state derived from this one (``replace`` copies the reference): caches that stay valid
    #: per source across changes, such as the lexical index's token arrays.
    shared: dict = field(default_factory=dict, compare=False, repr=False)

    @cached_property
    def cache(self) -> dict:
        """Derived indexes (lexical index, graph indexes) built once per state."""
        return {}

    @cached_property
    def lookup(self) -> Lookup:
        """Row lookups for hydration, built once per state."""
        return Lookup(self)

    def frame(self, table: str) -> pd.DataFrame:
        return getattr(self, table)


class Lookup:
    """Column lists and dicts over one state's chunks, sections and documents."""

    def __init__(self, state: KBState):
        chunks = state.chunks
        self.chunk_row = {ref: i for i, ref in enumerate(chunks["ref"].tolist())}
        self.columns = {c: chunks[c].tolist() for c in ("source_id", "chunk_id", "parent_id", "content", "metadata")}
        parents = state.parents
        self.parent_title = dict(zip(zip(parents["source_id"], parents["parent_id"]), parents["title"]))
        docs = state.documents
        self.document_path = {s: (p if isinstance(p, str) else None) for s, p in zip(docs["source_id"], docs["path"])}


def embeddings_for(embeddings: pd.DataFrame, chunks: pd.DataFrame) -> pd.DataFrame:
    """The stored vectors whose chunk content is still among ``chunks`` (the others went with their chunks)."""
    if not len(embeddings):
        return embeddings
    alive = {text_hash(c) for c in chunks["content"].tolist()}
    kept = embeddings[embeddings["content_hash"].isin(alive)]
    return embeddings if len(kept) == len(embeddings) else kept.reset_index(drop=True)


def _sorted(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def _concat(table: str, frames: list[pd.DataFrame]) -> pd.DataFrame:
    frames = [f for f in frames if len(f)]
    if not frames:
        return empty_frame(table)
    return coerce(pd.concat(frames, ignore_index=True), table)


def _source_prefixes(source_ids: set[str]) -> tuple[str, ...]:
    prefixes = []
    for sid in source_ids:
        doc = encode_ref(DocumentRef(sid))
        seg = doc[len("document:"):]
        prefixes += [f"chunk:{seg}:", f"parent:{seg}:"]
    return tuple(prefixes)


def _touches(refs: pd.Series, source_ids: set[str]) -> pd.Series:
    docs = {encode_ref(DocumentRef(s)) for s in source_ids}
    return refs.isin(docs) | refs.str.startswith(_source_prefixes(source_ids))


def without_sources(state: KBState, source_ids: set[str]) -> KBState:
    """Drop sources with their rows, the evidence they gave and the edges left unsupported."""
    if not source_ids:
        return state
    keep = lambda f: f[~f["source_id"].isin(source_ids)]  # noqa: E731
    evidence = keep(state.edge_evidence)
    edges = state.edges
    edges = edges[~(_touches(edges["from_ref"], source_ids) | _touches(edges["to_ref"], source_ids))]
    edges = edges[edges["edge_id"].isin(evidence["edge_id"])]
    evidence = evidence[evidence["edge_id"].isin(edges["edge_id"])]
    used = set(edges["from_ref"]) | set(edges["to_ref"])
    entities = state.entities[state.entities["ref"].isin(used)]
    chunks = keep(state.chunks).reset_index(drop=True)
    return replace(state, documents=keep(state.documents).reset_index(drop=True),
                   parents=keep(state.parents).reset_index(drop=True),
                   chunks=chunks, embeddings=embeddings_for(state.embeddings, chunks),
                   entities=entities.reset_index(drop=True), edges=edges.reset_index(drop=True),
                   edge_evidence=evidence.reset_index(drop=True), version=state.version + 1)


def with_sources(state: KBState, specs: list[SourceSpec], *, chunk_size: int) -> KBState:
    """Add (or replace) sources; replaced sources lose their old rows and evidence."""
    rows = [source_rows(s.source_id, s.text, metadata=s.metadata, media_type=s.media_type,
                        chunk_size=chunk_size, path=s.path) for s in specs]
    base = without_sources(state, {s.source_id for s in specs})
    documents = _concat("documents", [base.documents, pd.DataFrame([r.document for r in rows])])
    parents = _concat("parents", [base.parents, pd.DataFrame([p for r in rows for p in r.parents])])
    chunks = _concat("chunks", [base.chunks, pd.DataFrame([c for r in rows for c in r.chunks])])
    # vectors are keyed by content, so a re-added source with unchanged chunks keeps its vectors
    return replace(base, documents=_sorted(documents, ["source_id"]), embeddings=embeddings_for(state.embeddings, chunks),
                   parents=_sorted(parents, ["source_id", "ordinal", "parent_id"]),
                   chunks=_sorted(chunks, ["source_id", "ordinal", "chunk_id"]),
                   version=state.version + 1)


def _check_type_name(value: Any, where: str) -> str:
    if not isinstance(value, str) or not value.strip() or ":" in value or "%" in value:
        raise InputError(f"{where}: relation type {value!r} must be a non-empty string without ':' or '%'.",
                         hint="name relation types like 'references' or 'depends_on'.")
    check_unicode(value, f"{where}: relation type {value!r}")
    if value in STRUCTURAL_TYPES:
        raise InputError(f"{where}: relation type {value!r} is structural: it is projected from sections and chunk order, "
                         "never stored.", hint="choose another type name, e.g. 'references'.")
    return value


def _existing_refs(state: KBState) -> set[str]:
    return (set(state.chunks["ref"]) | {encode_ref(DocumentRef(s)) for s in state.documents["source_id"]}
            | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"], state.parents["parent_id"])})


def with_edges(state: KBState, frame: pd.DataFrame, *, stage: str = "user",
               provenance: str = "exact") -> KBState:
    """Add typed semantic edges with their chunk evidence (see ``KnowledgeBase.add_edges``)."""
    require_columns(frame, ["from_ref", "to_ref", "type", "evidence"], what="the frame passed to add_edges()")
    existing = _existing_refs(state)
    chunk_sources = dict(zip(state.chunks["ref"], state.chunks["source_id"]))
    records = frame.to_dict("records")
    edges, evidence, new_entities = [], [], {}
    for i, rec in enumerate(records):
        where = f"add_edges() row {i}"
        etype = _check_type_name(rec["type"], where)
        direction = _optional(rec, "direction", "directed")
        if not isinstance(direction, str) or direction not in DIRECTIONS:
            raise InputError(f"{where}: direction {direction!r} must be 'directed' or 'symmetric'.",
                             hint="leave the column out (or None) for 'directed'.")
        ends = []
        for col in ("from_ref", "to_ref"):
            ref = as_ref(rec[col], what=f"{where}: {col}")
            text = check_unicode(encode_ref(ref), f"{where}: {col}")
            if isinstance(ref, EntityRef):
                new_entities.setdefault(text, ref.entity_id)
            elif text not in existing:
                raise InputError(f"{where}: {col} {text!r} does not exist in this knowledge base.",
                                 hint="add the source first, or check the ref (kb.chunks['ref']).")
            ends.append(text)
        if direction == "symmetric":
            ends.sort()
        supports = _evidence_list(rec["evidence"], where)
        for ref in supports:
            if ref not in chunk_sources:
                raise InputError(f"{where}: evidence {ref!r} is not a chunk of this knowledge base.",
                                 hint="evidence must list chunk refs from kb.chunks['ref'].")
        edge_id = stable_id("edge", {"type": etype, "from": ends[0], "to": ends[1], "direction": direction,
                                     "stage": stage})
        description = _optional_text(rec, "description", where)
        weight = _optional(rec, "weight", 1.0)
        if not isinstance(weight, (int, float)) or not _positive_finite(weight):
            raise InputError(f"{where}: weight {weight!r} must be a positive number (and finite).",
                             hint="leave the column out (or None) for weight 1.0.")
        edges.append({"edge_id": edge_id, "type": etype, "from_ref": ends[0], "to_ref": ends[1],
                      "direction": direction, "weight": float(weight), "stage": stage,
                      "description": description if isinstance(description, str) and description else None})
        evidence += [{"edge_id": edge_id, "source_id": chunk_sources[r], "chunk_ref": r,
                      "provenance": provenance} for r in supports]
    return _merge_edges(state, edges, evidence, new_entities)


def _positive_finite(number: int | float) -> bool:
    try:
        number = float(number)
    except OverflowError:  # an int beyond float range
        return False
    return math.isfinite(number) and number > 0


def _optional(record: dict, key: str, default: Any) -> Any:
    """A frame cell that may be absent, None, NA or NaN (rows of a frame with optional columns)."""
    value = record.get(key, default)
    missing = value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value)
    return default if missing else value


def _optional_text(record: dict, key: str, where: str) -> str | None:
    """An optional string cell: a string, or missing (None)."""
    value = _optional(record, key, None)
    if value is not None and not isinstance(value, str):
        raise InputError(f"{where}: {key} must be a string or missing; got {type(value).__name__}.",
                         hint=f"convert the {key} column to strings, or leave it out.")
    return None if value is None else check_unicode(value, f"{where}: {key}")


def _evidence_list(value: Any, where: str) -> list[str]:
    if isinstance(value, str) or not hasattr(value, "__iter__"):
        raise InputError(f"{where}: evidence must be a list of chunk refs; got {type(value).__name__}.")
    refs = [encode_ref(as_ref(v, kinds=("chunk",), what=f"{where}: evidence")) for v in value]
    if not refs:
        raise InputError(f"{where}: evidence is empty; every semantic edge needs at least one supporting chunk.")
    return refs


def _merge_edges(state: KBState, edges: list[dict], evidence: list[dict], new_entities: dict[str, str]) -> KBState:
    all_edges = _concat("edges", [state.edges, pd.DataFrame(edges)])
    # first row wins per edge id, except that a later non-empty description fills an empty one
    first_desc = all_edges.dropna(subset=["description"]).drop_duplicates("edge_id").set_index("edge_id")["description"]
    all_edges = all_edges.drop_duplicates("edge_id").copy()
    all_edges["description"] = all_edges["edge_id"].map(first_desc).astype("str")
    all_evidence = _concat("edge_evidence", [state.edge_evidence, pd.DataFrame(evidence)])
    all_evidence = all_evidence.drop_duplicates(["edge_id", "chunk_ref", "provenance"])
    known = set(state.entities["ref"])
    add = [{"entity_id": eid, "ref": ref, "canonical_name": eid, "type": None, "aliases": (), "description": None}
           for ref, eid in sorted(new_entities.items()) if ref not in known]
    entities = _concat("entities", [state.entities, pd.DataFrame(add)])
    return replace(state, edges=_sorted(all_edges, ["edge_id"]),
                   edge_evidence=_sorted(all_evidence, ["edge_id", "chunk_ref", "provenance"]),
                   entities=_sorted(entities, ["entity_id"]), version=state.version + 1)


def with_entities(state: KBState, frame: pd.DataFrame) -> KBState:
    """Add or update entity rows (``entity_id``, ``canonical_name``; optional type, aliases, description)."""
    require_columns(frame, ["entity_id", "canonical_name"], what="the frame passed to add_entities()")
    rows = []
    for i, rec in enumerate(frame.to_dict("records")):
        where = f"add_entities() row {i}"
        eid, name = rec["entity_id"], rec["canonical_name"]
        if not isinstance(eid, str) or not eid or not isinstance(name, str) or not name.strip():
            raise InputError(f"{where}: entity_id and canonical_name must be non-empty strings.",
                             hint="every entity needs an id and a name, e.g. ('acme', 'ACME Corp').")
        check_unicode(eid, f"{where}: entity_id")
        check_unicode(name, f"{where}: canonical_name")
        aliases = _optional(rec, "aliases", ())
        if (isinstance(aliases, (str, bytes, Mapping)) or not hasattr(aliases, "__iter__")
                or not all(isinstance(a, str) for a in aliases)):
            raise InputError(f"{where}: aliases must be a list of strings.",
                             hint="pass a list such as ['ACME', 'Acme Corp'], or leave the column out.")
        for alias in aliases:
            check_unicode(alias, f"{where}: alias")
        rows.append({"entity_id": eid, "ref": encode_ref(EntityRef(eid)), "canonical_name": name.strip(),
                     "type": _optional_text(rec, "type", where), "aliases": tuple(sorted(set(aliases))),
                     "description": _optional_text(rec, "description", where)})
    new = coerce(pd.DataFrame(rows) if rows else empty_frame("entities"), "entities")
    kept = state.entities[~state.entities["entity_id"].isin(new["entity_id"])]
    entities = _concat("entities", [kept, new.drop_duplicates("entity_id", keep="last")])
    return replace(state, entities=_sorted(entities, ["entity_id"]), version=state.version + 1)
