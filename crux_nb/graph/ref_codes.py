"""One factorisation of every ref the graph indexes read, as codes into the sorted distinct refs.

The adjacency (edge ends) and the traversal index (edge ends, chunks, sections, documents) each number their
nodes by sorted ref, so that comparing codes compares refs. Built one after the other, each hashed the same
million strings again: the adjacency factorised the edge ends, the traversal index sorted the union and looked
every chunk, section and edge-end ref up in it (~0.8 s of a 1.5 s build at 200k chunks and 1M edges).
:func:`sorted_codes` hashes every string once, in Arrow (no Python string per value), sorts only the distinct
ones, and gives each input its codes.
"""

from __future__ import annotations

from typing import Sequence

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["sorted_codes"]


def sorted_codes(members: Sequence, lookups: Sequence = ()) -> tuple[np.ndarray, list[np.ndarray], list[np.ndarray]]:
    """(refs, member codes, lookup codes): ``refs`` the distinct values of ``members`` in code-point order (an
    object array of ``str``); each member's values as codes into ``refs``; each lookup's values likewise, -1 for a
    value (or a missing one) not among the members. Inputs are string Series or object arrays.

    >>> refs, (a, b), (c,) = sorted_codes([np.array(["b", "é", "a"], dtype=object), pd.Series(["c", "a"])],
    ...                                   [np.array(["x", "b"], dtype=object)])
    >>> refs.tolist(), a.tolist(), b.tolist(), c.tolist()
    (['a', 'b', 'c', 'é'], [1, 3, 0], [2, 0], [-1, 1])
    """
    columns = [_arrow_chunks(values) for values in (*members, *lookups)]
    sizes = [sum(len(c) for c in chunks) for chunks in columns]
    if not sum(sizes):
        return np.zeros(0, dtype=object), [np.zeros(0, dtype=np.int64) for _ in members], \
            [np.zeros(0, dtype=np.int64) for _ in lookups]
    # chunk by chunk, one hash table: no copy of the strings into one array (at 2.4M refs the copy alone costs
    # half of what the encoding does); every chunk comes back with the whole dictionary
    encoded = pc.dictionary_encode(pa.chunked_array([c for chunks in columns for c in chunks], pa.large_string()))
    dictionary = encoded.chunk(encoded.num_chunks - 1).dictionary  # tests/test_ref_codes.py checks the "every"
    # a missing value gets the slot past the dictionary's end, whose rank is -1
    indices = np.concatenate([pc.fill_null(c.indices, len(dictionary)).to_numpy(zero_copy_only=False)
                              for c in encoded.chunks]).astype(np.int64)
    n_members = sum(sizes[:len(members)])
    is_member = np.zeros(len(dictionary) + 1, dtype=bool)
    is_member[indices[:n_members]] = True
    is_member[-1] = False
    order = pc.sort_indices(dictionary).to_numpy()  # UTF-8 byte order is code-point order, Python's str order
    kept = order[is_member[order]]
    rank = np.full(len(dictionary) + 1, -1, dtype=np.int64)
    rank[kept] = np.arange(len(kept))
    refs = dictionary.take(pa.array(kept)).to_numpy(zero_copy_only=False)
    codes = np.split(rank[indices], np.cumsum(sizes)[:-1])
    return refs.astype(object), codes[:len(members)], codes[len(members):]


def _arrow_chunks(values) -> list[pa.Array]:
    """``values`` as large-string Arrow arrays: an Arrow-backed string Series's own buffers (no Python string per
    value), anything else through an object array."""
    if isinstance(values, pd.Series) and isinstance(values.dtype, pd.StringDtype) and values.dtype.storage == "pyarrow":
        arrow = pa.array(values.array)
        chunks = arrow.chunks if isinstance(arrow, pa.ChunkedArray) else [arrow]
    else:
        chunks = [pa.array(np.asarray(values, dtype=object), type=pa.large_string(), from_pandas=True)]
    return [c.cast(pa.large_string()) for c in chunks if len(c)]
