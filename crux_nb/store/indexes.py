"""Indexes saved with a generation, so the first query after ``crux_nb.open()`` does not rebuild them.

An index is derived data: frames its owner (the lexical leg, ...) computes from the tables and can rebuild at
any time. A save stores each one under ``generations/<g>/indexes/<name>/<frame>/part-*.parquet``, cut and
linked like the tables (:mod:`crux_nb.store.parts`: an unchanged part costs no bytes), and records in the
manifest its ``params`` and a *fingerprint*: the SHA-256 of the part checksums of the tables it was built
from, with the params. ``open()`` hands an index back only when its fingerprint matches the tables it
opened; a missing, mismatched or unreadable index is skipped (the owner rebuilds it on first use), never an
error: the tables alone are the knowledge base.

Layout of one generation::

    generations/g000003/manifest.json       "indexes": {"lexical": {"params", "depends", "fingerprint", "frames"}}
    generations/g000003/indexes/lexical/postings/part-00000.parquet ...
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from .generations import inside
from . import parts
from .parts import PartPool, write_table
from .reading import PART_FILE, checked_bytes, decode_part, read_bytes

__all__ = ["SavedIndex", "SavedFrame", "fingerprint", "write_indexes", "read_indexes"]

#: Index frames are numbers (8 bytes each in the part-size estimate) that Parquet packs several times tighter
#: than text: their parts aim at this many times PART_BYTES. Cut by content only (no row cap), a part holds a run
#: of whole sources; 2 keeps the part a one-source change rewrites near a table part's size (8 gave 3 MB postings
#: parts at 100k chunks).
INDEX_PART_BYTES = 2
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")


@dataclass(frozen=True)
class SavedIndex:
    """One index read back: its params and its frames."""

    name: str
    params: dict
    frames: dict[str, SavedFrame]


class SavedFrame:
    """One frame of a saved index: its parts' bytes, checked against the manifest when read, and decoded a column at
    a time when the owner asks (a column it does not read, such as the postings' partition key, costs nothing: 18M
    int64 keys are 144 MB decoded at 200k chunks).

    >>> import io, pyarrow.parquet as pq
    >>> sink = io.BytesIO(); pq.write_table(pa.table({"key": [7, 7], "n": [1, 2]}), sink)
    >>> SavedFrame([sink.getvalue()]).column("n").to_pylist()
    [1, 2]
    """

    def __init__(self, parts: list[bytes], num_rows: int | None = None):
        self._parts = parts
        self.num_rows = num_rows if num_rows is not None else sum(_rows(data) for data in parts)

    def column(self, name: str) -> pa.ChunkedArray:
        """The column ``name`` of every part, in order (a ``ValueError`` when the frame has none)."""
        pieces = [self._decode(data, [name]) for data in self._parts]
        return pa.chunked_array([chunk for piece in pieces for chunk in piece.column(name).chunks],
                                type=pieces[0].schema.field(name).type)

    def arrays(self, names: list[str]) -> dict[str, np.ndarray]:
        """The number columns ``names`` as numpy arrays, decoded a part at a time into arrays made once: joining
        decoded parts would touch twice the memory (on this kind of machine, first-touched memory costs more
        than the decoding itself).

        >>> import io, pyarrow.parquet as pq
        >>> sink = io.BytesIO(); pq.write_table(pa.table({"key": [7, 7], "n": [1, 2]}), sink)
        >>> SavedFrame([sink.getvalue()] * 2).arrays(["n"])["n"].tolist()
        [1, 2, 1, 2]
        """
        out: dict[str, np.ndarray] = {}
        start = 0
        for data in self._parts:
            piece = self._decode(data, names)
            for name in names:
                values = piece.column(name).to_numpy()
                if name not in out:
                    out[name] = np.empty(self.num_rows, dtype=values.dtype)
                out[name][start:start + len(values)] = values
            start += piece.num_rows
        if start != self.num_rows:
            raise ValueError("row count mismatch")
        return out

    @staticmethod
    def _decode(data: bytes, names: list[str]) -> pa.Table:
        return decode_part(data, names)  # a ValueError for a missing name


def fingerprint(tables: dict, depends: list[str], params: Any) -> str | None:
    """The SHA-256 naming the content of the ``depends`` tables (their parts' checksums) and ``params``; None
    when a table's entry lists no checksums (a format 1 manifest).

    >>> tables = {"chunks": {"parts": [{"sha256": "ab"}]}, "documents": {"file": "documents.parquet"}}
    >>> len(fingerprint(tables, ["chunks"], {"k": 1})), fingerprint(tables, ["documents"], {})
    (64, None)
    """
    listed = {}
    for table in depends:
        entry = tables.get(table)
        parts = entry.get("parts") if isinstance(entry, dict) else None
        if not isinstance(parts, list) or not all(isinstance(p, dict) and "sha256" in p for p in parts):
            return None
        listed[table] = [p["sha256"] for p in parts]
    text = json.dumps({"tables": listed, "params": params}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()


def write_indexes(folder: Path, provided: dict[str, dict], tables: dict, *, partition_rows: int,
                  pool: PartPool) -> dict:
    """Write each provided index (``{name: {"params", "depends", "frames": {frame: DataFrame}}}``) under
    ``folder/indexes``; returns the manifest's ``indexes`` entry."""
    out = {}
    for name, index in provided.items():
        frames = index["frames"]
        if not _NAME.match(name) or not all(_NAME.match(f) for f in frames):
            raise ValueError(f"index and frame names are lowercase words: {name!r}, {sorted(frames)}")
        target = folder / "indexes" / name
        target.mkdir(parents=True)
        # cut by content only: a split every partition_rows rows inside a content-defined part moves with every
        # row inserted or removed before it (one source removed rewrote ten postings parts at 100k chunks), and
        # partition_rows bounds the tables Dask reads, not these frames
        entries = {frame: write_table(target / frame, data, partition_rows=max(partition_rows, len(data), 1),
                                      pool=pool, table=f"{name}/{frame}",
                                      part_bytes=INDEX_PART_BYTES * parts.PART_BYTES)
                   for frame, data in frames.items()}
        out[name] = {"params": index["params"], "depends": list(index["depends"]),
                     "fingerprint": fingerprint(tables, list(index["depends"]), index["params"]), "frames": entries}
    return out


def read_indexes(root: Path, folder: Path, manifest: dict, *, verify: bool) -> dict[str, SavedIndex]:
    """The indexes of one generation whose fingerprint matches its tables (others are left out)."""
    found = {}
    listed = manifest.get("indexes")
    for name, index in (listed.items() if isinstance(listed, dict) else ()):
        try:
            if not (_NAME.match(name) and isinstance(index, dict) and isinstance(index.get("depends"), list)):
                continue
            expected = fingerprint(manifest.get("tables", {}), index["depends"], index.get("params"))
            if expected is None or expected != index.get("fingerprint"):
                continue
            frames = {frame: _read_frame(root, folder / "indexes" / name / frame, entry, verify=verify)
                      for frame, entry in index["frames"].items() if _NAME.match(frame)}
        except (OSError, ValueError, KeyError, TypeError, AttributeError, pa.ArrowException):
            continue  # derived data: rebuilt on first use
        found[name] = SavedIndex(name, index.get("params"), frames)
    return found


def _read_frame(root: Path, folder: Path, entry: dict, *, verify: bool) -> SavedFrame:
    pieces = []
    for part in entry["parts"]:
        if not PART_FILE.match(part["file"]):
            raise ValueError("not a part file name")
        file = inside(root, folder / part["file"], "an index part")
        # read once, checked here and decoded later from the same bytes (a ChecksumMismatch is a ValueError)
        data = checked_bytes(read_bytes(file), part["sha256"], verify=verify)
        if _rows(data) != part["rows"]:
            raise ValueError("row count mismatch")
        pieces.append(data)
    return SavedFrame(pieces, sum(part["rows"] for part in entry["parts"]))


def _rows(data: bytes) -> int:
    return pq.ParquetFile(pa.BufferReader(data)).metadata.num_rows
