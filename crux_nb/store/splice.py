"""Which rows an edit of a few sources touches, found by column scans in C, not by rebuilding every frame.

Removing (or replacing) one source of a knowledge base with a million edges must cost about what that
source's rows cost. The rows of the sources are found by one Arrow ``is_in`` / ``starts_with`` scan per
column against a value set as small as the change (pandas' ``Series.isin`` on a string column walks its
argument in Python: 2 s per call against 500k ids); only the frames that lose rows are masked, the others
are kept as they are. What goes:

* the sources' evidence rows, and every edge touching their document, sections or chunks;
* an edge whose evidence came only from the removed sources (it is left unsupported), with the rest of
  its evidence;
* an entity that was an endpoint of a dropped edge and is an endpoint of no remaining edge.

Everything else is untouched: an entity that had no edge before the edit (``kb.add_entities``) stays.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..refs import DocumentRef, encode_ref

__all__ = ["Removal", "ascending", "frame_refs", "insert_by_key", "insert_sorted", "is_in", "masked", "plan_removal", "rows_where",
           "touches", "values_where"]

_STRING = pa.large_string()


def _arrow(series: pd.Series):
    return pa.array(series.array) if pd.api.types.is_string_dtype(series) else pa.array(series.tolist(), _STRING)


def ascending(columns: list, *, keys: np.ndarray | None = None, strict: bool = False) -> bool:
    """Whether rows are in ascending (``keys``, ``columns``...) order, compared column by column with ties left to
    the next (Arrow compares strings by UTF-8 bytes: Python's str order); ``strict``: no two rows equal.
    ``columns``: string Series or Arrow arrays; a missing value or a column of another dtype gives False.

    >>> ascending([pd.Series(["a", "a", "b"], dtype="str"), pd.Series(["x", "y", "a"], dtype="str")])
    True
    >>> ascending([pd.Series(["a", "a"], dtype="str")], strict=True), ascending([pa.array(["b", "a"])])
    (False, False)
    >>> ascending([pd.Series(["a", "a"], dtype="str")], keys=np.array([1, 2]), strict=True)
    True
    """
    n = len(keys) if keys is not None else len(columns[0])
    if n < 2:
        return True
    arrays = [c if isinstance(c, (pa.Array, pa.ChunkedArray)) else
              pa.array(c.array) if pd.api.types.is_string_dtype(c) else None for c in columns]
    if any(a is None or a.null_count for a in arrays):
        return False
    if keys is None:
        later, tie = np.zeros(n - 1, dtype=bool), np.ones(n - 1, dtype=bool)
    else:
        later, tie = keys[1:] > keys[:-1], keys[1:] == keys[:-1]
    for values in arrays:
        nxt, prev = values[1:], values[:-1]
        later |= tie & pc.greater(nxt, prev).to_numpy(zero_copy_only=False)
        tie &= pc.equal(nxt, prev).to_numpy(zero_copy_only=False)
    return bool(later.all() if strict else (later | tie).all())


def is_in(series: pd.Series, values) -> np.ndarray:
    """``series.isin(values)`` as a boolean array, by Arrow's hash lookup (``values``: strings)."""
    value_set = pa.array(sorted(set(values)), type=_STRING)
    if not len(series) or not len(value_set):
        return np.zeros(len(series), dtype=bool)
    column = _arrow(series)
    if not pa.types.is_large_string(column.type):
        column = column.cast(_STRING)
    return pc.is_in(column, value_set=value_set).to_numpy(zero_copy_only=False).astype(bool, copy=False)


def values_where(series: pd.Series, mask: np.ndarray) -> list:
    """``series[mask].tolist()`` for a few marked rows: an Arrow filter runs chunk by chunk, where pandas' take
    first joins a column spliced into many chunks (a copy of all of it)."""
    if not mask.any():
        return []
    if pd.api.types.is_string_dtype(series):
        return _arrow(series).filter(pa.array(mask)).to_pylist()
    return series[mask].tolist()


def rows_where(frame: pd.DataFrame, mask: np.ndarray) -> pd.DataFrame:
    """``frame[mask]`` for a few marked rows, as slices of ``frame`` (see :func:`values_where`)."""
    return masked(frame, ~mask, max_runs=4096)


def _prefixes(source_ids: set[str]) -> list[str]:
    out = []
    for sid in sorted(source_ids):
        seg = encode_ref(DocumentRef(sid))[len("document:"):]
        out += [f"chunk:{seg}:", f"parent:{seg}:"]
    return out


def touches(refs: pd.Series, source_ids: set[str]) -> np.ndarray:
    """Whether each ref is a document of ``source_ids``, or one of their sections or chunks."""
    hit = is_in(refs, {encode_ref(DocumentRef(s)) for s in source_ids})
    if len(refs):
        column = _arrow(refs)
        for prefix in _prefixes(source_ids):
            hit |= pc.starts_with(column, pattern=prefix).to_numpy(zero_copy_only=False).astype(bool, copy=False)
    return hit


@dataclass(frozen=True)
class Removal:
    """Row masks (True: the row goes) of the frames an edit of some sources changes."""

    evidence: np.ndarray
    edges: np.ndarray
    entities: np.ndarray


def plan_removal(edges: pd.DataFrame, evidence: pd.DataFrame, entities: pd.DataFrame,
                 source_ids: set[str]) -> Removal:
    """The evidence, edges and entities that go with ``source_ids`` (see the module docs)."""
    ev_drop = is_in(evidence["source_id"], source_ids)
    edge_drop = touches(edges["from_ref"], source_ids) | touches(edges["to_ref"], source_ids)
    lost = set(values_where(evidence["edge_id"], ev_drop))
    if lost:
        still = set(values_where(evidence["edge_id"], is_in(evidence["edge_id"], lost) & ~ev_drop))
        edge_drop |= is_in(edges["edge_id"], lost - still)
    if edge_drop.any():
        ev_drop |= is_in(evidence["edge_id"], values_where(edges["edge_id"], edge_drop))
    ends = set(values_where(edges["from_ref"], edge_drop)) | set(values_where(edges["to_ref"], edge_drop))
    ends &= set(values_where(entities["ref"], is_in(entities["ref"], ends))) if ends else set()
    for column in ("from_ref", "to_ref"):
        if ends:  # still an endpoint of a remaining edge
            ends -= set(values_where(edges[column], is_in(edges[column], ends) & ~edge_drop))
    return Removal(evidence=ev_drop, edges=edge_drop, entities=is_in(entities["ref"], ends))


def masked(frame: pd.DataFrame, drop: np.ndarray, *, max_runs: int = 256) -> pd.DataFrame:
    """``frame`` without the rows marked in ``drop`` (the frame itself when none is).

    A few dropped rows leave a few runs of kept rows: those are sliced and concatenated, which for Arrow
    columns joins the slices' buffers without copying them (a ``take`` copies every string of every column)."""
    if not drop.any():
        return frame
    edges = np.flatnonzero(np.diff(np.concatenate([[True], drop, [True]]).astype(np.int8)))
    starts, stops = edges[0::2], edges[1::2]  # [start, stop) of each run of kept rows
    if len(starts) > max_runs or not len(starts):
        return frame.take(np.flatnonzero(~drop)).reset_index(drop=True)
    pieces = [frame.iloc[a:b] for a, b in zip(starts, stops)]
    return pd.concat(pieces, ignore_index=True) if len(pieces) > 1 else pieces[0].reset_index(drop=True)


def insert_sorted(base: pd.DataFrame, new: pd.DataFrame, *, limit: int = 64) -> pd.DataFrame | None:
    """``base`` (sorted by ``source_id`` first, holding none of ``new``'s sources) with ``new``'s rows (sorted
    as ``base``) spliced in at each source's place; ``None`` for more than ``limit`` sources or a ``base`` out
    of source order (sort instead)."""
    if not len(new):
        return base
    sources = sorted(set(new["source_id"].tolist()))
    if len(sources) > limit or not pd.api.types.is_string_dtype(base["source_id"]) or base["source_id"].hasnans:
        return None
    column = _arrow(base["source_id"])
    if len(base) > 1 and pc.any(pc.less(column[1:], column[:-1])).as_py():
        return None
    pieces, start = [], 0
    for sid in sources:
        # rows before this source: Arrow compares UTF-8 bytes, Python's str order
        at = int(pc.sum(pc.less(column, pa.scalar(sid, column.type))).as_py() or 0) if len(base) else 0
        pieces += [base.iloc[start:at], new[new["source_id"] == sid]]
        start = at
    pieces.append(base.iloc[start:])
    return pd.concat([p for p in pieces if len(p)] or [base], ignore_index=True)


def insert_by_key(base: pd.DataFrame, base_keys: np.ndarray, new: pd.DataFrame, new_keys: np.ndarray,
                  *, max_pieces: int = 512) -> pd.DataFrame | None:
    """``base`` (rows in ascending ``base_keys``) with ``new``'s rows (ascending ``new_keys``, none equal to a
    base key) inserted in key order: base slices and new rows concatenated, the base's Arrow buffers reused;
    ``None`` when that would take more than ``max_pieces`` pieces."""
    if not len(new):
        return base
    at = np.searchsorted(base_keys, new_keys, side="left")
    cuts, first = np.unique(at, return_index=True)
    if 2 * len(cuts) + 1 > max_pieces:
        return None
    bounds = list(first[1:]) + [len(new)]
    pieces, start = [], 0
    for cut, lo, hi in zip(cuts.tolist(), first.tolist(), bounds):
        pieces += [base.iloc[start:cut], new.iloc[lo:hi]]
        start = cut
    pieces.append(base.iloc[start:])
    return pd.concat([p for p in pieces if len(p)], ignore_index=True)


def frame_refs(frame: pd.DataFrame, encode) -> set[str] | None:
    """The refs an ``add_edges`` frame names (ends and evidence), as given and as ``encode`` writes them; ``None``
    when an evidence cell is not a list or tuple (the full lookups then answer for it)."""
    values = frame["from_ref"].tolist() + frame["to_ref"].tolist()
    for cell in frame["evidence"].tolist():
        if not isinstance(cell, (list, tuple)):
            return None
        values.extend(cell)
    out = set()
    for value in values:
        if isinstance(value, str):
            out.add(value)
        text = encode(value)
        if text is not None:
            out.add(text)
    return out
