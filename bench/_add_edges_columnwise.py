"""``kb.add_edges`` as it was before the issue-14 vectorisation (commit 63508c9), for ``bench/add_edges.py`` to
time against in the same run: column-wise checks on Python lists, the edge ids' canonical JSON written and
hashed row by row in Python, the merge building its frames from object arrays. :func:`previous_with_edges`
is that ``with_edges`` (same signature); the merge is the snapshot in :mod:`bench._add_edges_previous` (the same code at that commit).
"""
# ruff: noqa
from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import replace
from itertools import chain
from typing import Any

import numpy as np
import pandas as pd

from crux_nb.errors import CruxError
from crux_nb.refs import EntityRef, as_ref, encode_ref
from crux_nb.schema import coerce, has_surrogate, require_columns
from crux_nb.store.rows import (DIRECTIONS, EDGE_COLUMNS, EVIDENCE_COLUMNS, check_type_name, edge_rows,
                                positive_finite)
from bench._add_edges_previous import _merge_edges, existing_refs


def is_missing(value: Any) -> bool:
    """None, NA, NaT or NaN (``crux_nb.store.rows.is_missing`` of that commit)."""
    return value is None or value is pd.NA or value is pd.NaT or (isinstance(value, float) and value != value)


class _Reject(Exception):
    """Something the reference implementation must look at (it raises the proper error)."""


def _column(frame: pd.DataFrame, name: str, default: Any) -> list:
    if name not in frame.columns:
        return [default] * len(frame)
    return [default if is_missing(v) else v for v in frame[name].tolist()]


def _factorize(values) -> tuple[np.ndarray, list]:
    """Codes (-1 for a missing cell) and distinct values, in C (pandas' hash tables)."""
    try:
        codes, uniques = pd.factorize(values)
    except TypeError:  # an unhashable cell (a list where a string belongs)
        raise _Reject from None
    return codes, list(uniques)


def _types(frame: pd.DataFrame) -> tuple[np.ndarray, tuple[np.ndarray, list]]:
    """The type of each row, and (codes, distinct values)."""
    codes, uniques = _factorize(frame["type"])
    if (codes < 0).any():
        raise _Reject
    for value in uniques:
        try:
            check_type_name(value, "")
        except CruxError:
            raise _Reject from None
    return np.asarray(uniques, dtype=object)[codes], (codes, uniques)


def _directions(frame: pd.DataFrame) -> tuple[np.ndarray, tuple[np.ndarray, list]]:
    if "direction" not in frame.columns:
        return np.full(len(frame), "directed", dtype=object), (np.zeros(len(frame), dtype=np.intp), ["directed"])
    codes, uniques = _factorize(frame["direction"])
    if not all(isinstance(v, str) and v in DIRECTIONS for v in uniques):
        raise _Reject
    table = [*uniques, "directed"]  # code -1 (missing) -> the default
    return np.asarray(table, dtype=object)[codes], (codes, table)


def _encode_end(value: Any, existing: set[str], entities: dict[str, str]) -> str:
    if isinstance(value, str) and value in existing:
        return str(value)  # the knowledge base's own (canonical) encoding
    if isinstance(value, str) and value.startswith("entity:") and len(value) > 7 and not any(
            c in value[7:] for c in ":%"):
        entities.setdefault(str(value), value[7:])
        return str(value)
    try:
        ref = as_ref(value)
        text = encode_ref(ref)
    except CruxError:
        raise _Reject from None
    if isinstance(ref, EntityRef):
        entities.setdefault(text, ref.entity_id)
    elif text not in existing:
        raise _Reject
    return text


def _ends(frame: pd.DataFrame, directions: np.ndarray, existing: set[str],
          entities: dict[str, str]) -> tuple[np.ndarray, np.ndarray, tuple, tuple]:
    """Encoded ``(lo, hi)`` ends: both columns factorised together, symmetric edges' ends sorted; and each
    as (codes, distinct encodings)."""
    n = len(frame)
    both = pd.concat([frame["from_ref"], frame["to_ref"]], ignore_index=True)
    codes, uniques = _factorize(both)
    if (codes < 0).any():
        raise _Reject
    encoded = [_encode_end(v, existing, entities) for v in uniques]
    if has_surrogate("".join(encoded)):
        raise _Reject
    # rank of each distinct encoding: Python string order, as the row loop's ends.sort()
    rank, texts = pd.factorize(np.asarray(encoded, dtype=object), sort=True)
    texts = np.asarray(texts, dtype=object)
    frm, to = rank[codes[:n]], rank[codes[n:]]
    swap = (directions == "symmetric") & (to < frm)
    lo, hi = np.where(swap, to, frm), np.where(swap, frm, to)
    return texts[lo], texts[hi], (lo, texts), (hi, texts)


def _evidence(series: pd.Series, chunk_sources: dict[str, str]) -> tuple[np.ndarray, list[str]]:
    """Per-row evidence counts and the flat list of encoded chunk refs."""
    values = series.tolist()
    if all(type(v) is list for v in values):
        counts = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        flat = list(chain.from_iterable(values))
    else:
        if any(isinstance(v, str) or not hasattr(v, "__iter__") for v in values):
            raise _Reject
        lists = [list(v) for v in values]
        counts = np.fromiter(map(len, lists), dtype=np.int64, count=len(lists))
        flat = list(chain.from_iterable(lists))
    if len(counts) and counts.min() == 0:
        raise _Reject
    codes, uniques = _factorize(np.asarray(flat, dtype=object))
    if (codes < 0).any():
        raise _Reject
    encoded = []
    for value in uniques:
        if isinstance(value, str) and value in chunk_sources:
            encoded.append(str(value))
            continue
        try:
            text = encode_ref(as_ref(value, kinds=("chunk",)))
        except CruxError:
            raise _Reject from None
        if text not in chunk_sources:
            raise _Reject
        encoded.append(text)
    return counts, np.asarray(encoded, dtype=object)[codes].tolist()


def _weights(frame: pd.DataFrame) -> np.ndarray:
    if "weight" not in frame.columns:
        return np.ones(len(frame))
    series = frame["weight"]
    if (pd.api.types.is_numeric_dtype(series) and not pd.api.types.is_bool_dtype(series)
            and not pd.api.types.is_complex_dtype(series)):
        array = series.to_numpy(dtype="float64", na_value=np.nan)
        array = np.where(np.isnan(array), 1.0, array)  # a missing weight is 1.0
        if not (np.isfinite(array) & (array > 0)).all():
            raise _Reject
        return array
    out = []
    for value in series.tolist():
        value = 1.0 if is_missing(value) else value
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not positive_finite(value):
            raise _Reject  # bools go through the reference too: it accepts True as 1.0
        out.append(float(value))
    return np.asarray(out, dtype="float64")


def _texts(frame: pd.DataFrame, name: str, *, empty_is_missing: bool = False) -> np.ndarray:
    """An optional text column: strings or None (``""`` too when ``empty_is_missing``)."""
    if name not in frame.columns:
        return np.full(len(frame), None, dtype=object)
    codes, uniques = _factorize(frame[name])
    if not all(isinstance(v, str) for v in uniques) or has_surrogate("".join(uniques)):
        raise _Reject
    table = [None if empty_is_missing and not v else str(v) for v in uniques]
    return np.asarray([*table, None], dtype=object)[codes]


_NEEDS_ESCAPE = re.compile(r'["\\\x00-\x1f\ud800-\udfff]')  # what json.dumps(ensure_ascii=False) escapes


def _quoted(coded: tuple[np.ndarray, list]) -> list[str]:
    """``json.dumps`` of every cell of a (codes, distinct values) column (plain strings are only wrapped in
    quotes), once per distinct value."""
    codes, uniques = coded
    table = [json.dumps(v, ensure_ascii=False) if _NEEDS_ESCAPE.search(v) else f'"{v}"' for v in uniques]
    return np.asarray(table, dtype=object)[codes].tolist()


def _edge_ids(types: tuple, lo: tuple, hi: tuple, directions: tuple, stage: str) -> list[str]:
    """``stable_id("edge", {...})`` of every row: the canonical JSON (sorted keys, no spaces) written per row
    from the quoted distinct values, then hashed."""
    stage_json = json.dumps(stage, ensure_ascii=False)
    sha = hashlib.sha256
    return ["edge_" + sha(f'{{"direction":{d},"from":{f},"stage":{stage_json},"to":{t},"type":{y}}}'
                          .encode("utf-8", "surrogatepass")).hexdigest()[:16]
            for d, f, t, y in zip(_quoted(directions), _quoted(lo), _quoted(hi), _quoted(types))]


def fast_edge_rows(frame: pd.DataFrame, *, existing: set[str], chunk_sources: dict[str, str], stage: str,
                   provenance: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]] | None:
    """What :func:`crux_nb.store.rows.edge_rows` returns for ``frame``, or ``None`` if a row needs reporting."""
    try:
        (types, type_codes), (directions, direction_codes) = _types(frame), _directions(frame)
        entities: dict[str, str] = {}
        lo, hi, lo_codes, hi_codes = _ends(frame, directions, existing, entities)
        counts, supports = _evidence(frame["evidence"], chunk_sources)
        descriptions = _texts(frame, "description", empty_is_missing=True)
        weights = _weights(frame)
    except _Reject:
        return None
    ids = _edge_ids(type_codes, lo_codes, hi_codes, direction_codes, stage)
    n = len(ids)
    edges = dict(zip(EDGE_COLUMNS, (ids, types, lo, hi, directions, weights, [stage] * n, descriptions)))
    evidence_ids = np.repeat(np.asarray(ids, dtype=object), counts) if n else []
    evidence_ids = np.repeat(np.asarray(ids, dtype=object), counts) if n else []
    evidence = dict(zip(EVIDENCE_COLUMNS, (evidence_ids, [chunk_sources[r] for r in supports], supports,
                                           [provenance] * len(supports))))
    return edges, evidence, entities


_HEX = np.full(256, -1, dtype=np.int64)
_HEX[np.frombuffer(b"0123456789abcdef", dtype=np.uint8)] = np.arange(16)




def previous_with_edges(state: Any, frame: pd.DataFrame, *, stage: str = "user",
                        provenance: str = "exact") -> Any:
    """``with_edges`` of commit 63508c9."""
    require_columns(frame, ["from_ref", "to_ref", "type", "evidence"], what="the frame passed to add_edges()")
    existing = existing_refs(state)
    chunk_sources = dict(zip(state.chunks["ref"].tolist(), state.chunks["source_id"].tolist()))
    rows = fast_edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage=stage, provenance=provenance)
    if rows is None:
        rows = edge_rows(frame, existing=existing, chunk_sources=chunk_sources, stage=stage, provenance=provenance)
    return _merge_edges(state, *rows)

