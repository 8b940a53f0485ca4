"""Edge ids column-wise: ``stable_id("edge", {...})`` of every row, without Python work per row.

An edge id is ``"edge_"`` and the first 16 hex digits of the SHA-256 of the edge's canonical JSON (sorted
keys, no spaces, :func:`crux_nb._hashing.canonical_json`)::

    {"direction":D,"from":F,"stage":S,"to":T,"type":Y}

where D, F, T and Y are ``json.dumps`` of strings. Here each *distinct* value is quoted once (a dictionary
of quoted values), Arrow assembles the rows' UTF-8 texts (dictionary takes and one element-wise join, in C),
``hashlib`` hashes them through ``map`` (C calls, no Python frame per row), and the digests' first eight
bytes become hex digits and integer keys as numpy operations. The ids are byte for byte those of the row
loop (:func:`crux_nb.store.rows.edge_rows`); ``tests/test_edges_fast.py`` checks it on random strings.
"""

from __future__ import annotations

import hashlib
import json
from operator import methodcaller

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["Coded", "constant", "edge_ids", "head_keys", "hex_ids", "id_keys", "quoted", "strings", "text_column",
           "text_ranks"]

#: A column as (codes into a dictionary of distinct values, the dictionary as an Arrow string array).
Coded = tuple[np.ndarray, pa.Array]

STRING = pa.large_string()  # the storage of pandas' ``str`` dtype
# what json.dumps(..., ensure_ascii=False) escapes in a string (RE2 syntax); a lone surrogate cannot be in Arrow
_NEEDS_ESCAPE = r'["\\\x00-\x1f]'
_DIGEST = methodcaller("digest")
_HEX_DIGITS = np.frombuffer(b"0123456789abcdef", dtype=np.uint8)
# a byte -> its two hex digits (one uint16 in memory order); two digits (as uint16) -> their byte, 256 if not hex
_BYTE_HEX = (_HEX_DIGITS[np.arange(256) >> 4].astype(np.uint16)
             | (_HEX_DIGITS[np.arange(256) & 15].astype(np.uint16) << 8)).astype("<u2")
_HEX_BYTE = np.full(65536, 256, dtype=np.uint16)
_HEX_BYTE[_BYTE_HEX.view(np.uint16)] = np.arange(256, dtype=np.uint16)
_PREFIX = np.frombuffer(b"edge_", dtype=np.uint8)
_ID_LENGTH = 21  # "edge_" + 16 hex digits
HASH_BLOCK = 65_536  # rows whose texts are assembled and hashed together


def strings(values) -> pa.Array:
    """An Arrow string array of ``values`` (str or None)."""
    return pa.array(values, type=STRING)


def constant(value: str, n: int) -> Coded:
    """``n`` rows of one value, coded."""
    return np.zeros(n, dtype=np.intp), strings([value])


def text_ranks(texts: pa.Array) -> tuple[np.ndarray, pa.Array]:
    """Each text's rank among the distinct texts in Python string order (UTF-8 byte order), and those.

    >>> rank, distinct = text_ranks(strings(["b", "a", "b"]))
    >>> rank.tolist(), distinct.to_pylist()
    ([1, 0, 1], ['a', 'b'])
    """
    order = pc.array_sort_indices(texts).to_numpy()
    ordered = texts.take(pa.array(order))
    new = np.ones(len(order), dtype=bool)
    if len(order) > 1:
        new[1:] = pc.not_equal(ordered[1:], ordered[:-1]).to_numpy(zero_copy_only=False)
    rank = np.empty(len(order), dtype=np.intp)
    rank[order] = np.cumsum(new) - 1
    return rank, ordered.filter(pa.array(new))


def text_column(coded: Coded, order: np.ndarray | None = None) -> pd.Series:
    """A ``str`` column from (codes, dictionary) (code -1: a missing value), its rows in ``order``: one Arrow take.

    >>> text_column((np.array([1, -1, 0]), strings(["x", "y"]))).tolist()
    ['y', nan, 'x']
    """
    codes, table = coded
    codes = codes if order is None else codes[order]
    return pd.Series(table.take(pa.array(codes, mask=codes < 0)), dtype="str")


def quoted(values: pa.Array) -> pa.Array:
    """``json.dumps(v, ensure_ascii=False)`` of every string: most are only wrapped in quotes, the few with a
    character JSON escapes go through ``json.dumps``."""
    mark = pa.scalar('"', STRING)
    out = pc.binary_join_element_wise(mark, values, mark, pa.scalar("", STRING))
    needs = pc.match_substring_regex(values, _NEEDS_ESCAPE).to_numpy(zero_copy_only=False)
    if needs.any():
        texts = out.to_pylist()
        for i in np.flatnonzero(needs):
            texts[i] = json.dumps(values[int(i)].as_py(), ensure_ascii=False)
        out = strings(texts)
    return out


def hex_ids(heads: np.ndarray) -> pa.Array:
    """``edge_<16 hex digits>`` of each row of digest heads (``(n, 8)`` bytes), as an Arrow string array."""
    n = len(heads)
    grid = np.empty((n, _ID_LENGTH), dtype=np.uint8)
    grid[:, :5] = _PREFIX
    grid[:, 5:] = _BYTE_HEX[heads].view(np.uint8).reshape(n, 16)
    offsets = np.arange(0, _ID_LENGTH * (n + 1), _ID_LENGTH, dtype=np.int64)
    return pa.LargeStringArray.from_buffers(n, pa.py_buffer(offsets), pa.py_buffer(grid))


def head_keys(heads: np.ndarray) -> np.ndarray:
    """The ids' integer keys (what :func:`id_keys` reads back from the ids) of digest heads."""
    return np.ascontiguousarray(heads).view(">u8").ravel().astype(np.uint64)


def edge_ids(direction: Coded, start: Coded, end: Coded, kind: Coded, stage: str) -> np.ndarray:
    """The first 8 bytes of each row's SHA-256 (``(n, 8)`` uint8; :func:`hex_ids` makes the ids), for rows
    whose direction, from ref, to ref and type are the given coded columns."""
    n = len(kind[0])
    if not n:
        return np.zeros((0, 8), dtype=np.uint8)
    text = lambda s: pa.scalar(s, STRING)  # noqa: E731
    columns = [(codes, quoted(table)) for codes, table in (direction, start, end, kind)]
    stage_key = text(f',"stage":{json.dumps(stage, ensure_ascii=False)},"to":')
    heads = np.empty((n, 8), dtype=np.uint8)
    for low in range(0, n, HASH_BLOCK):  # a block of rows at a time: the texts of 1M edges are not held at once
        parts = [table.take(codes[low:low + HASH_BLOCK]) for codes, table in columns]
        body = pc.binary_join_element_wise(
            text('{"direction":'), parts[0], text(',"from":'), parts[1], stage_key, parts[2], text(',"type":'),
            parts[3], text("}"), text(""))
        data = body.cast(pa.large_binary()).to_pylist()  # UTF-8 bytes, as stable_id encodes them
        digests = b"".join(map(_DIGEST, map(hashlib.sha256, data)))
        heads[low:low + len(data)] = np.frombuffer(digests, dtype=np.uint8).reshape(len(data), 32)[:, :8]
    return heads


def id_keys(ids) -> np.ndarray | None:
    """``edge_<16 lowercase hex>`` ids as unsigned integers (same order as the strings), or ``None`` if any id
    is something else. Read from the bytes of an Arrow column (a pandas ``str`` Series), else of the strings."""
    n = len(ids)
    grid = _id_grid(ids, n)
    if grid is None or (n and (grid[:, :5] != _PREFIX).any()):
        return None
    values = _HEX_BYTE[np.ascontiguousarray(grid[:, 5:]).view("<u2")]
    if (values > 255).any():
        return None
    return head_keys(values.astype(np.uint8))


def _id_grid(ids, n: int) -> np.ndarray | None:
    """The ids' bytes as an ``(n, 21)`` grid, or ``None`` when an id is not 21 ASCII characters."""
    values = getattr(ids, "array", None)
    if n and hasattr(values, "__arrow_array__"):  # a pandas str column: its Arrow buffers, no copy per id
        array = pa.array(values)
        if isinstance(array, pa.ChunkedArray):
            array = array.combine_chunks()
        if not pa.types.is_large_string(array.type) or array.null_count:
            return None
        offsets = np.frombuffer(array.buffers()[1], dtype=np.int64)[array.offset:array.offset + n + 1]
        if not (np.diff(offsets) == _ID_LENGTH).all():
            return None
        data = np.frombuffer(array.buffers()[2], dtype=np.uint8)
        return data[offsets[0]:offsets[0] + _ID_LENGTH * n].reshape(n, _ID_LENGTH)
    try:
        raw = np.asarray(ids, dtype=f"S{_ID_LENGTH + 1}")  # one byte more than an id: a longer string shows there
    except (UnicodeEncodeError, ValueError, TypeError):
        return None
    if raw.ndim != 1:
        return None
    grid = raw.view(np.uint8).reshape(len(raw), _ID_LENGTH + 1)
    if n and grid[:, _ID_LENGTH].any():
        return None
    return grid[:, :_ID_LENGTH]
