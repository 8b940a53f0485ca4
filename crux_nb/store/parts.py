"""Table parts that survive between generations: a save writes only the parts whose bytes changed.

A table is cut into parts at *content-defined* boundaries, as backup tools cut files (rsync, restic): a part
ends before a row whose key (the table's first column: ``ref``, ``edge_id``, ``source_id``...) starts a new
value whose hash has its low ``bits`` bits all zero. A boundary therefore depends on that row alone, not on
its position: inserting or removing one source's rows moves the boundaries of the part around it only, and
every other part keeps its exact bytes. ``bits`` is chosen so a part holds about :data:`PART_BYTES` of
text; it is recorded per table in the manifest and kept while the table stays within a factor 4 of the size it
was chosen for, so boundaries do not all move when a table grows a little. A table below that size is one
part (split every ``partition_rows`` rows, as before).

Each part is named by the SHA-256 of its Parquet bytes (recorded in the manifest, as before) and by the *row
digest* of its values (``"rows_sha256"``, :mod:`crux_nb.store.row_digest`: read from the Arrow buffers in place,
no encoding). A part whose rows a kept generation's part holds is linked without encoding it; the others are
encoded in memory. A part whose SHA-256 an earlier generation kept already lists is not written again: the new
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
from .row_digest import row_digests

__all__ = ["PART_BYTES", "PartPool", "part_pool", "cut_points", "run_starts", "write_table", "fsync_dir", "remember",
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

    def __init__(self, parts: dict[str, Reusable] | None = None, cuts: dict[str, int] | None = None,
                 by_rows: dict[str, str] | None = None):
        self.parts = parts or {}
        self.cuts = cuts or {}
        self.by_rows = by_rows or {}  # row digest (crux_nb.store.row_digest) -> SHA-256 of a part holding those rows
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
    by_rows: dict[str, str] = {}
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
                if _add(parts, root, where, part) and isinstance(part.get("rows_sha256"), str):
                    by_rows.setdefault(part["rows_sha256"], part["sha256"])
    return PartPool(parts, cuts, by_rows)


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


def _add(parts: dict[str, Reusable], root: Path, folder: Path, part: Any) -> bool:
    """Add one manifest part entry to ``parts``; False when it is not reusable (malformed, or leaving ``root``)."""
    if not (isinstance(part, dict) and isinstance(part.get("file"), str) and isinstance(part.get("sha256"), str)
            and isinstance(part.get("rows"), int)) or "/" in part["file"] or part["file"].startswith("."):
        return False
    path = folder / part["file"]
    try:
        inside(root, path, "a part file")
    except Exception:  # a link leaving the folder is never reused (reading it raises on open)
        return False
    size = part.get("bytes")
    parts.setdefault(part["sha256"], Reusable(path, part["rows"], size if isinstance(size, int) else None))
    return True


def _bytes_per_row(frame: pd.DataFrame) -> float:
    """Text bytes per row, estimated on evenly spaced rows (numbers count 8 bytes)."""
    if not len(frame):
        return 1.0
    rows = np.linspace(0, len(frame) - 1, min(_SAMPLE, len(frame))).astype(int).tolist()
    total = 0.0
    for column in frame.columns:
        values = frame[column]
        if pd.api.types.is_numeric_dtype(values) or pd.api.types.is_bool_dtype(values):
            total += 8 * len(rows)
        else:  # value by value: a take of an Arrow column of many chunks would join them all first
            array = values.array
            values = map(array.__getitem__, rows)
            total += float(sum(len(v) if isinstance(v, (str, bytes)) else len(str(v)) for v in values))
    return max(total / len(rows), 1.0)


def cut_bits(frame: pd.DataFrame, n_keys: int, previous: int | None, part_bytes: int | None = None) -> int:
    """How many low hash bits must be zero at a boundary, for parts of about ``part_bytes`` (default
    :data:`PART_BYTES`) in a table of ``n_keys`` runs of equal keys; the previous generation's choice while it
    stays within a factor 4 (2 bits) of the ideal."""
    rows_per_part = (part_bytes or PART_BYTES) / _bytes_per_row(frame)
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
        runs = run_starts(column)  # never cut inside one key's rows, so only a run's first key is hashed
        keys = pd.util.hash_pandas_object(column.iloc[runs], index=False).to_numpy()
        bits = cut_bits(frame, len(runs), previous_bits, part_bytes)
        boundary = (keys[1:] & np.uint64((1 << bits) - 1)) == 0
        starts += runs[1:][boundary].tolist()
    ends = starts[1:] + [max(n, 0)]
    spans = []
    for start, end in zip(starts, ends):
        spans += [(a, min(a + partition_rows, end)) for a in range(start, max(end, start + 1), partition_rows)]
    return spans or [(0, 0)], bits


def encode(piece: pa.Table) -> bytes:
    """One part's Parquet bytes (the same rows always give the same bytes, wherever they sit in the table)."""
    sink = pa.BufferOutputStream()
    pq.write_table(piece, sink)
    return sink.getvalue().to_pybytes()


def run_starts(column: pd.Series) -> np.ndarray:
    """The rows where ``column``'s value differs from the row before (row 0 included; none when it is empty).

    >>> run_starts(pd.Series(["a", "a", "b", "a"], dtype="str")).tolist()
    [0, 2, 3]
    """
    if not len(column):
        return np.zeros(0, dtype=np.int64)
    values = column.array
    differs = np.asarray(values[1:] != values[:-1], dtype=bool)
    return np.concatenate([[0], np.flatnonzero(differs) + 1]).astype(np.int64)


def write_table(folder: Path, frame: pd.DataFrame, *, partition_rows: int, pool: PartPool | None = None,
                table: str | None = None, part_bytes: int | None = None) -> dict:
    """Write ``frame`` as the part files of ``folder`` (created here), reusing ``pool``'s parts with the same
    bytes; returns the manifest entry (``folder``, ``rows``, ``parts`` with file, rows, sha256 and bytes, and
    ``cut_bits`` when the table was cut by content). At least one file, so an empty table keeps its schema."""
    pool = pool if pool is not None else PartPool()
    folder.mkdir()
    schema = pa.Schema.from_pandas(frame, preserve_index=False)
    arrow = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)  # the frame's own buffers, no copy
    spans, bits = cut_points(frame, partition_rows=partition_rows, previous_bits=pool.cuts.get(table or folder.name),
                             part_bytes=part_bytes)
    parts = []
    for number, ((start, end), rows_digest) in enumerate(zip(spans, row_digests(arrow, spans))):
        file = folder / f"part-{number:05d}.parquet"
        part = _linked_by_rows(pool, rows_digest, end - start, file)  # rows an earlier part holds: not encoded
        if part is None:
            data = encode(arrow.slice(start, end - start))
            part = {"file": file.name, "rows": end - start, "sha256": hashlib.sha256(data).hexdigest(),
                    "bytes": len(data)}
            if not pool.reuse(part["sha256"], end - start, len(data), file):
                _write_bytes(file, data)
                pool.written += len(data)
        if rows_digest is not None:
            part["rows_sha256"] = rows_digest
        parts.append(part)
    fsync_dir(folder)
    entry = {"folder": folder.name, "rows": len(frame), "parts": parts}
    if bits is not None:
        entry["cut_bits"] = bits
    return entry


def _linked_by_rows(pool: PartPool, rows_digest: str | None, rows: int, file: Path) -> dict | None:
    """The manifest entry of ``file`` linked to an earlier part holding the same rows (its row digest), or None."""
    digest = pool.by_rows.get(rows_digest) if rows_digest is not None else None
    found = pool.parts.get(digest) if digest is not None else None
    if found is None or found.size is None or not pool.reuse(digest, rows, found.size, file):
        return None
    return {"file": file.name, "rows": rows, "sha256": digest, "bytes": found.size}


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
