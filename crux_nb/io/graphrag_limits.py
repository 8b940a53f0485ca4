"""Reading one GraphRAG Parquet table within fixed limits (issue 36).

A Parquet file can be tiny and still decode to far more memory than the machine has: a 663 KB file holding
10⁸ dictionary-encoded rows made pyarrow abort the interpreter (``std::bad_alloc``: a notebook kernel dies). So
a table is read in two steps: the row and value counts from the file's metadata are checked first (nothing is
decoded), then every text column is read still dictionary-encoded, its decoded size is computed from the
dictionary's value lengths, and only a table within :data:`MAX_DECODED_BYTES` is decoded. Either limit raises
:class:`~crux_nb.errors.StorageError` with code ``graphrag_too_large`` naming the file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pandas as pd

from ..errors import StorageError

__all__ = ["MAX_ROWS", "MAX_VALUES", "MAX_DECODED_BYTES", "read_capped"]

#: Rows per GraphRAG table (GraphRAG's own outputs for a million-document corpus stay well below).
MAX_ROWS = 20_000_000
#: Leaf values per table (list columns such as ``text_unit_ids`` hold several values per row).
MAX_VALUES = 200_000_000
#: Decoded bytes per table (text after dictionary decoding, plus fixed-width columns).
MAX_DECODED_BYTES = 8 * 1024**3


def _too_large(file: Path, what: str, limit: int) -> StorageError:
    return StorageError(f"GraphRAG table {file.name!r} in {str(file.parent)!r} has {what}, over the limit of "
                        f"{limit:,}; it was not decoded.", code="graphrag_too_large",
                        hint="this is not an output GraphRAG writes for a corpus of any usual size; check the file "
                             "(crux_nb.io.graphrag_limits sets the limits).")


def _decoded_bytes(array: Any) -> int:
    """Bytes ``array`` takes once its dictionaries are decoded (computed from indices, nothing decoded)."""
    import pyarrow as pa
    import pyarrow.compute as pc

    kind = array.type
    if pa.types.is_dictionary(kind):
        lengths = pc.binary_length(array.dictionary) if (pa.types.is_string(kind.value_type) or pa.types.is_binary(
            kind.value_type) or pa.types.is_large_string(kind.value_type)) else None
        if lengths is None:
            return len(array) * 8
        total = pc.sum(lengths.take(array.indices)).as_py() or 0
        return int(total) + len(array) * 8
    if pa.types.is_list(kind) or pa.types.is_large_list(kind):
        return _decoded_bytes(array.flatten()) + len(array) * 8
    if pa.types.is_struct(kind):
        return sum(_decoded_bytes(array.field(i)) for i in range(kind.num_fields))
    return array.nbytes


def _plain_type(kind: Any) -> Any:
    """``kind`` with every dictionary type replaced by its value type."""
    import pyarrow as pa

    if pa.types.is_dictionary(kind):
        return kind.value_type
    if pa.types.is_list(kind):
        return pa.list_(pa.field(kind.value_field.name, _plain_type(kind.value_type)))
    if pa.types.is_large_list(kind):
        return pa.large_list(pa.field(kind.value_field.name, _plain_type(kind.value_type)))
    if pa.types.is_struct(kind):
        return pa.struct([pa.field(f.name, _plain_type(f.type)) for f in kind])
    return kind


def read_capped(file: Path) -> pd.DataFrame:
    """The table in ``file`` as a DataFrame, within :data:`MAX_ROWS`, :data:`MAX_VALUES` and
    :data:`MAX_DECODED_BYTES` (pyarrow errors propagate: the caller names them)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    meta = pq.ParquetFile(file).metadata
    if meta.num_rows > MAX_ROWS:
        raise _too_large(file, f"{meta.num_rows:,} rows", MAX_ROWS)
    values = sum(meta.row_group(g).column(c).num_values for g in range(meta.num_row_groups)
                 for c in range(meta.num_columns))
    if values > MAX_VALUES:
        raise _too_large(file, f"{values:,} values", MAX_VALUES)
    texts = [meta.schema.column(c).path for c in range(meta.num_columns)
             if meta.schema.column(c).physical_type == "BYTE_ARRAY"]
    table = pq.ParquetFile(file, read_dictionary=texts).read()
    size = sum(_decoded_bytes(chunk) for column in table.columns for chunk in column.chunks)
    if size > MAX_DECODED_BYTES:
        raise _too_large(file, f"{size:,} bytes once decoded", MAX_DECODED_BYTES)
    plain = pa.schema([pa.field(f.name, _plain_type(f.type), f.nullable) for f in table.schema],
                      metadata=table.schema.metadata)
    return table.cast(plain).to_pandas()
