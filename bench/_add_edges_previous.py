"""The row-by-row reference of ``kb.add_edges`` / ``kb.add_entities`` for ``bench/add_edges.py``: every row
checked by :mod:`crux_nb.store.rows` (the implementation before the column-wise fast path, kept in crux_nb as
the reference that names the first bad row), then merged into the state as ``crux_nb.store.state`` merged
when this benchmark was written (a snapshot copied here: the benchmark reaches into no crux_nb internals).
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from crux_nb.refs import DocumentRef, ParentRef, encode_ref
from crux_nb.schema import coerce, empty_frame, require_columns
from crux_nb.store.rows import edge_rows, entity_rows

__all__ = ["existing_refs", "with_edges", "with_entities"]


def existing_refs(state: Any) -> set[str]:
    """The refs an edge may name besides entities: every chunk, document and parent of ``state``."""
    return (set(state.chunks["ref"]) | {encode_ref(DocumentRef(s)) for s in state.documents["source_id"]}
            | {encode_ref(ParentRef(s, p)) for s, p in zip(state.parents["source_id"], state.parents["parent_id"])})


def with_edges(state: Any, frame: pd.DataFrame, *, stage: str = "user", provenance: str = "exact") -> Any:
    """``state`` plus the edges of ``frame``, every row validated one by one."""
    require_columns(frame, ["from_ref", "to_ref", "type", "evidence"], what="the frame passed to add_edges()")
    existing = existing_refs(state)
    chunk_sources = dict(zip(state.chunks["ref"].tolist(), state.chunks["source_id"].tolist()))
    rows = edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage=stage, provenance=provenance)
    return _merge_edges(state, *rows)


def with_entities(state: Any, frame: pd.DataFrame) -> Any:
    """``state`` plus (or with updated) the entities of ``frame``, every row validated one by one."""
    require_columns(frame, ["entity_id", "canonical_name"], what="the frame passed to add_entities()")
    rows = entity_rows(frame)
    new = coerce(pd.DataFrame(rows) if len(rows["entity_id"]) else empty_frame("entities"), "entities")
    kept = state.entities[~state.entities["entity_id"].isin(new["entity_id"])]
    entities = _concat("entities", [kept, new.drop_duplicates("entity_id", keep="last")])
    return replace(state, entities=_sorted(entities, ["entity_id"]), version=state.version + 1)


# ------------------------------------------------------------------ the merge (snapshot)
def _order(frame: pd.DataFrame, by: list[str]) -> np.ndarray:
    table = pa.table({c: pa.array(frame[c].array) for c in by})
    return pc.sort_indices(table, sort_keys=[(c, "ascending") for c in by]).to_numpy()


def _sorted(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    if len(frame) > 1 and all(pd.api.types.is_string_dtype(frame[c]) for c in by):
        return frame.take(_order(frame, by)).reset_index(drop=True)
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def _sorted_unique(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
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


_HEX = np.full(256, -1, dtype=np.int64)
_HEX[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16)


def _id_keys(ids) -> np.ndarray | None:
    try:
        raw = np.asarray(ids, dtype="S22")
    except (UnicodeEncodeError, ValueError, TypeError):
        return None
    if raw.ndim != 1:
        return None
    grid = raw.view(np.uint8).reshape(len(raw), 22)
    if len(raw) and ((grid[:, :5] != np.frombuffer(b"edge_", dtype=np.uint8)).any() or grid[:, 21].any()):
        return None
    digits = _HEX[grid[:, 5:21]]
    if (digits < 0).any():
        return None
    return (digits.astype(np.uint64) << (4 * np.arange(15, -1, -1, dtype=np.uint64))).sum(axis=1, dtype=np.uint64)


def _first_edges(edges: dict, evidence: dict) -> tuple[pd.DataFrame, pd.DataFrame] | None:
    keys, ev_keys = _id_keys(edges["edge_id"]), _id_keys(evidence["edge_id"])
    if keys is None or ev_keys is None:
        return None
    order = np.argsort(keys, kind="stable")
    if len(order) > 1 and (keys[order][1:] == keys[order][:-1]).any():
        return None
    frame = coerce(pd.DataFrame({c: np.asarray(v, dtype=object)[order] for c, v in edges.items()}), "edges")
    chunk_rank, _ = pd.factorize(np.asarray(evidence["chunk_ref"], dtype=object), sort=True)
    prov_rank, _ = pd.factorize(np.asarray(evidence["provenance"], dtype=object), sort=True)
    ev_order = np.lexsort((prov_rank, chunk_rank, ev_keys))
    same = np.zeros(max(len(ev_order) - 1, 0), dtype=bool)
    if len(ev_order) > 1:
        a, b = ev_order[1:], ev_order[:-1]
        same = (ev_keys[a] == ev_keys[b]) & (chunk_rank[a] == chunk_rank[b]) & (prov_rank[a] == prov_rank[b])
    ev_order = ev_order[np.concatenate([[True], ~same])] if len(ev_order) else ev_order
    ev_frame = coerce(pd.DataFrame({c: np.asarray(v, dtype=object)[ev_order] for c, v in evidence.items()}),
                      "edge_evidence")
    return frame, ev_frame


def _merge_edges(state: Any, edges: dict, evidence: dict, new_entities: dict[str, str]) -> Any:
    first = None
    if not len(state.edges) and not len(state.edge_evidence) and len(edges["edge_id"]) > 1:
        first = _first_edges(edges, evidence)
    if first is not None:
        unique, all_evidence = first
    else:
        all_edges = _concat("edges", [state.edges, pd.DataFrame(edges)])
        unique = _sorted_unique(all_edges, ["edge_id"])
        if len(unique) < len(all_edges):
            described = all_edges.dropna(subset=["description"])
            first_desc = described.drop_duplicates("edge_id").set_index("edge_id")["description"]
            unique["description"] = unique["edge_id"].map(first_desc).astype("str")
        all_evidence = _sorted_unique(_concat("edge_evidence", [state.edge_evidence, pd.DataFrame(evidence)]),
                                      ["edge_id", "chunk_ref", "provenance"])
    known = set(state.entities["ref"])
    add = [{"entity_id": eid, "ref": ref, "canonical_name": eid, "type": None, "aliases": (), "description": None}
           for ref, eid in sorted(new_entities.items()) if ref not in known]
    entities = _concat("entities", [state.entities, pd.DataFrame(add)])
    return replace(state, edges=unique, edge_evidence=all_evidence,
                   entities=_sorted(entities, ["entity_id"]), version=state.version + 1)
