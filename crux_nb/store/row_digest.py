"""What a part of a table holds, named without encoding it: a SHA-256 of its rows' Arrow buffers.

A save cuts each table into parts (:mod:`crux_nb.store.parts`) and names every part file by the SHA-256 of its
Parquet bytes; an unchanged part is linked, not written. Knowing that SHA-256 meant encoding the part, so a save
after one small edit still encoded every part of the tables it touched (at 200k chunks, 2.3 s of a 7 s save).
The *row digest* of a part is the SHA-256 of the values themselves: the table's schema (with its pandas
metadata), then per column the value lengths, the value bytes and the positions of the nulls. It reads the
Arrow buffers in place (no copy, ~1 GB/s), and does not depend on how the column is cut into Arrow chunks.
Rows with the same digest are the same values under the same schema, so they decode the same, and the part an
earlier generation wrote for that digest can be linked without encoding. The manifest records it per part
(``"rows_sha256"``).

Columns of other types (lists, structs, dictionaries, decimals) have no digest: those tables are encoded as
before.

>>> import pyarrow as pa
>>> table = pa.table({"ref": ["a", "bb", None], "n": [1, 2, 3]})
>>> one, = row_digests(table, [(0, 3)])
>>> again = pa.concat_tables([table.slice(0, 1), table.slice(1, 2)])  # two Arrow chunks, same rows
>>> row_digests(again, [(0, 3)]) == [one], row_digests(table, [(0, 2)]) == [one]
(True, False)
>>> row_digests(pa.table({"x": [[1], [2]]}), [(0, 2)])  # a list column: no digest
[None]
"""

from __future__ import annotations

import hashlib
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

__all__ = ["row_digests"]

_VERSION = b"crux_nb row digest 1\n"
#: From this many bytes of table the parts are hashed on two threads (SHA-256 runs at ~1 GB/s a core)
_THREADED_BYTES = 32 << 20
_WORKERS = 2


def row_digests(table: pa.Table, spans: list[tuple[int, int]]) -> list[str | None]:
    """The row digest (hex SHA-256) of rows ``start:end`` of ``table`` for each ``(start, end)`` of ``spans``;
    None for every span when a column's type has none."""
    if not all(_supported(field.type) for field in table.schema):
        return [None] * len(spans)
    head = hashlib.sha256(_VERSION + table.schema.serialize().to_pybytes())

    def one(span: tuple[int, int]) -> str:
        digest = head.copy()
        for column in table.columns:
            digest.update(_column_digest(column.slice(span[0], span[1] - span[0])))
        return digest.hexdigest()

    if len(spans) < 2 or table.nbytes < _THREADED_BYTES:
        return [one(span) for span in spans]
    with ThreadPoolExecutor(_WORKERS) as pool:  # hashlib lets go of the interpreter lock: a core each
        return list(pool.map(one, spans))


def _supported(kind: pa.DataType) -> bool:
    return (pa.types.is_string(kind) or pa.types.is_large_string(kind) or pa.types.is_binary(kind)
            or pa.types.is_large_binary(kind) or pa.types.is_boolean(kind)
            or (pa.types.is_primitive(kind) and not pa.types.is_null(kind) and kind.bit_width % 8 == 0))


def _column_digest(column: pa.ChunkedArray) -> bytes:
    """Lengths, bytes and null positions of one column's rows, each hashed as one stream over its chunks (so the
    chunking does not matter); a null slot's bytes count as they are (other bytes only lose a reuse)."""
    lengths, values, nulls = hashlib.sha256(), hashlib.sha256(), hashlib.sha256()
    kind = column.type
    row = 0
    for chunk in column.chunks:
        n = len(chunk)
        if chunk.null_count:
            nulls.update((np.flatnonzero(chunk.is_null().to_numpy(zero_copy_only=False)) + row).astype("<i8"))
        if pa.types.is_boolean(kind):
            values.update(pc.fill_null(chunk, False).to_numpy(zero_copy_only=False).astype(np.uint8))
        elif not n:
            pass
        elif pa.types.is_primitive(kind):
            width = kind.bit_width // 8
            values.update(memoryview(chunk.buffers()[1])[chunk.offset * width:(chunk.offset + n) * width])
        else:
            wide = pa.types.is_large_string(kind) or pa.types.is_large_binary(kind)
            offsets = np.frombuffer(chunk.buffers()[1], dtype="<i8" if wide else "<i4")
            offsets = offsets[chunk.offset:chunk.offset + n + 1]
            lengths.update(np.diff(offsets).astype("<i8"))
            if offsets[-1] > offsets[0]:
                values.update(memoryview(chunk.buffers()[2])[int(offsets[0]):int(offsets[-1])])
        row += n
    return lengths.digest() + values.digest() + nulls.digest() + row.to_bytes(8, "little")
