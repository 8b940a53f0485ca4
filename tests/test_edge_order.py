"""Edges and their evidence saved in evidence order (crux_nb.store.edge_order, issue 35): one new source's edges
share a few parts, and reading gives the in-memory order back exactly."""

from __future__ import annotations

import hashlib
import json
import random

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import crux_nb
from crux_nb.errors import StorageError
from crux_nb.store import parts, persist
from crux_nb.store.edge_order import ORDER, arranger, restored_table, saved_frame
from crux_nb.testing import assert_kb_equal

FIRST = ["Ada", "Charles", "Mary", "Michael", "Caroline", "John", "Augustus", "George", "Florence", "Emmy"]
LAST = ["Lovelace", "Babbage", "Somerville", "Faraday", "Herschel", "Boole", "Nightingale", "Darwin"]


def _person(i: int) -> str:
    return f"{FIRST[i % len(FIRST)]} {LAST[(i // len(FIRST)) % len(LAST)]}"


def _graph_kb(n_sources: int = 40) -> crux_nb.KnowledgeBase:
    kb = crux_nb.knowledge_base(id="order", chunk_size=200)
    for i in range(n_sources):
        _add_source(kb, f"note-{i:03d}.md", i)
    kb.extract_entities()
    return kb


def _add_source(kb, source_id: str, i: int) -> None:
    """Two people of its own and one its neighbour also names: mostly edges of its own."""
    a, b, c = _person(2 * i), _person(2 * i + 1), _person(2 * i + 2)
    kb.add_text(source_id, f"# Note {i}\n\n{a} wrote to {b} in London.\n\n{c} met {a} at the Royal Society.")


def _folder_bytes(root, generation: str, tables: tuple[str, ...]) -> tuple[int, int]:
    """(bytes of the tables' part files this generation did not share with any earlier one, all their bytes)."""
    seen, new, total = set(), 0, 0
    for other in sorted((root / "generations").iterdir()):
        if other.name != generation:
            seen |= {(f.stat().st_dev, f.stat().st_ino) for f in other.rglob("part-*.parquet")}
    for table in tables:
        for file in (root / "generations" / generation / table).iterdir():
            stat = file.stat()
            total += stat.st_size
            new += 0 if (stat.st_dev, stat.st_ino) in seen else stat.st_size
    return new, total


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(parts, "PART_BYTES", 1_500)  # a small knowledge base then has many parts, like a big one


def _late_source_share(root) -> tuple[float, crux_nb.KnowledgeBase]:
    """The share of the edge tables' bytes a save after one late source (and its edges) writes."""
    kb = _graph_kb()
    kb.save(root)
    assert len(list((root / "generations" / "g000001" / "edges").iterdir())) >= 8
    _add_source(kb, "zz-late.md", 60)
    kb.extract_entities()
    assert (kb.edge_evidence["source_id"] == "zz-late.md").sum() >= 4
    kb.save(root)
    new, total = _folder_bytes(root, "g000002", ("edges", "edge_evidence"))
    return new / total, kb


def test_a_new_source_with_edges_rewrites_few_edge_parts(tmp_path, small_parts, monkeypatch):
    share, kb = _late_source_share(tmp_path / "kb")
    assert_kb_equal(kb, crux_nb.open(tmp_path / "kb"))
    manifest = json.loads((tmp_path / "kb" / "generations" / "g000002" / "manifest.json").read_text())
    assert manifest["format_version"] == 3
    assert manifest["tables"]["edges"]["order"] == manifest["tables"]["edge_evidence"]["order"] == ORDER
    # saved in edge id order (format 2), the late source's edges fell into parts all over both tables
    monkeypatch.setattr(persist, "saved_frame", lambda table, frame, evidence: (frame, None))
    in_id_order, _ = _late_source_share(tmp_path / "by-id")
    assert 0 < share < 0.2 and share < in_id_order / 2, (share, in_id_order)


def test_the_files_hold_the_rows_in_evidence_order_and_open_restores_edge_id_order(tmp_path):
    kb = _graph_kb(12)
    kb.save(tmp_path / "kb")
    folder = tmp_path / "kb" / "generations" / "g000001"
    evidence = pd.read_parquet(folder / "edge_evidence")
    assert evidence["chunk_ref"].tolist() == sorted(evidence["chunk_ref"].tolist())
    assert evidence["edge_id"].tolist() != sorted(evidence["edge_id"].tolist())
    opened = crux_nb.open(tmp_path / "kb")
    assert opened.edges["edge_id"].is_monotonic_increasing
    pd.testing.assert_frame_equal(opened.state.edges, kb.state.edges)
    pd.testing.assert_frame_equal(opened.state.edge_evidence, kb.state.edge_evidence)


def _canonical(rng: random.Random, n: int, hex_ids: bool) -> tuple[pd.DataFrame, pd.DataFrame]:
    alphabet = "ab:é-Z0"
    word = lambda k: "".join(rng.choice(alphabet) for _ in range(rng.randint(1, k)))  # noqa: E731
    ids = sorted({f"edge_{rng.getrandbits(64):016x}" if hex_ids else "e" + word(6) for _ in range(n)})
    edges = pd.DataFrame({"edge_id": ids, "from_ref": [f"chunk:{word(3)}:c0" for _ in ids]}, dtype="str")
    rows = sorted({(i, f"chunk:{word(3)}:c{rng.randint(0, 3)}", rng.choice(["llm", "rule", "é"]))
                   for i in ids[: n - 3] for _ in range(rng.randint(1, 3))})
    evidence = pd.DataFrame(rows, columns=["edge_id", "chunk_ref", "provenance"], dtype="str")
    return edges, evidence


@pytest.mark.parametrize("hex_ids", [True, False])
@pytest.mark.parametrize("seed", range(4))
def test_restore_gives_back_the_exact_in_memory_order(seed, hex_ids):
    edges, evidence = _canonical(random.Random(seed), 60, hex_ids)
    for table, frame in (("edges", edges), ("edge_evidence", evidence)):
        saved, order = saved_frame(table, frame, evidence)
        assert order == ORDER and len(saved) == len(frame)
        assert not saved.equals(frame)  # reordered (the random refs are not in id order)
        restored = restored_table(table, pa.Table.from_pandas(saved, preserve_index=False)).to_pandas()
        pd.testing.assert_frame_equal(restored, frame)
    # an edge is placed by its first evidence chunk, or by its from_ref without evidence
    saved, _ = saved_frame("edges", edges, evidence)
    first = evidence.drop_duplicates("edge_id").set_index("edge_id")["chunk_ref"]
    anchors = [first.get(i, f) for i, f in zip(saved["edge_id"], saved["from_ref"])]
    assert anchors == sorted(anchors)


def test_a_frame_not_in_memory_order_is_saved_as_it_is(tmp_path):
    edges, evidence = _canonical(random.Random(9), 30, True)
    shuffled = evidence.iloc[::-1].reset_index(drop=True)
    assert saved_frame("edge_evidence", shuffled, shuffled) == (shuffled, None)
    with_gap = evidence.copy()
    with_gap.loc[0, "provenance"] = None  # a missing key: sorting back could not tell where it was
    assert saved_frame("edge_evidence", with_gap, with_gap)[1] is None
    assert saved_frame("chunks", evidence, evidence)[1] is None
    assert arranger("edges", {"parts": []}) is None and arranger("edges", None) is None


def test_an_order_this_crux_nb_does_not_know_is_a_storage_error(tmp_path):
    kb = _graph_kb(4)
    root = tmp_path / "kb"
    kb.save(root)
    manifest_file = root / "generations" / "g000001" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    manifest["tables"]["edges"]["order"] = "by-moon-phase"
    manifest_file.write_text(json.dumps(manifest))
    with pytest.raises(StorageError, match=r"rows are in an order this crux_nb does not know \('by-moon-phase'\)"):
        crux_nb.open(root, verify=False)


def test_a_format_2_generation_is_read_in_its_saved_order(tmp_path):
    kb = _graph_kb(6)
    root = tmp_path / "kb"
    kb.save(root)
    folder = root / "generations" / "g000001"
    manifest = json.loads((folder / "manifest.json").read_text())
    for table in ("edges", "edge_evidence"):  # what a format 2 save wrote: the in-memory order, no "order"
        del manifest["tables"][table]["order"]
        frame = kb.state.frame(table)
        files = sorted((folder / table).iterdir())
        for file in files:
            file.unlink()
        frame.to_parquet(folder / table / "part-00000.parquet", index=False)
        data = (folder / table / "part-00000.parquet").read_bytes()
        manifest["tables"][table]["parts"] = [{"file": "part-00000.parquet", "rows": len(frame), "bytes": len(data),
                                               "sha256": hashlib.sha256(data).hexdigest()}]
    manifest["format_version"] = 2
    (folder / "manifest.json").write_text(json.dumps(manifest))
    opened = crux_nb.open(root, verify=False)
    pd.testing.assert_frame_equal(opened.state.edges, kb.state.edges)
    assert np.array_equal(opened.edge_evidence["edge_id"], kb.edge_evidence["edge_id"])


@pytest.mark.parametrize("table", ["edges", "edge_evidence"])
def test_a_damaged_edge_part_read_on_the_second_thread_is_reported_as_such(tmp_path, table):
    kb = _graph_kb(6)
    root = tmp_path / "kb"
    kb.save(root)
    part = sorted((root / "generations" / "g000001" / table).iterdir())[0]
    data = bytearray(part.read_bytes())
    data[len(data) // 2] ^= 0xFF
    part.write_bytes(bytes(data))
    with pytest.raises(StorageError, match=f"table '{table}'.*checksum mismatch") as info:
        crux_nb.open(root)
    assert info.value.code == "checksum_mismatch"


@pytest.mark.parametrize("seed", range(6))
def test_the_coded_sort_orders_rows_exactly_as_the_text_sort(seed):
    """Evidence order sorts integers that sort as the texts do; the permutation is the text sort's, ties in row
    order (a part's bytes, and so its reuse, depend on it)."""
    from crux_nb.store.edge_order import _order
    from crux_nb.store.state import text_order

    rng = np.random.default_rng(seed)
    n = 400
    refs = np.array(["chunk:a:c0000", "chunk:a:c0001", "chunk:b:c0000", "chunk:é:c0000", "chunk:Z:c0003",
                     "chunk:a b:c0000", "chunk:日本:c0001", "chunk:a:c00000"])
    hex_ids = [f"edge_{v:016x}" for v in rng.integers(0, 2**63, n // 4).tolist()]
    ids = rng.choice(hex_ids if seed % 2 else hex_ids + ["custom-id", "edge_xyz"], n)
    frame = pd.DataFrame({"chunk_ref": rng.choice(refs, n), "edge_id": ids,
                          "provenance": rng.choice(["extractor", "manual", "ünï"], n)}, dtype="str")
    for by in (["chunk_ref", "edge_id", "provenance"], ["chunk_ref", "edge_id"], ["provenance"]):
        assert _order(frame, by).tolist() == text_order(frame, by).tolist()
    frame.loc[3, "chunk_ref"] = None  # a missing value: the text sort's own order (last)
    assert _order(frame, ["chunk_ref", "edge_id"]).tolist() == text_order(frame, ["chunk_ref", "edge_id"]).tolist()


@pytest.mark.parametrize("hex_ids", [True, False])
def test_an_edge_is_placed_by_its_first_evidence_chunk_or_its_from_ref(hex_ids):
    from crux_nb.store.edge_order import _first_chunk

    rng = np.random.default_rng(3)
    ids = sorted({f"edge_{v:016x}" if hex_ids else f"e{v:05d}" for v in rng.integers(0, 10**5, 300).tolist()})
    edges = pd.DataFrame({"edge_id": ids, "from_ref": [f"entity:x{i}" for i in range(len(ids))]}, dtype="str")
    with_evidence = [e for e in ids if rng.random() < 0.7] + [("edge_ffffffffffffffff" if hex_ids else "e99999")]
    rows = sorted((e, f"chunk:s{rng.integers(0, 9)}:c{rng.integers(0, 99):04d}") for e in with_evidence
                  for _ in range(int(rng.integers(1, 4))))
    evidence = pd.DataFrame(rows, columns=["edge_id", "chunk_ref"], dtype="str").drop_duplicates()
    firsts = evidence.groupby("edge_id")["chunk_ref"].min()  # an id no edge has: left out
    expected = [firsts.get(e, f) for e, f in zip(edges["edge_id"], edges["from_ref"])]
    assert _first_chunk(edges, evidence).tolist() == expected
    assert _first_chunk(edges, evidence.iloc[:0]).tolist() == edges["from_ref"].tolist()
