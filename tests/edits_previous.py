"""Source and edge edits as they were before they became proportional to the change (main at fe656db,
``crux_nb/store/state.py``): every frame filtered or sorted in full. ``tests/test_edits_incremental.py`` checks
the spliced edits against these, and ``bench/edit_cost.py`` times them in the same run."""

from __future__ import annotations

from dataclasses import replace

import pandas as pd

from crux_nb.refs import DocumentRef, encode_ref
from crux_nb.store.chunking import source_rows
from crux_nb.store.state import _concat, _existing_refs, _sorted, _sorted_unique, embeddings_for

__all__ = ["without_sources", "with_sources", "merge_edges", "existing_refs"]


def _touches(refs: pd.Series, source_ids: set[str]) -> pd.Series:
    docs = {encode_ref(DocumentRef(s)) for s in source_ids}
    prefixes = []
    for sid in source_ids:
        seg = encode_ref(DocumentRef(sid))[len("document:"):]
        prefixes += [f"chunk:{seg}:", f"parent:{seg}:"]
    return refs.isin(docs) | refs.str.startswith(tuple(prefixes))


def without_sources(state, source_ids: set[str]):
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


def with_sources(state, specs, *, chunk_size: int):
    rows = [source_rows(s.source_id, s.text, metadata=s.metadata, media_type=s.media_type,
                        chunk_size=chunk_size, path=s.path) for s in specs]
    base = without_sources(state, {s.source_id for s in specs})
    documents = _concat("documents", [base.documents, pd.DataFrame([r.document for r in rows])])
    parents = _concat("parents", [base.parents, pd.DataFrame([p for r in rows for p in r.parents])])
    chunks = _concat("chunks", [base.chunks, pd.DataFrame([c for r in rows for c in r.chunks])])
    return replace(base, documents=_sorted(documents, ["source_id"]), embeddings=embeddings_for(state.embeddings, chunks),
                   parents=_sorted(parents, ["source_id", "ordinal", "parent_id"]),
                   chunks=_sorted(chunks, ["source_id", "ordinal", "chunk_id"]),
                   version=state.version + 1)


def merge_edges(state, edges: dict, evidence: dict):
    """The general merge's edges and evidence frames (the entity rows are unchanged by this work)."""
    all_edges = _concat("edges", [state.edges, pd.DataFrame(edges)])
    unique = _sorted_unique(all_edges, ["edge_id"])
    if len(unique) < len(all_edges):
        described = all_edges.dropna(subset=["description"])
        first_desc = described.drop_duplicates("edge_id").set_index("edge_id")["description"]
        unique["description"] = unique["edge_id"].map(first_desc).astype("str")
    all_evidence = _sorted_unique(_concat("edge_evidence", [state.edge_evidence, pd.DataFrame(evidence)]),
                                  ["edge_id", "chunk_ref", "provenance"])
    return unique, all_evidence


existing_refs = _existing_refs
