"""Column-wise validation of ``add_edges`` / ``add_entities`` frames (the fast path).

Each check runs once per *distinct* value of a column (relation types, directions,
refs, evidence chunks), or as one Arrow or numpy operation (the refs of the knowledge base,
plain entity refs, weights). Columns stay (codes, dictionary) pairs until the edge ids are
hashed (:mod:`crux_nb.store.edge_ids`) and the rows sorted by id; each stored column is then
one Arrow dictionary take, a pandas ``str`` Series (500k edges: about 2 CPU seconds, most of
it SHA-256; the row loop takes about 30).

The fast path only ever *accepts*: when any value fails, or is of a kind it does not
handle itself, it returns ``None`` and the caller runs the row-by-row reference
(:mod:`crux_nb.store.rows`), which raises the error naming the first bad row. So both
paths accept the same frames, produce the same rows and raise the same errors.
"""

from __future__ import annotations

from collections.abc import Mapping
from itertools import chain
from operator import itemgetter
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

from ..errors import CruxError
from ..refs import EntityRef, as_ref, encode_ref
from ..schema import has_surrogate
from .edge_ids import Coded, constant, edge_ids, head_keys, hex_ids, strings, text_column, text_ranks
from .rows import (DIRECTIONS, EDGE_COLUMNS, ENTITY_COLUMNS, EVIDENCE_COLUMNS, check_type_name, is_missing,
                   positive_finite)

__all__ = ["fast_edge_rows", "fast_entity_rows"]


class _Reject(Exception):
    """Something the reference implementation must look at (it raises the proper error)."""


def _column(frame: pd.DataFrame, name: str, default: Any) -> list:
    if name not in frame.columns:
        return [default] * len(frame)
    return [default if is_missing(v) else v for v in frame[name].tolist()]


def _factorize(values) -> tuple[np.ndarray, Any]:
    """Codes (-1 for a missing cell) and distinct values (an index or array), in C (pandas' hash tables)."""
    try:
        return pd.factorize(values)
    except TypeError:  # an unhashable cell (a list where a string belongs)
        raise _Reject from None


def _strings(values: list) -> pa.Array:
    """An Arrow string array, or :class:`_Reject` for a string Arrow cannot hold (a lone surrogate)."""
    try:
        return strings(values)
    except (pa.ArrowException, UnicodeError, TypeError, ValueError):
        raise _Reject from None


def _arrow_strings(values) -> pa.Array | None:
    """The Arrow array behind a pandas ``str`` column or index (no copy), or ``None`` for other storage."""
    array = getattr(values, "array", None)
    if not (pd.api.types.is_string_dtype(getattr(values, "dtype", None)) and hasattr(array, "__arrow_array__")):
        return None
    array = pa.array(array)
    array = array.combine_chunks() if isinstance(array, pa.ChunkedArray) else array
    return array if pa.types.is_large_string(array.type) or pa.types.is_string(array.type) else None


def _coded_column(codes: np.ndarray, uniques: list, default: str | None = None) -> Coded:
    """(codes, dictionary) with missing cells (code -1) pointing at ``default``, the dictionary's last entry."""
    if (codes < 0).any():
        return np.where(codes < 0, len(uniques), codes), _strings([*uniques, default])
    return codes, _strings(uniques)


def _types(frame: pd.DataFrame) -> Coded:
    codes, uniques = _factorize(frame["type"])
    uniques = uniques.tolist()
    if (codes < 0).any():
        raise _Reject
    for value in uniques:
        try:
            check_type_name(value, "")
        except CruxError:
            raise _Reject from None
    return codes, strings([str(v) for v in uniques])


def _directions(frame: pd.DataFrame) -> Coded:
    if "direction" not in frame.columns:
        return np.zeros(len(frame), dtype=np.intp), strings(["directed"])
    codes, uniques = _factorize(frame["direction"])
    uniques = uniques.tolist()
    if not all(isinstance(v, str) and v in DIRECTIONS for v in uniques):
        raise _Reject
    return _coded_column(codes, [str(v) for v in uniques], "directed")


def _encode_end(value: Any, existing: set[str], entities: dict[str, str]) -> str:
    """The encoding of one end the column-wise checks did not vouch for (a ref object, an escaped id...)."""
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


def _encode_ends(uniques, existing: set[str], entities: dict[str, str]) -> pa.Array:
    """The encoding of each distinct end. Strings that are refs of the knowledge base, or plain entity refs
    (``entity:<id>``, no ``:`` or ``%`` in the id), are their own encoding: checked column-wise."""
    texts = _arrow_strings(uniques)
    if texts is None:  # objects (ref objects, numbers...): the strings among them are checked column-wise
        values = list(uniques)
        texts = _strings([str(v) if isinstance(v, str) else None for v in values])
    else:
        values = uniques
    mask = lambda condition: pc.fill_null(condition, False).to_numpy(zero_copy_only=False)  # noqa: E731
    known = mask(pc.is_in(texts, value_set=strings(list(existing))))
    entity = mask(pc.and_(pc.and_(pc.starts_with(texts, "entity:"), pc.greater(pc.utf8_length(texts), 7)),
                          pc.invert(pc.match_substring_regex(pc.utf8_slice_codeunits(texts, 7), "[:%]"))))
    entity &= ~known
    named = texts.filter(pa.array(entity))
    entities.update(zip(named.to_pylist(), pc.utf8_slice_codeunits(named, 7).to_pylist()))
    other = np.flatnonzero(~(known | entity))
    if not len(other):
        return texts
    encoded = texts.to_pylist()
    for i in other:
        encoded[i] = _encode_end(values[i], existing, entities)
    if has_surrogate("".join(encoded[i] for i in other)):
        raise _Reject
    return _strings(encoded)


def _ends(frame: pd.DataFrame, directions: Coded, existing: set[str], entities: dict[str, str]) -> tuple[Coded, Coded]:
    """Encoded ``(lo, hi)`` ends, each as (codes, distinct encodings in string order): both columns factorised
    together, symmetric edges' ends sorted."""
    n = len(frame)
    both = pd.concat([frame["from_ref"], frame["to_ref"]], ignore_index=True)
    codes, uniques = _factorize(both)
    if (codes < 0).any():
        raise _Reject
    rank, texts = text_ranks(_encode_ends(uniques, existing, entities))
    frm, to = rank[codes[:n]], rank[codes[n:]]
    codes_d, table_d = directions
    symmetric = np.asarray(pc.equal(table_d, "symmetric").to_numpy(zero_copy_only=False), dtype=bool)
    swap = symmetric[codes_d] & (to < frm)
    return (np.where(swap, to, frm), texts), (np.where(swap, frm, to), texts)


def _evidence(series: pd.Series, chunk_sources: dict[str, str]) -> tuple[np.ndarray, Coded]:
    """Per-row evidence counts and the flat column of encoded chunk refs."""
    values = series.tolist()
    if set(map(type, values)) == {list}:
        counts = np.fromiter(map(len, values), dtype=np.int64, count=len(values))
        one = len(counts) and counts.min() == counts.max() == 1  # one chunk per edge: no chain needed
        flat = list(map(itemgetter(0), values)) if one else list(chain.from_iterable(values))
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
    table = []
    for value in uniques.tolist():
        if type(value) is str and value in chunk_sources:
            table.append(value)
            continue
        try:
            text = encode_ref(as_ref(value, kinds=("chunk",)))
        except CruxError:
            raise _Reject from None
        if text not in chunk_sources:
            raise _Reject
        table.append(text)
    return counts, (codes, strings(table))


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


def _texts(frame: pd.DataFrame, name: str, *, empty_is_missing: bool = False) -> Coded:
    """An optional text column: strings or None (``""`` too when ``empty_is_missing``), as (codes, dictionary)."""
    if name not in frame.columns:
        return np.zeros(len(frame), dtype=np.intp), strings([None])
    codes, uniques = _factorize(frame[name])
    uniques = uniques.tolist()
    if not all(isinstance(v, str) for v in uniques) or has_surrogate("".join(uniques)):
        raise _Reject
    return _coded_column(codes, [None if empty_is_missing and not v else str(v) for v in uniques])


def _objects(coded: Coded) -> np.ndarray:
    codes, table = coded
    return np.asarray(table.to_pylist(), dtype=object)[codes]


def _edge_order(heads: np.ndarray) -> np.ndarray:
    """Rows by id when the ids are distinct (the order the merge stores them in, so it need not sort), else
    as given (a repeated edge: the merge keeps the first one)."""
    keys = head_keys(heads)
    order = np.argsort(keys, kind="stable")
    if len(order) > 1 and (keys[order][1:] == keys[order][:-1]).any():
        return np.arange(len(keys))
    return order


def _evidence_order(order: np.ndarray, counts: np.ndarray, chunks: Coded) -> tuple[np.ndarray, np.ndarray]:
    """Positions of the evidence rows (flat, in frame order) for edges in ``order``, chunks sorted within an
    edge; and the position in ``order`` of each row's edge."""
    if not len(counts) or counts.max() == 1:
        return order, np.arange(len(order))
    starts = np.cumsum(counts) - counts
    sizes = counts[order]
    edge = np.repeat(np.arange(len(order)), sizes)
    flat = starts[order][edge] + np.arange(len(edge)) - (np.cumsum(sizes) - sizes)[edge]
    rank, _ = text_ranks(chunks[1])
    within = np.lexsort((rank[chunks[0][flat]], edge))
    return flat[within], edge[within]


def fast_edge_rows(frame: pd.DataFrame, *, existing: set[str], chunk_sources: dict[str, str], stage: str,
                   provenance: str) -> tuple[dict[str, Any], dict[str, Any], dict[str, str]] | None:
    """What :func:`crux_nb.store.rows.edge_rows` returns for ``frame`` (as columns: pandas Series of the
    stored dtypes), or ``None`` if a row needs reporting. Rows come sorted by id when the ids are distinct
    (and evidence by id and chunk), which is how the merge stores them: the merge's result is the same."""
    if not all(type(v) is str and not has_surrogate(v) for v in (stage, provenance)):
        return None
    try:
        types, directions = _types(frame), _directions(frame)
        entities: dict[str, str] = {}
        lo, hi = _ends(frame, directions, existing, entities)
        counts, supports = _evidence(frame["evidence"], chunk_sources)
        descriptions = _texts(frame, "description", empty_is_missing=True)
        weights = _weights(frame)
    except _Reject:
        return None
    heads = edge_ids(directions, lo, hi, types, stage)
    order = _edge_order(heads)
    heads = heads[order]
    edges = dict(zip(EDGE_COLUMNS, (
        pd.Series(hex_ids(heads), dtype="str"), text_column(types, order), text_column(lo, order),
        text_column(hi, order), text_column(directions, order), pd.Series(weights[order], dtype="float64"),
        text_column(constant(stage, len(order))), text_column(descriptions, order))))
    rows, edge = _evidence_order(order, counts, supports)
    sources = (supports[0], strings([chunk_sources[r] for r in supports[1].to_pylist()]))
    evidence = dict(zip(EVIDENCE_COLUMNS, (pd.Series(hex_ids(heads[edge]), dtype="str"),
                                           text_column(sources, rows), text_column(supports, rows),
                                           text_column(constant(provenance, len(rows))))))
    return edges, evidence, entities


def _aliases(values: list) -> list[tuple[str, ...]]:
    out = []
    for value in values:
        if (isinstance(value, (str, bytes, Mapping)) or not hasattr(value, "__iter__")
                or not all(isinstance(a, str) for a in value)):
            raise _Reject
        out.append(tuple(sorted(set(value))))
    if has_surrogate("".join(a for row in out for a in row)):
        raise _Reject
    return out


def fast_entity_rows(frame: pd.DataFrame) -> dict[str, list] | None:
    """What :func:`crux_nb.store.rows.entity_rows` returns for ``frame``, or ``None`` if a row needs reporting."""
    ids, names = frame["entity_id"].tolist(), frame["canonical_name"].tolist()
    if not all(isinstance(e, str) and e and isinstance(m, str) and m.strip() for e, m in zip(ids, names)):
        return None
    if has_surrogate("".join(ids)) or has_surrogate("".join(names)):
        return None
    try:
        aliases = _aliases(_column(frame, "aliases", ()))
        types, descriptions = _objects(_texts(frame, "type")), _objects(_texts(frame, "description"))
    except _Reject:
        return None
    refs = [encode_ref(EntityRef(e)) for e in ids]
    return dict(zip(ENTITY_COLUMNS, (ids, refs, [m.strip() for m in names], types, aliases, descriptions)))
