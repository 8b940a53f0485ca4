"""Reading a generation's part files back at the cost of one pass over their bytes.

``crux_nb.open`` checks every part file against the SHA-256 its manifest lists. Reading a file, hashing it and
then letting Parquet read it again costs two passes and, per file, the set-up of a Parquet dataset; here each
part is read into memory once, hashed there and decoded from those same bytes, so what is decoded is exactly
what was checked (a file replaced between the check and the decoding cannot slip through). The parts of one
dataset are joined as Arrow tables and converted to pandas once.

JSON-valued columns (``metadata``, ``aliases``...) repeat a few distinct values over many rows (``{}`` on most
chunks): each distinct text is decoded once and the read-only value shared by the rows that hold it.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..errors import StorageError
from .generations import RESTORE

__all__ = ["ChecksumMismatch", "PART_FILE", "listed_files", "read_bytes", "checked_bytes", "read_part", "decode_part",
           "join_parts", "decode_json"]

PART_FILE = re.compile(r"^part-\d{5}\.parquet$")


class ChecksumMismatch(ValueError):
    """A part file's bytes do not hash to the SHA-256 its manifest lists."""


def read_bytes(path: Path) -> bytes:
    """A part file's bytes (``FileNotFoundError`` when it is gone: retention removed it under a slow reader)."""
    with open(path, "rb") as fh:
        return fh.read()


def read_part(data: bytes, sha256: Any, *, verify: bool = True) -> pa.Table:
    """The Parquet table held by ``data``, after checking (with ``verify``) that its SHA-256 is ``sha256``, the
    manifest's value (a manifest that lists none fails the check).

    Raises :class:`ChecksumMismatch`, or what pyarrow raises on bytes that are not Parquet.

    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> sink = io.BytesIO(); pq.write_table(pa.table({"n": [1, 2]}), sink); data = sink.getvalue()
    >>> read_part(data, hashlib.sha256(data).hexdigest()).num_rows
    2
    >>> read_part(data, None)
    Traceback (most recent call last):
    ...
    crux_nb.store.reading.ChecksumMismatch: checksum mismatch
    >>> read_part(data, None, verify=False).num_rows
    2
    """
    return decode_part(checked_bytes(data, sha256, verify=verify))


def decode_part(data: bytes, columns: list[str] | None = None) -> pa.Table:
    """The Parquet bytes ``data`` decoded (only ``columns``, when given: a ``ValueError`` for a missing one), by
    ``ParquetFile.read``: half ``read_table``'s cost per part (no dataset set-up), which hundreds of parts add up.

    >>> import io, pyarrow as pa, pyarrow.parquet as pq
    >>> sink = io.BytesIO(); pq.write_table(pa.table({"n": [1, 2]}), sink)
    >>> decode_part(sink.getvalue(), ["n"]).num_rows
    2
    >>> decode_part(sink.getvalue(), ["m"])
    Traceback (most recent call last):
    ...
    ValueError: no column ['m']
    """
    table = pq.ParquetFile(pa.BufferReader(data)).read(columns=columns)
    if columns is not None and sorted(table.column_names) != sorted(columns):  # read() leaves a missing one out
        raise ValueError(f"no column {sorted(set(columns) - set(table.column_names))}")
    return table


def checked_bytes(data: bytes, sha256: Any, *, verify: bool = True) -> bytes:
    """``data``, after checking (with ``verify``) that its SHA-256 is ``sha256`` (:class:`ChecksumMismatch` if not).

    >>> checked_bytes(b"x", hashlib.sha256(b"x").hexdigest())
    b'x'
    """
    if verify and hashlib.sha256(data).hexdigest() != sha256:
        raise ChecksumMismatch("checksum mismatch")
    return data


def join_parts(pieces: list[pa.Table], arrange: Callable[[pa.Table], pa.Table] | None = None) -> pd.DataFrame:
    """One frame of a dataset's parts, in order (Arrow tables joined, then converted once; parts written by
    different saves whose schemas Arrow cannot unify are converted one by one and concatenated by pandas);
    ``arrange``, when given, reorders the joined rows before they are converted.

    >>> import pyarrow as pa
    >>> join_parts([pa.table({"n": [1]}), pa.table({"n": [2, 3]})])["n"].tolist()
    [1, 2, 3]
    """
    if len(pieces) == 1:
        joined = pieces[0]
    else:
        try:
            joined = pa.concat_tables(pieces, promote_options="default")
        except (pa.ArrowInvalid, pa.ArrowTypeError):
            frame = pd.concat([piece.to_pandas() for piece in pieces], ignore_index=True)
            if arrange is None:
                return frame
            joined = pa.Table.from_pandas(frame, preserve_index=False)
    return (joined if arrange is None else arrange(joined)).to_pandas()


def decode_json(values: pd.Series, convert: Callable[[Any], Any]) -> pd.Series:
    """``convert(json.loads(text))`` for every text of ``values`` (an object Series on the same index), decoding
    each distinct text once; the rows holding one text share its (read-only) value. A missing value raises
    ``TypeError``, as ``json.loads`` does.

    >>> import pandas as pd
    >>> out = decode_json(pd.Series(['[1, 2]', '[]', '[1, 2]'], dtype="str"), tuple)
    >>> out.tolist(), out.dtype, out[0] is out[2]
    ([(1, 2), (), (1, 2)], dtype('O'), True)
    """
    codes, uniques = pd.factorize(values, use_na_sentinel=True)
    if len(codes) and codes.min() < 0:
        raise TypeError("the JSON object must be str, bytes or bytearray, not a missing value")
    decoded = np.empty(len(uniques), dtype=object)
    for i, text in enumerate(uniques.tolist()):
        decoded[i] = convert(json.loads(text))  # one by one: numpy would unpack tuples into a second axis
    return pd.Series(decoded[codes], dtype="object", index=values.index)


def listed_files(folder: Path, table: str, entry: Any, where: str) -> list[tuple[Path, dict]]:
    """The part files the manifest lists for ``table``; names are checked so a manifest cannot point elsewhere."""
    if isinstance(entry, dict) and entry.get("file") == f"{table}.parquet":  # format 1: one file per table
        return [(folder / entry["file"], entry)]
    parts = entry.get("parts") if isinstance(entry, dict) and entry.get("folder") == table else None
    if not isinstance(parts, list) or not parts or not all(
            isinstance(p, dict) and isinstance(p.get("file"), str) and PART_FILE.match(p["file"]) for p in parts):
        raise StorageError(f"{where} is not listed in the manifest.", hint=RESTORE)
    return [(folder / table / p["file"], p) for p in parts]
