"""A disk cache of derived arrays, outside any knowledge base: what an index built from saved tables costs to
build again, kept under a key naming the content it was built from, so a new process that opens the same tables
(a notebook restart) reads it back instead of building it.

The graph's indexes are the user (``crux_nb.open``; :mod:`crux_nb.graph.cached`). They are not saved with the
generation: they number every ref in sorted order, so one small source shifts most numbers and a save would
rewrite most of them (against "a save writes what changed", :mod:`crux_nb.store.parts`). A cache keyed by the
tables' part checksums costs a save no bytes in the knowledge base and is never wrong for the content it names.
A save fills it for the generation it wrote (``crux_nb.warming``); tables from elsewhere are built by their first
open, which caches them for the next.

Where: ``$CRUX_NB_CACHE_DIR``, else ``$XDG_CACHE_HOME/crux_nb``, else ``~/.cache/crux_nb`` (numba caches its
compiled loops the same way); ``CRUX_NB_CACHE_DIR=off`` turns it off. One entry is a folder ``<kind>/<key>/`` of
``.npy`` files and a ``meta.json`` listing each array's dtype, shape and CRC-32. It is written into a temporary
folder and renamed into place, so a reader sees a whole entry or none; the next writer removes the temporary
folder of a writer that died (its process gone; another host's after an hour). A read checks every CRC: a
damaged entry is removed, never read. :data:`KEEP` entries per kind are kept, the least recently read removed
first. The cache is derived data: any failure to read or write it is silent and costs only the build.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import socket
import time
import uuid
import zlib
from functools import lru_cache
from pathlib import Path

import numpy as np
import pyarrow as pa

__all__ = ["cache_root", "has_entry", "read_arrays", "write_arrays", "code_digest", "KEEP", "FORMAT"]

#: Entries kept per kind: one knowledge base's current content and a few others (~100 MB each at 200k chunks)
KEEP = 4
#: The layout of an entry; a different one is a different key
FORMAT = 1
_TEMP = ".tmp-"  # a temporary folder: .tmp-<host>-<pid>-<random>
_TEMP_AGE_S = 3600  # a temporary folder this old, of another host, belongs to a writer that died
_PACKAGE = Path(__file__).resolve().parents[1]  # crux_nb/


def cache_root(environ=None) -> Path | None:
    """The cache's folder, or None when ``CRUX_NB_CACHE_DIR=off`` (``environ``: ``os.environ`` by default).

    >>> cache_root({"CRUX_NB_CACHE_DIR": "off"}) is None, str(cache_root({"CRUX_NB_CACHE_DIR": "/tmp/c"}))
    (True, '/tmp/c')
    >>> str(cache_root({"XDG_CACHE_HOME": "/home/a/.cache"}))
    '/home/a/.cache/crux_nb'
    """
    environ = os.environ if environ is None else environ
    chosen = environ.get("CRUX_NB_CACHE_DIR")
    if chosen is not None:
        return None if chosen.strip().lower() in ("off", "") else Path(chosen)
    base = environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "crux_nb"


@lru_cache(maxsize=8)
def code_digest(*packages: str) -> str | None:
    """The SHA-256 of every ``.py`` file of the crux_nb ``packages`` (``"graph"``, ``"store"``), for a key that
    names the code an entry was made by: an entry another crux_nb wrote is never read. None when a file cannot
    be read (then nothing is cached).

    >>> len(code_digest("store")), code_digest("store") == code_digest("store", "graph")
    (64, False)
    """
    digest = hashlib.sha256()
    try:
        for package in packages:
            for path in sorted((_PACKAGE / package).rglob("*.py")):
                digest.update(str(path.relative_to(_PACKAGE)).encode() + b"\0" + path.read_bytes())
    except OSError:
        return None
    return digest.hexdigest()


def has_entry(kind: str, key: str | None) -> bool:
    """Whether an entry is cached under ``kind`` and ``key`` (a whole one: written entries are renamed into place
    with their ``meta.json``), without reading it."""
    root = cache_root()
    return root is not None and bool(key) and (root / kind / key / "meta.json").is_file()


def read_arrays(kind: str, key: str) -> dict[str, np.ndarray] | None:
    """The arrays cached under ``kind`` and ``key``, or None (no cache, no entry, or a damaged one: removed)."""
    root = cache_root()
    if root is None or not key:
        return None
    entry = root / kind / key
    try:
        meta = json.loads((entry / "meta.json").read_text(encoding="utf-8"))
        if meta.get("format") != FORMAT or meta.get("key") != key:
            raise ValueError("another layout")
        arrays = {name: _read_one(entry, name, spec) for name, spec in meta["arrays"].items()}
    except (OSError, ValueError, KeyError, TypeError, pa.ArrowException):
        # no entry, or not a whole one (writers rename whole entries into place: one without its meta.json is
        # left by something else), or a damaged one: removed, so the next build writes it again
        shutil.rmtree(entry, ignore_errors=True)
        return None
    try:
        os.utime(entry)  # read last: removed last (KEEP)
    except OSError:
        pass
    return arrays


def write_arrays(kind: str, key: str, arrays: dict[str, np.ndarray]) -> bool:
    """Cache ``arrays`` (numbers, or object arrays of ``str``) under ``kind`` and ``key``; whether it was written
    (False with the cache off, an entry already there, or a folder that cannot be written)."""
    root = cache_root()
    if root is None or not key:
        return False
    folder = root / kind
    temp = folder / f"{_TEMP}{socket.gethostname()}-{os.getpid()}-{uuid.uuid4().hex}"
    try:
        if (folder / key / "meta.json").exists():
            return False
        temp.mkdir(parents=True)
        specs = {name: _write_one(temp, name, values) for name, values in arrays.items()}
        (temp / "meta.json").write_text(json.dumps({"format": FORMAT, "key": key, "arrays": specs}), encoding="utf-8")
        os.rename(temp, folder / key)  # a reader sees the whole entry or none
    except OSError:
        shutil.rmtree(temp, ignore_errors=True)  # another process renamed the same entry first, or no room
        return False
    _prune(folder)
    return True


def _write_one(folder: Path, name: str, values: np.ndarray) -> dict:
    """One array to ``folder``: numbers as ``.npy``; text as the UTF-8 data and offsets of an Arrow array."""
    if values.dtype == object:
        text = pa.array(values, type=pa.large_string())
        if text.null_count:
            raise TypeError(f"array {name!r} has missing values")
        _, offsets, data = text.buffers()
        parts = {"offsets": np.frombuffer(offsets, dtype=np.int64)[text.offset:text.offset + len(text) + 1],
                 "data": np.frombuffer(data, dtype=np.uint8) if data is not None else np.zeros(0, np.uint8)}
        return {"text": True, "files": {part: _save(folder, f"{name}.{part}", a) for part, a in parts.items()}}
    return {"text": False, "files": {"values": _save(folder, name, np.ascontiguousarray(values))}}


def _save(folder: Path, stem: str, values: np.ndarray) -> dict:
    np.save(folder / f"{stem}.npy", values, allow_pickle=False)
    return {"file": f"{stem}.npy", "dtype": values.dtype.str, "shape": list(values.shape),
            "crc32": zlib.crc32(memoryview(values).cast("B"))}


def _read_one(entry: Path, name: str, spec: dict) -> np.ndarray:
    files = {part: _load(entry, f) for part, f in spec["files"].items()}
    if not spec["text"]:
        return files["values"]
    offsets, data = files["offsets"], files["data"]
    if len(offsets) == 0 or offsets[0] != 0 or offsets[-1] != len(data) or np.any(np.diff(offsets) < 0):
        raise ValueError(f"array {name!r}: offsets do not fit the data")
    text = pa.LargeStringArray.from_buffers(len(offsets) - 1, pa.py_buffer(offsets), pa.py_buffer(data))
    text.validate(full=True)  # UTF-8 checked: a Python str per value must be one
    return np.asarray(text.to_numpy(zero_copy_only=False), dtype=object)


def _load(entry: Path, spec: dict) -> np.ndarray:
    if Path(spec["file"]).name != spec["file"]:
        raise ValueError(f"{spec['file']!r} is not a file of the entry")
    values = np.load(entry / spec["file"], allow_pickle=False)
    if values.dtype.str != spec["dtype"] or list(values.shape) != spec["shape"] \
            or zlib.crc32(memoryview(np.ascontiguousarray(values)).cast("B")) != spec["crc32"]:
        raise ValueError(f"{spec['file']} is damaged")
    return values


def _prune(folder: Path) -> None:
    """Keep the :data:`KEEP` most recently read or written entries; remove temporary folders of dead writers."""
    try:
        listed = list(folder.iterdir())
        for stale in [p for p in listed if p.name.startswith(_TEMP) and _dead_writer(p)]:
            shutil.rmtree(stale, ignore_errors=True)
        entries = sorted((p for p in listed if not p.name.startswith(".")), key=lambda p: p.stat().st_mtime,
                         reverse=True)
    except OSError:
        return
    for old in entries[KEEP:]:
        shutil.rmtree(old, ignore_errors=True)


def _dead_writer(temp: Path) -> bool:
    """Whether the writer of the temporary folder ``temp`` is gone: a process of this host that no longer runs, or
    (another host's, or a name without its process) a folder untouched for :data:`_TEMP_AGE_S`.

    >>> _dead_writer(Path(f"{_TEMP}{socket.gethostname()}-{os.getpid()}-0"))  # this process: alive
    False
    """
    host, _, rest = temp.name[len(_TEMP):].rpartition("-")[0].rpartition("-")
    # POSIX only: elsewhere os.kill(pid, 0) does not test a process, it ends it
    if os.name == "posix" and host == socket.gethostname() and rest.isdigit():
        try:
            os.kill(int(rest), 0)
        except ProcessLookupError:
            return True
        except OSError:  # alive, another user's
            return False
        return False
    try:
        return time.time() - temp.stat().st_mtime > _TEMP_AGE_S
    except OSError:
        return False
