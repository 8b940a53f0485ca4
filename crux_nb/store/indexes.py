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

import pyarrow as pa

from .generations import inside
from . import parts
from .parts import PartPool, write_table
from .reading import read_bytes, read_part

__all__ = ["SavedIndex", "fingerprint", "write_indexes", "read_indexes"]

#: Index frames are numbers (8 bytes each in the part-size estimate) that Parquet packs several times tighter
#: than text: their parts aim at this many times PART_BYTES, so opening reads fewer files.
INDEX_PART_BYTES = 8
_NAME = re.compile(r"^[a-z][a-z0-9_]{0,40}$")
_PART = re.compile(r"^part-\d{5}\.parquet$")


@dataclass(frozen=True)
class SavedIndex:
    """One index read back: its params and its frames (Arrow tables)."""

    name: str
    params: dict
    frames: dict[str, pa.Table]


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
        entries = {frame: write_table(target / frame, data, partition_rows=partition_rows, pool=pool,
                                      table=f"{name}/{frame}", part_bytes=INDEX_PART_BYTES * parts.PART_BYTES)
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


def _read_frame(root: Path, folder: Path, entry: dict, *, verify: bool) -> pa.Table:
    pieces = []
    for part in entry["parts"]:
        if not _PART.match(part["file"]):
            raise ValueError("not a part file name")
        file = inside(root, folder / part["file"], "an index part")
        # read once, checked and decoded from the same bytes (a ChecksumMismatch is a ValueError)
        table = read_part(read_bytes(file), part["sha256"], verify=verify)
        if table.num_rows != part["rows"]:
            raise ValueError("row count mismatch")
        pieces.append(table)
    return pieces[0] if len(pieces) == 1 else pa.concat_tables(pieces)
