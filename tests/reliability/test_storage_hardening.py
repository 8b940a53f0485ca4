"""The hardening list of issue 36: every storage fault a coded error, a warning or a fix.

Saved folders: manifest fields validated on open, a cross-table check, a manifest without embeddings, full disk,
read-only folder, a part file vanishing under a reader, a paused saver whose temporary folder was removed, a
deeply nested manifest, checksum errors naming the part file, damaged files read with ``verify=False``, the
lease on a full disk, planted symlinks at the lease guard and switch lock, nested metadata keys. GraphRAG
imports: row and decoded-size caps, bad levels, bad weights, reports and communities that do not fit together.
"""

from __future__ import annotations

import errno
import json
import os
import random
import shutil
import time
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import crux_nb
from crux_nb.errors import ConflictError, CruxError, InputError, StorageError
from crux_nb.io import graphrag_limits, read_graphrag
from crux_nb.store import persist
from crux_nb.store.integrity import MissingTableWarning
from crux_nb.store.lease import Lease

from graphrag_tiny import tiny_tables


def saved(tmp_path: Path, *, edges: bool = False) -> Path:
    kb = crux_nb.knowledge_base(id="hard")
    kb.add_text("a.md", "# A\n\nAlpha notes.")
    kb.add_text("b.md", "# B\n\nBeta notes.")
    if edges:
        kb.add_edges(pd.DataFrame({"from_ref": ["chunk:a.md:c0000"], "to_ref": ["chunk:b.md:c0000"],
                                   "type": ["references"], "evidence": [["chunk:a.md:c0000"]]}))
    folder = tmp_path / "kb"
    kb.save(folder)
    return folder


def manifest_path(folder: Path) -> Path:
    return folder / "generations" / persist.current_generation(folder) / "manifest.json"


def edit_manifest(folder: Path, change) -> None:
    path = manifest_path(folder)
    manifest = json.loads(path.read_text())
    change(manifest)
    path.write_text(json.dumps(manifest))


@pytest.mark.parametrize("field,value", [("chunk_size", 0), ("chunk_size", -3), ("chunk_size", "400"),
                                         ("id", 5), ("id", "a:b"), ("namespace", None), ("lexical", {"nope": 1})])
def test_manifest_fields_are_validated_on_open(tmp_path, field, value):
    folder = saved(tmp_path)
    edit_manifest(folder, lambda m: m["kb"].__setitem__(field, value))
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder)
    assert info.value.code == "manifest_invalid" and field in str(info.value)


def test_a_deeply_nested_manifest_is_a_storage_error(tmp_path):
    folder = saved(tmp_path)
    manifest_path(folder).write_text('{"kb": ' + "[" * 100_000 + "]" * 100_000 + "}")
    with pytest.raises(StorageError, match="corrupted"):
        crux_nb.open(folder)


def test_dangling_evidence_is_refused_on_open(tmp_path):
    kb = crux_nb.open(saved(tmp_path, edges=True))
    crafted = kb.commit(lambda s: s.__class__(**{**{t: s.frame(t) for t in persist.SCHEMAS},
                                                  "chunks": s.chunks[s.chunks["source_id"] == "b.md"]}))
    assert len(crafted.edge_evidence) == 1  # evidence in a.md's chunk, which is gone
    other = tmp_path / "crafted"
    kb.save(other)
    with pytest.raises(StorageError) as info:
        crux_nb.open(other)
    assert info.value.code == "inconsistent_generation" and "evidence" in str(info.value)


def test_a_manifest_without_its_embeddings_entry_warns(tmp_path):
    folder = saved(tmp_path)
    edit_manifest(folder, lambda m: m["tables"].pop("embeddings"))
    with pytest.warns(MissingTableWarning, match="no embeddings table"):
        kb = crux_nb.open(folder)
    assert len(kb.state.embeddings) == 0


def test_the_checksum_error_names_the_part_file(tmp_path):
    folder = saved(tmp_path)
    part = folder / "generations" / persist.current_generation(folder) / "chunks" / "part-00000.parquet"
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0x01
    part.write_bytes(bytes(data))
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder)
    assert info.value.code == "checksum_mismatch" and "chunks/part-00000.parquet" in str(info.value)


def test_bit_flips_read_with_verify_false_raise_only_crux_errors(tmp_path):
    folder = saved(tmp_path)
    parts = sorted((folder / "generations").rglob("part-*.parquet"))
    pristine = {p: p.read_bytes() for p in parts}
    rng = random.Random(36)
    outcomes = {"opened": 0, "refused": 0}
    for _ in range(60):
        part = rng.choice(parts)
        data = bytearray(pristine[part])
        data[rng.randrange(len(data))] ^= 1 << rng.randrange(8)
        part.write_bytes(bytes(data))
        try:
            crux_nb.open(folder, verify=False)
            outcomes["opened"] += 1
        except CruxError:
            outcomes["refused"] += 1
        part.write_bytes(pristine[part])
    assert outcomes["refused"] > 0, outcomes


@pytest.mark.parametrize("code,err", [("disk_full", errno.ENOSPC), ("read_only", errno.EROFS),
                                      ("permission_denied", errno.EACCES)])
def test_file_system_errors_while_saving_are_coded(tmp_path, monkeypatch, code, err):
    folder = saved(tmp_path)
    kb = crux_nb.open(folder)
    kb.add_text("c.md", "# C\n\nGamma.")

    def fail(*args, **kwargs):
        raise OSError(err, os.strerror(err))

    monkeypatch.setattr(pq, "write_table", fail)
    with pytest.raises(StorageError) as info:
        kb.save(folder)
    assert info.value.code == code
    monkeypatch.undo()
    assert persist.current_generation(folder) == "g000001"
    assert not [p for p in (folder / "generations").iterdir() if p.name.startswith(".tmp-")]
    assert kb.save(folder) == "g000002"


def test_a_full_disk_while_creating_the_lease_leaves_no_lease(tmp_path, monkeypatch):
    folder = saved(tmp_path)
    real_fsync = os.fsync

    def fsync(fd):
        if os.readlink(f"/proc/self/fd/{fd}").endswith("/lease"):
            raise OSError(errno.ENOSPC, "No space left on device")
        return real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder).save(folder)
    assert info.value.code == "disk_full"
    assert not (folder / "lease").exists()  # the next save does not wait a TTL for an empty lease file
    monkeypatch.undo()
    started = time.monotonic()
    crux_nb.open(folder).save(folder)
    assert time.monotonic() - started < 10


def test_a_part_file_vanishing_under_a_reader_is_a_coded_error(tmp_path, monkeypatch):
    folder = saved(tmp_path)

    def vanished(path):
        raise FileNotFoundError(2, "No such file", str(path))

    monkeypatch.setattr(persist, "_read_bytes", vanished)
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder)
    assert info.value.code == "generation_removed"


def test_a_part_the_manifest_lists_no_checksum_for_fails_verification(tmp_path):
    folder = saved(tmp_path)
    edit_manifest(folder, lambda m: m["tables"]["chunks"]["parts"][0].pop("sha256"))
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder)
    assert info.value.code == "checksum_mismatch"
    assert sorted(crux_nb.open(folder, verify=False).documents["source_id"]) == ["a.md", "b.md"]


def test_a_saver_whose_temporary_folder_was_removed_gets_save_conflict(tmp_path, monkeypatch):
    folder = saved(tmp_path)
    kb = crux_nb.open(folder)
    kb.add_text("c.md", "# C\n\nGamma.")
    write_table = persist._write_table

    def taken_over(target, frame, *args):  # as if a save that took the lease over had removed it
        shutil.rmtree(target.parent)
        return write_table(target, frame, *args)

    monkeypatch.setattr(persist, "_write_table", taken_over)
    with pytest.raises(ConflictError) as info:
        kb.save(folder)
    assert info.value.code == "save_conflict"
    assert persist.current_generation(folder) == "g000001"


@pytest.mark.parametrize("name", ["lease.guard", "switch"])
def test_planted_links_at_lock_files_are_never_followed(tmp_path, name):
    folder = saved(tmp_path)
    outside = tmp_path / "outside" / "created-by-crux"
    outside.parent.mkdir()
    (folder / name).unlink(missing_ok=True)
    os.symlink(outside, folder / name)
    if name == "lease.guard":  # a stale lease makes the next saver take it over through the guard
        (folder / "lease").write_text(json.dumps({"owner": "dead", "heartbeat": 0, "ttl": 1}))
    with pytest.raises(StorageError) as info:
        crux_nb.open(folder).save(folder)
    assert info.value.code == "link_outside"
    assert not outside.exists()


def test_lease_files_are_created_without_following_links(tmp_path):
    outside = tmp_path / "elsewhere"
    os.symlink(outside, tmp_path / "lease")
    with pytest.raises(StorageError) as info:
        Lease(tmp_path / "lease", wait=0.2).acquire()
    assert info.value.code == "link_outside"
    assert not outside.exists()


@pytest.mark.parametrize("metadata", [{"a": {1: "x"}}, {"a": {None: "x"}}, {"a": [{2: "y"}]}])
def test_nested_metadata_keys_must_be_strings_like_top_level_ones(metadata):
    kb = crux_nb.knowledge_base(id="m")
    with pytest.raises(InputError, match="nested key"):
        kb.add_text("a.md", "Alpha.", metadata=metadata)
    assert len(kb.documents) == 0


# ------------------------------------------------------------------ GraphRAG imports

def write(folder: Path, tables: dict) -> Path:
    folder.mkdir(parents=True)
    for name, frame in tables.items():
        frame.to_parquet(folder / f"{name}.parquet", index=False)
    return folder


def codes(kb) -> dict:
    return {w.code: w for w in kb.graphrag.warnings}


def test_graphrag_tables_over_the_row_cap_are_refused_before_decoding(tmp_path, monkeypatch):
    folder = write(tmp_path / "g", tiny_tables())
    monkeypatch.setattr(graphrag_limits, "MAX_ROWS", 3)
    with pytest.raises(StorageError) as info:
        read_graphrag(folder)
    assert info.value.code == "graphrag_too_large" and "rows" in str(info.value)


def test_graphrag_dictionary_bombs_are_refused_by_decoded_size(tmp_path, monkeypatch):
    tables = tiny_tables()
    folder = write(tmp_path / "g", tables)
    n = 200_000  # 200,000 rows of one 1 KB text: about 1 MB on disk, 200 MB decoded
    bomb = pa.table({"id": pa.array(["x" * 1000] * n).dictionary_encode(),
                     "text": pa.array(["y" * 1000] * n).dictionary_encode()})
    pq.write_table(bomb, folder / "text_units.parquet")
    assert (folder / "text_units.parquet").stat().st_size < 5_000_000
    monkeypatch.setattr(graphrag_limits, "MAX_DECODED_BYTES", 50_000_000)
    with pytest.raises(StorageError) as info:
        read_graphrag(folder)
    assert info.value.code == "graphrag_too_large" and "decoded" in str(info.value)


@pytest.mark.parametrize("level", [None, 10**18, 99])
def test_graphrag_community_levels_must_be_levels(tmp_path, level):
    tables = tiny_tables()
    tables["communities"] = tables["communities"].astype({"level": object})
    tables["communities"].loc[1, "level"] = level
    with pytest.raises(InputError) as info:
        read_graphrag(write(tmp_path / "g", tables))
    assert info.value.code == "graphrag_invalid_value" and "'level'" in str(info.value)


@pytest.mark.parametrize("weight", [float("inf"), float("nan"), -1.0, 0.0])
def test_graphrag_weights_that_are_not_positive_and_finite_are_warned_about(tmp_path, weight):
    tables = tiny_tables()
    tables["relationships"]["weight"] = [weight, 2.0]
    kb = read_graphrag(write(tmp_path / "g", tables))
    assert codes(kb)["invalid_weights"].rows == (0,)
    assert kb.edges["weight"].map(lambda w: 0 < w < float("inf")).all()


def test_graphrag_reports_that_do_not_fit_the_communities_are_warned_about(tmp_path):
    tables = tiny_tables()
    reports = tables["community_reports"]
    extra = reports.iloc[[0, 1]].copy()
    extra["community"] = [1, 7]  # a second report for community 1, and one for a community that does not exist
    reports = pd.concat([reports, extra], ignore_index=True)
    reports.loc[2, "findings"] = []  # community 2's report has no findings
    tables["community_reports"] = reports
    kb = read_graphrag(write(tmp_path / "g", tables))
    found = codes(kb)
    assert found["duplicate_reports"].rows == (3,)
    assert found["reports_without_community"].rows == (4,)
    assert found["reports_without_findings"].rows == (2,)


def test_graphrag_communities_that_do_not_fit_together_are_warned_about(tmp_path):
    tables = tiny_tables()
    comms = tables["communities"]
    comms["parent"] = [-1, 0, 9]  # community 2 names a parent that does not exist
    comms["children"] = [[1, 2], [0], []]  # and the children column claims a cycle
    comms["entity_ids"] = [["e1", "e2", "e3"], ["e1", "ghost"], ["e3"]]
    kb = read_graphrag(write(tmp_path / "g", tables))
    found = codes(kb)
    assert found["missing_parent"].rows == (2,)
    assert 0 in found["children_mismatch"].rows
    assert found["unknown_entity_ids"].rows == (1,)
