"""``kb.save(path, merge=True)``: apply one handle's source-level changes onto a newer generation.

Three states take part: the *base* (the generation the handle was read from, read back from the folder), the
handle's own state (*mine*) and the folder's current generation (*theirs*). A source is changed on one side
when its document row (content hash, metadata, title, path, media type) differs from the base's, or it was
added or removed. The merge starts from theirs and

* removes the sources mine removed, and replaces (or adds) the sources mine changed with mine's rows:
  documents, sections, chunks, the evidence they give and the edges it supports, the entities those edges name;
* adds the edges (with their evidence in the merged chunks) and entities mine added or changed since the base;
* unions the extraction cache (keyed by source, content hash and model fingerprint, so never contradictory)
  and the embeddings (keyed by embedder fingerprint and chunk content hash), kept where their chunks exist;
* takes the community tables from mine if only mine rebuilt them, else keeps theirs. Their status follows
  from the fingerprints: ``stale`` when the merged sources differ from what they were built from.

A source changed on both sides, differently, cannot be merged: :class:`ConflictError` (``merge_conflict``).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import ConflictError
from ..schema import coerce
from .generations import Base, kept
from .state import KBState, _concat, _existing_refs, _merge_edges, _sorted, embeddings_for, without_sources

COMMUNITY_TABLES = ("community_generations", "communities", "community_members", "reports", "report_findings")
_SIGNATURE = ("content_hash", "title", "path", "media_type", "metadata")


def _signatures(state: KBState) -> dict[str, str]:
    docs = state.documents
    columns = [docs[c].tolist() for c in _SIGNATURE]
    return {sid: json.dumps([None if isinstance(v, float) else v for v in values], sort_keys=True, default=str)
            for sid, *values in zip(docs["source_id"], *columns)}


def _changed(base: dict[str, str], side: dict[str, str]) -> set[str]:
    return {s for s in base.keys() | side.keys() if base.get(s) != side.get(s)}


def merge_onto(root: Path, kb: Any, current: Base, *, read: Callable[[str], KBState],
               mine: KBState | None = None) -> KBState:
    """The merged state of ``mine`` (default ``kb.state``) onto generation ``current`` (nothing is written here;
    ``persist.save`` publishes it)."""
    if kb.base.generation not in kept(root):
        raise ConflictError(f"kb.save(merge=True): generation {kb.base.generation}, which this knowledge base was "
                            f"read from, is no longer kept in {str(root)!r}, so its changes cannot be told apart.",
                            code="merge_conflict", current=current.generation, base=kb.base.generation,
                            hint="reopen with crux_nb.open(path) and apply your change again, or "
                                 "kb.save(path, overwrite=True); kb.save(path, keep=N) keeps more generations.")
    base, theirs = read(kb.base.generation), read(current.generation)
    mine = kb.state if mine is None else mine
    clash = clashes(base, mine, theirs)
    if clash:
        shown = ", ".join(repr(s) for s in clash[:5]) + (" …" if len(clash) > 5 else "")
        raise ConflictError(f"kb.save(merge=True): source(s) {shown} changed both here and in generation "
                            f"{current.generation} of {str(root)!r}, differently. Nothing was written.",
                            code="merge_conflict", current=current.generation, base=kb.base.generation,
                            hint="reopen with crux_nb.open(path) and apply your change again, or "
                                 "kb.save(path, overwrite=True) to keep this version.")
    return three_way(base, mine, theirs)


def clashes(base: KBState, mine: KBState, theirs: KBState) -> list[str]:
    """Sources changed on both sides since ``base``, differently."""
    base_sig, mine_sig, their_sig = _signatures(base), _signatures(mine), _signatures(theirs)
    both = _changed(base_sig, mine_sig) & _changed(base_sig, their_sig)
    return sorted(s for s in both if mine_sig.get(s) != their_sig.get(s))


def three_way(base: KBState, mine: KBState, theirs: KBState) -> KBState:
    """``theirs`` with mine's changes since ``base`` applied; a source changed on both sides takes mine's rows
    (``merge_onto`` refuses those first; a save rebasing the changes made while it ran lets the later ones win).

    Every table keeps both sides' additions: sources, edges and entities as described above, the extraction
    cache and the embeddings unioned by key (embedder fingerprint and chunk content hash: a vector for
    the same text from the same embedder is the same vector), kept where their chunks still exist.
    """
    base_sig, mine_sig, their_sig = _signatures(base), _signatures(mine), _signatures(theirs)
    ours, others = _changed(base_sig, mine_sig), _changed(base_sig, their_sig)
    # the same change on both sides is already in theirs; a different one is mine (see the docstring)
    ours = {s for s in ours if s not in others or mine_sig.get(s) != their_sig.get(s)}
    merged = _with_sources_of(theirs, mine, ours)
    merged = _with_additions(merged, base, mine)
    extractions = _concat("extractions", [theirs.extractions, mine.extractions]).drop_duplicates(
        ["source_id", "content_hash", "model_fingerprint"])
    merged = replace(merged, extractions=_sorted(extractions, ["source_id", "content_hash", "model_fingerprint"]))
    vectors = _concat("embeddings", [theirs.embeddings, mine.embeddings]).drop_duplicates(["embedder", "content_hash"])
    merged = replace(merged, embeddings=embeddings_for(_sorted(vectors, ["embedder", "content_hash"]), merged.chunks))
    if _rebuilt(base, mine) and not _rebuilt(base, theirs):
        merged = replace(merged, **{t: mine.frame(t) for t in COMMUNITY_TABLES})
    return replace(merged, version=max(mine.version, theirs.version) + 1)


def _rebuilt(base: KBState, side: KBState) -> bool:
    return not base.community_generations.equals(side.community_generations)


def _with_sources_of(theirs: KBState, mine: KBState, sources: set[str]) -> KBState:
    """``theirs`` with ``sources`` replaced by mine's rows (or removed where mine has none)."""
    if not sources:
        return theirs
    state = without_sources(theirs, sources)
    take = lambda f: f[f["source_id"].isin(sources)]  # noqa: E731
    documents = _concat("documents", [state.documents, take(mine.documents)])
    parents = _concat("parents", [state.parents, take(mine.parents)])
    chunks = _concat("chunks", [state.chunks, take(mine.chunks)])
    state = replace(state, documents=_sorted(documents, ["source_id"]),
                    parents=_sorted(parents, ["source_id", "ordinal", "parent_id"]),
                    chunks=_sorted(chunks, ["source_id", "ordinal", "chunk_id"]))
    evidence = take(mine.edge_evidence)
    return _add_edges(state, mine, mine.edges[mine.edges["edge_id"].isin(evidence["edge_id"])], evidence)


def _with_additions(state: KBState, base: KBState, mine: KBState) -> KBState:
    """Edges and entities mine added (or changed) since the base, where their evidence still exists."""
    new_edges = mine.edges[~mine.edges["edge_id"].isin(base.edges["edge_id"])]
    evidence = mine.edge_evidence[mine.edge_evidence["edge_id"].isin(new_edges["edge_id"])]
    state = _add_edges(state, mine, new_edges, evidence)
    columns = list(mine.entities.columns)
    seen = set(map(tuple, base.entities.astype(object).itertuples(index=False, name=None)))
    rows = [i for i, row in enumerate(mine.entities.astype(object).itertuples(index=False, name=None))
            if row not in seen]
    if not rows:
        return state
    changed = mine.entities.iloc[rows]
    kept_rows = state.entities[~state.entities["entity_id"].isin(changed["entity_id"])]
    entities = coerce(pd.concat([kept_rows, changed[columns]], ignore_index=True), "entities")
    return replace(state, entities=_sorted(entities, ["entity_id"]))


def _add_edges(state: KBState, mine: KBState, edges: pd.DataFrame, evidence: pd.DataFrame) -> KBState:
    existing = _existing_refs(state)
    present = lambda refs: refs.str.startswith("entity:") | refs.isin(existing)  # noqa: E731
    edges = edges[present(edges["from_ref"]) & present(edges["to_ref"])]
    evidence = evidence[evidence["chunk_ref"].isin(state.chunks["ref"]) & evidence["edge_id"].isin(edges["edge_id"])]
    edges = edges[edges["edge_id"].isin(evidence["edge_id"])]
    if edges.empty:
        return state
    named = set(edges["from_ref"]) | set(edges["to_ref"])
    entities = {ref: eid for ref, eid in zip(mine.entities["ref"], mine.entities["entity_id"]) if ref in named}
    merged = _merge_edges(state, edges.to_dict("list"), evidence.to_dict("list"), {})
    missing = mine.entities[mine.entities["ref"].isin(set(entities) - set(merged.entities["ref"]))]
    if missing.empty:
        return merged
    all_entities = _concat("entities", [merged.entities, missing])
    return replace(merged, entities=_sorted(all_entities, ["entity_id"]))
