"""Table parts that survive between generations: a save writes only the parts whose bytes changed.

A table is cut into parts at *content-defined* boundaries, as backup tools cut files (rsync, restic): a part
ends before a row whose key (the table's first column: ``ref``, ``edge_id``, ``source_id``...) starts a new
value whose hash has its low ``bits`` bits all zero. A boundary therefore depends on that row alone, not on
its position: inserting or removing one source's rows moves the boundaries of the part around it only, and
every other part keeps its exact bytes. ``bits`` is chosen so a part holds about :data:`PART_BYTES` of
text; it is recorded per table in the manifest and kept while the table stays within a factor 4 of the size it
was chosen for, so boundaries do not all move when a table grows a little. A table below that size is one
part (split every ``partition_rows`` rows, as before).

Each part is encoded to Parquet in memory and named by the SHA-256 of its bytes (recorded in the manifest, as
before). A part whose SHA-256 an earlier generation kept already lists is not written again: the new
generation's file is a hard link to the earlier one (a copy where the file system has no hard links), so it
costs a directory entry instead of its bytes. Generations stay self-contained folders: retention deletes a
generation's folder, and a part lives on as long as a kept generation links it; a reader of generation
``g000002`` never looks into another generation's folder. Paths in manifests are relative, and the only
file-system operations are write, link-or-copy, rename and delete, so an ``fsspec`` store can hold the same
layout (an object store would replace the link by a server-side copy, or by a reference in the manifest).
"""

from __future__ import annotations

import hashlib
import json
import math
import os
import shutil
import weakref
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from .generations import fsync_dir, generation_folder, inside, kept

__all__ = ["PART_BYTES", "PartPool", "part_pool", "cut_points", "write_table", "fsync_dir", "remember",
           "saved_entries", "link_unchanged"]

#: About this much text (uncompressed) per part of a big table: one small change rewrites about this much.
PART_BYTES = 1 << 20
_SAMPLE = 256  # rows sampled to estimate a table's bytes per row


@dataclass(frozen=True)
class Reusable:
    """One part file an earlier kept generation lists: where it is and what the manifest says of it."""

    path: Path
    rows: int
    size: int | None


class PartPool:
    """The part files of the kept generations, by SHA-256: what a save may link instead of writing."""

    def __init__(self, parts: dict[str, Reusable] | None = None, cuts: dict[str, int] | None = None):
        self.parts = parts or {}
        self.cuts = cuts or {}
        self.written = 0  # bytes this save wrote to part files
        self.linked = 0  # bytes it reused

    def reuse(self, digest: str, rows: int, size: int, target: Path) -> bool:
        """Link (or copy) an earlier part with this SHA-256 to ``target``; False when none is usable."""
        found = self.parts.get(digest)
        if found is None or found.rows != rows or (found.size is not None and found.size != size):
            return False
        try:
            if found.path.stat().st_size != size:  # damaged since: write the part again
                return False
            _link_or_copy(found.path, target)
        except OSError:
            return False
        self.linked += size
        return True


def _link_or_copy(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except OSError:  # no hard links here (another file system, FAT, some network shares): copy the bytes
        shutil.copyfile(source, target)
        with open(target, "rb+") as fh:
            os.fsync(fh.fileno())


def part_pool(root: Path) -> PartPool:
    """Every part listed by a kept generation's manifest, tables and saved indexes (damaged or half-deleted
    generations are skipped; a listed file that is gone is simply not reused)."""
    parts: dict[str, Reusable] = {}
    cuts: dict[str, int] = {}
    for generation in kept(root):
        try:
            folder = generation_folder(root, generation)
            manifest = json.loads((folder / "manifest.json").read_text(encoding="utf-8"))
        except (OSError, ValueError, TypeError):
            continue
        for name, where, entry in _datasets(manifest, folder):
            if isinstance(entry.get("cut_bits"), int):
                cuts[name] = entry["cut_bits"]  # the newest generation's choice wins (kept() is oldest first)
            for part in entry["parts"]:
                _add(parts, root, where, part)
    return PartPool(parts, cuts)


def _datasets(manifest: Any, folder: Path):
    """(name, folder, entry) of every part-file dataset a manifest lists: its tables, then its indexes' frames."""
    if not isinstance(manifest, dict):
        return
    tables = manifest.get("tables")
    for table, entry in (tables.items() if isinstance(tables, dict) else ()):
        if isinstance(entry, dict) and isinstance(entry.get("parts"), list) and isinstance(table, str):
            yield table, folder / table, entry
    indexes = manifest.get("indexes")
    for name, index in (indexes.items() if isinstance(indexes, dict) else ()):
        frames = index.get("frames") if isinstance(index, dict) else None
        for frame, entry in (frames.items() if isinstance(frames, dict) else ()):
            if isinstance(entry, dict) and isinstance(entry.get("parts"), list) and "/" not in f"{name}{frame}":
                yield f"{name}/{frame}", folder / "indexes" / name / frame, entry


def _add(parts: dict[str, Reusable], root: Path, folder: Path, part: Any) -> None:
    if not (isinstance(part, dict) and isinstance(part.get("file"), str) and isinstance(part.get("sha256"), str)
            and isinstance(part.get("rows"), int)) or "/" in part["file"] or part["file"].startswith("."):
        return
    path = folder / part["file"]
    try:
        inside(root, path, "a part file")
    except Exception:  # a link leaving the folder is never reused (reading it raises on open)
        return
    size = part.get("bytes")
    parts.setdefault(part["sha256"], Reusable(path, part["rows"], size if isinstance(size, int) else None))


def _bytes_per_row(frame: pd.DataFrame) -> float:
    """Text bytes per row, estimated on evenly spaced rows (numbers count 8 bytes)."""
    if not len(frame):
        return 1.0
    sample = frame.iloc[np.linspace(0, len(frame) - 1, min(_SAMPLE, len(frame))).astype(int)]
    total = 0.0
    for column in sample.columns:
        values = sample[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            total += 8 * len(values)
        else:
            total += float(sum(len(v) if isinstance(v, (str, bytes)) else len(str(v)) for v in values.tolist()))
    return max(total / len(sample), 1.0)


def cut_bits(frame: pd.DataFrame, keys: np.ndarray, previous: int | None, part_bytes: int | None = None) -> int:
    """How many low hash bits must be zero at a boundary, for parts of about ``part_bytes`` (default
    :data:`PART_BYTES`); the previous generation's choice while it stays within a factor 4 (2 bits) of the ideal."""
    rows_per_part = (part_bytes or PART_BYTES) / _bytes_per_row(frame)
    n_keys = int(np.count_nonzero(keys[1:] != keys[:-1])) + 1 if len(keys) else 1
    ideal = max(0, round(math.log2(max(rows_per_part * n_keys / max(len(frame), 1), 1.0))))
    return previous if previous is not None and abs(previous - ideal) <= 2 else ideal


def cut_points(frame: pd.DataFrame, *, partition_rows: int, previous_bits: int | None = None,
               part_bytes: int | None = None) -> tuple[
        list[tuple[int, int]], int | None]:
    """The (start, end) rows of each part, and the boundary bits used (None: one part, split by size only).

    Examples
    --------
    >>> import pandas as pd
    >>> from crux_nb.store.parts import cut_points
    >>> small = pd.DataFrame({"ref": ["a", "b", "c"], "n": [1, 2, 3]})
    >>> cut_points(small, partition_rows=2)  # a small table: split by partition_rows only
    ([(0, 2), (2, 3)], None)
    >>> big = pd.DataFrame({"ref": [f"r{i:05d}" for i in range(20_000)], "text": ["x" * 200] * 20_000})
    >>> spans, bits = cut_points(big, partition_rows=100_000)
    >>> bits, len(spans) > 2, spans[0][0], spans[-1][1]
    (12, True, 0, 20000)
    """
    n = len(frame)
    bits = None
    starts = [0]
    if n and len(frame.columns) and n * _bytes_per_row(frame) > 2 * (part_bytes or PART_BYTES):
        column = frame[frame.columns[0]]
        if not (pd.api.types.is_string_dtype(column) or pd.api.types.is_integer_dtype(column)) or column.isna().any():
            column = pd.Series([repr(v) for v in column.tolist()], dtype="str")
        keys = pd.util.hash_pandas_object(column, index=False).to_numpy()
        bits = cut_bits(frame, keys, previous_bits, part_bytes)
        mask = np.uint64((1 << bits) - 1)
        boundary = (keys[1:] & mask) == 0
        boundary &= keys[1:] != keys[:-1]  # never inside one key's rows
        starts += (np.flatnonzero(boundary) + 1).tolist()
    ends = starts[1:] + [max(n, 0)]
    spans = []
    for start, end in zip(starts, ends):
        spans += [(a, min(a + partition_rows, end)) for a in range(start, max(end, start + 1), partition_rows)]
    return spans or [(0, 0)], bits


def encode(piece: pd.DataFrame, schema: pa.Schema) -> bytes:
    """One part's Parquet bytes (the same rows always give the same bytes, wherever they sit in the table)."""
    sink = pa.BufferOutputStream()
    pq.write_table(pa.Table.from_pandas(piece, schema=schema, preserve_index=False), sink)
    return sink.getvalue().to_pybytes()


def write_table(folder: Path, frame: pd.DataFrame, *, partition_rows: int, pool: PartPool | None = None,
                table: str | None = None, part_bytes: int | None = None) -> dict:
    """Write ``frame`` as the part files of ``folder`` (created here), reusing ``pool``'s parts with the same
    bytes; returns the manifest entry (``folder``, ``rows``, ``parts`` with file, rows, sha256 and bytes, and
    ``cut_bits`` when the table was cut by content). At least one file, so an empty table keeps its schema."""
    pool = pool if pool is not None else PartPool()
    folder.mkdir()
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    spans, bits = cut_points(frame, partition_rows=partition_rows, previous_bits=pool.cuts.get(table or folder.name),
                             part_bytes=part_bytes)
    parts = []
    for number, (start, end) in enumerate(spans):
        file = folder / f"part-{number:05d}.parquet"
        data = encode(frame.iloc[start:end], schema)
        digest = hashlib.sha256(data).hexdigest()
        if not pool.reuse(digest, end - start, len(data), file):
            _write_bytes(file, data)
            pool.written += len(data)
        parts.append({"file": file.name, "rows": end - start, "sha256": digest, "bytes": len(data)})
    fsync_dir(folder)
    entry = {"folder": folder.name, "rows": len(frame), "parts": parts}
    if bits is not None:
        entry["cut_bits"] = bits
    return entry


_SAVED = "saved-parts"  # KBState.shared key: table -> (weak reference to the frame, its manifest entry)


def remember(shared: dict, table: str, frame: pd.DataFrame, entry: Any) -> None:
    """Note that ``frame`` (a state's table, immutable) is stored as the parts ``entry`` lists: a later save of
    the same frame object links those parts without encoding the table again."""
    if isinstance(entry, dict) and isinstance(entry.get("parts"), list):
        shared.setdefault(_SAVED, {})[table] = (weakref.ref(frame), entry)


def saved_entries(state: Any) -> dict[str, dict]:
    """The manifest entry of each of ``state``'s tables that is stored as it is in memory (the very frame object
    was last saved or read as those parts: :func:`remember`), keyed by table; a table changed since is left out."""
    found = state.shared.get(_SAVED, {})
    return {table: entry for table, (frame, entry) in list(found.items()) if frame() is state.frame(table)}


def link_unchanged(folder: Path, shared: dict, table: str, frame: pd.DataFrame, *, partition_rows: int,
                   pool: PartPool) -> dict | None:
    """The manifest entry of ``frame`` written by linking the parts it was last saved or read as (``remember``),
    when it is that very frame object and every part is still in ``pool``; None otherwise (nothing written)."""
    found = shared.get(_SAVED, {}).get(table)
    if found is None or found[0]() is not frame:
        return None
    entry = found[1]
    parts = entry["parts"]
    if not all(isinstance(p, dict) and p.get("sha256") in pool.parts and isinstance(p.get("bytes"), int)
               and isinstance(p.get("rows"), int) and p["rows"] <= partition_rows for p in parts):
        return None
    folder.mkdir()
    for number, part in enumerate(parts):
        if not pool.reuse(part["sha256"], part["rows"], part["bytes"], folder / f"part-{number:05d}.parquet"):
            shutil.rmtree(folder)
            return None
    fsync_dir(folder)
    return {**entry, "folder": folder.name,
            "parts": [{**p, "file": f"part-{n:05d}.parquet"} for n, p in enumerate(parts)]}


def _write_bytes(file: Path, data: bytes) -> None:
    with open(file, "wb") as fh:
        fh.write(data)
        fh.flush()
        os.fsync(fh.fileno())
