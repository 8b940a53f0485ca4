import json
import os
import time

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import LeaseError, NotFoundError, ParameterError, StorageError
from crux_nb.store.lease import Lease
from crux_nb.store.persist import current_generation, table_paths
from crux_nb.testing import assert_kb_equal


@pytest.fixture
def rich_kb():
    kb = crux_nb.knowledge_base(id="p", namespace="ns", chunk_size=200)
    kb.add_text("a:b%.md", "---\nteam: x\nyear: 2024\nok: true\n---\n# Title\n\nText ünïcode 🎉.\n\n## Two\n\nMore.",
                metadata={"nested": {"k": [1, 2.5, None]}})
    kb.add_text("plain", "Just text.", format="text")
    kb.add_edges(pd.DataFrame([{"from_ref": "chunk:a%3Ab%25.md:c0000", "to_ref": "entity:e%3A1", "type": "mentions",
                                "evidence": ["chunk:a%3Ab%25.md:c0000"], "description": "d", "weight": 0.5}]))
    kb.add_entities(pd.DataFrame({"entity_id": ["e:1"], "canonical_name": ["E One"], "aliases": [["E", "One"]]}))
    return kb


def test_round_trip_is_exact(tmp_path, rich_kb):
    gen = rich_kb.save(tmp_path / "kb")
    assert gen == "g000001" and current_generation(tmp_path / "kb") == gen
    back = crux_nb.open(tmp_path / "kb")
    assert_kb_equal(rich_kb, back)
    assert back.chunk_size == 200
    assert back.chunks["ref"].tolist() == rich_kb.chunks["ref"].tolist()
    assert back.entities["aliases"].iloc[0] == ("E", "One")
    assert back.chunks["metadata"].iloc[0]["nested"] == {"k": (1, 2.5, None)}
    assert [str(n.ref) for n in back.reader.neighbors("entity:e%3A1")] == ["chunk:a%3Ab%25.md:c0000"]


def test_generations_advance_and_old_ones_are_cleaned(tmp_path, rich_kb):
    path = tmp_path / "kb"
    gens = [rich_kb.save(path) for _ in range(4)]
    assert gens == ["g000001", "g000002", "g000003", "g000004"]
    assert sorted(os.listdir(path / "generations")) == ["g000003", "g000004"]
    rich_kb.remove("plain")
    rich_kb.save(path)
    assert crux_nb.open(path).summary()["documents"] == 1


def test_no_file_name_comes_from_user_data(tmp_path):
    kb = crux_nb.knowledge_base(id="x")
    kb.add_text("../../escape.md", "# Evil\n\nid tries to escape.")
    kb.save(tmp_path / "kb")
    files = {p.relative_to(tmp_path).as_posix() for p in tmp_path.rglob("*") if p.is_file()}
    assert all(f.startswith("kb/") for f in files) and not any("escape" in f for f in files)
    assert crux_nb.open(tmp_path / "kb").documents["source_id"].tolist() == ["../../escape.md"]


def test_crash_mid_save_leaves_previous_generation(tmp_path, rich_kb, monkeypatch):
    path = tmp_path / "kb"
    rich_kb.save(path)
    rich_kb.add_text("new", "New source.")
    import crux_nb.store.persist as persist

    def boom(*a, **k):
        raise OSError("disk full")

    monkeypatch.setattr(persist, "_write_json", boom)  # fails after tables are written, before the switch
    with pytest.raises(OSError):
        rich_kb.save(path)
    monkeypatch.undo()
    back = crux_nb.open(path)
    assert "new" not in set(back.documents["source_id"]) and current_generation(path) == "g000001"
    assert not (path / "lease").exists()
    assert rich_kb.save(path) == "g000002"  # the partial folder does not block the next save
    assert not [p for p in os.listdir(path / "generations") if p.startswith(".tmp")]


def test_open_errors(tmp_path, rich_kb):
    with pytest.raises(NotFoundError):
        crux_nb.open(tmp_path / "missing")
    (tmp_path / "empty").mkdir()
    with pytest.raises(StorageError, match="no CURRENT pointer"):
        crux_nb.open(tmp_path / "empty")
    path = tmp_path / "kb"
    rich_kb.save(path)
    table = path / "generations" / "g000001" / "chunks" / "part-00000.parquet"
    data = table.read_bytes()
    table.write_bytes(data[:-20] + b"x" * 20)
    with pytest.raises(StorageError, match="chunks.*corrupted"):
        crux_nb.open(path)
    with pytest.raises(StorageError, match="cannot be read as Parquet"):
        crux_nb.open(path, verify=False)
    table.unlink()
    with pytest.raises(StorageError, match="missing"):
        crux_nb.open(path)
    (path / "CURRENT").write_text("{not json")
    with pytest.raises(StorageError, match="CURRENT pointer .* corrupted"):
        crux_nb.open(path)
    (path / "CURRENT").write_text(json.dumps({"format": "crux_nb", "format_version": 2, "generation": "g000009"}))
    with pytest.raises(StorageError, match="no manifest"):
        crux_nb.open(path)


def test_save_refuses_foreign_targets(tmp_path, rich_kb):
    (tmp_path / "file").write_text("x")
    with pytest.raises(StorageError, match="not a folder"):
        rich_kb.save(tmp_path / "file")
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "notes.txt").write_text("mine")
    with pytest.raises(StorageError, match="not a crux_nb knowledge base"):
        rich_kb.save(tmp_path / "other")


def test_no_pickle_only_parquet_and_json(tmp_path, rich_kb):
    rich_kb.save(tmp_path / "kb")
    suffixes = {p.suffix for p in (tmp_path / "kb").rglob("*") if p.is_file()}
    assert suffixes <= {".parquet", ".json", ""}
    assert json.loads((tmp_path / "kb" / "CURRENT").read_text())["generation"] == "g000001"


def test_lease_blocks_then_stale_lease_is_taken_over(tmp_path):
    path = tmp_path / "lease"
    holder = Lease(path, ttl=0.5).acquire()
    with pytest.raises(LeaseError, match="holds the build lease"):
        Lease(path, ttl=0.5, wait=0.1).acquire()
    time.sleep(0.6)  # holder "crashed": no heartbeat
    taker = Lease(path, ttl=0.5, wait=1).acquire()
    assert taker.holder()["owner"] == taker.owner
    with pytest.raises(LeaseError, match="taken over"):
        holder.heartbeat()
    taker.heartbeat()
    taker.release()
    assert not path.exists()


def test_save_waits_for_a_held_lease(tmp_path, rich_kb, monkeypatch):
    path = tmp_path / "kb"
    rich_kb.save(path)
    Lease(path / "lease", ttl=60).acquire()
    import crux_nb.store.persist as persist

    monkeypatch.setattr(persist, "Lease", lambda p: Lease(p, wait=0.2))
    with pytest.raises(LeaseError):
        rich_kb.save(path)
    assert current_generation(path) == "g000001"


def test_tables_are_partitioned_parquet_datasets(tmp_path):
    kb = crux_nb.knowledge_base(id="parts", chunk_size=200)
    for i in range(12):
        kb.add_text(f"doc{i:02d}.md", f"# Doc {i}\n\n" + " ".join(f"word{i}_{j}" for j in range(60)))
    path = tmp_path / "kb"
    kb.save(path, partition_rows=7)
    folders = table_paths(path)
    chunk_files = sorted(p.name for p in folders["chunks"].iterdir())
    n = len(kb.chunks)
    assert n > 14 and chunk_files == [f"part-{i:05d}.parquet" for i in range(-(-n // 7))]
    assert [len(pd.read_parquet(folders["chunks"] / f)) for f in chunk_files][:-1] == [7] * (len(chunk_files) - 1)
    assert sorted(p.name for p in folders["edges"].iterdir()) == ["part-00000.parquet"]  # empty table: one file
    assert pd.read_parquet(folders["chunks"])["ref"].tolist() == kb.chunks["ref"].tolist()
    assert_kb_equal(kb, crux_nb.open(path))


@pytest.mark.parametrize("value", [0, -1, 1.5, "10", True])
def test_partition_rows_is_validated(tmp_path, rich_kb, value):
    with pytest.raises(ParameterError, match="parameter 'partition_rows' must be a positive integer"):
        rich_kb.save(tmp_path / "kb", partition_rows=value)
    assert not (tmp_path / "kb").exists()


def test_manifest_cannot_point_outside_its_table_folder(tmp_path, rich_kb):
    path = tmp_path / "kb"
    rich_kb.save(path)
    manifest_file = path / "generations" / "g000001" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["tables"]["chunks"]["parts"][0]["file"] = "../../../CURRENT"
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(StorageError, match="'chunks' .* not listed in the manifest") as info:
        crux_nb.open(path)
    assert info.value.hint


def test_format_1_single_file_tables_still_open(tmp_path, rich_kb):
    """Knowledge bases saved before tables became datasets (one <table>.parquet each) open unchanged."""
    path = tmp_path / "kb"
    rich_kb.save(path)
    folder = path / "generations" / "g000001"
    manifest = json.loads((folder / "manifest.json").read_text())
    for table, entry in manifest["tables"].items():
        (folder / table / "part-00000.parquet").rename(folder / f"{table}.parquet")
        (folder / table).rmdir()
        manifest["tables"][table] = {"file": f"{table}.parquet", "rows": entry["rows"],
                                     "sha256": entry["parts"][0]["sha256"]}
    manifest["format_version"] = 1
    (folder / "manifest.json").write_text(json.dumps(manifest))
    assert_kb_equal(rich_kb, crux_nb.open(path))


def test_long_model_maps_keep_their_lease_alive(tmp_path):
    """A build that outlives the lease TTL is not taken for crashed while its model calls complete."""
    from crux_nb.models import OfflineModel
    from crux_nb.models.calllog import CallLog
    from crux_nb.models.remote import run_calls

    class SlowModel(OfflineModel):
        def rate(self, query, reports, *, repair=None):
            time.sleep(0.1)
            return super().rate(query, reports, repair=repair)

    path = tmp_path / "lease"
    reports = [{"community_id": "c1", "title": "t", "summary": "s", "findings": []}]
    with Lease(path, ttl=0.3):
        run_calls([(SlowModel(), "rate", ("q", reports), {"prompt_id": f"r{i}"}) for i in range(8)], log=CallLog())
        with pytest.raises(LeaseError, match="holds the build lease"):  # 0.8 s > TTL, yet fresh
            Lease(path, ttl=0.3, wait=0).acquire()
    assert not path.exists()


def test_leftover_heartbeat_files_are_removed_by_the_next_holder(tmp_path):
    path = tmp_path / "lease"
    (tmp_path / "lease.deadbeef.tmp").write_text("{}")  # a holder killed mid-heartbeat
    (tmp_path / "other.lease.cafe.tmp").write_text("{}")  # not ours
    with Lease(path):
        assert sorted(p.name for p in tmp_path.iterdir()) == ["lease", "other.lease.cafe.tmp"]
