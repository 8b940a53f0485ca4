"""Incremental saves (issue 35): tables cut into parts by content, unchanged parts linked between generations."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest

import crux_nb
from crux_nb.store import parts
from crux_nb.store.parts import cut_points
from crux_nb.testing import assert_kb_equal


def _kb(n_sources: int = 60) -> crux_nb.KnowledgeBase:
    kb = crux_nb.knowledge_base(id="parts", chunk_size=200)
    for i in range(n_sources):
        body = "\n\n".join(f"Paragraph {j} of note {i} about topic {i % 7} and item {j * i % 11}." for j in range(6))
        kb.add_text(f"note-{i:03d}.md", f"# Note {i}\n\n{body}")
    return kb


def _files(generation) -> dict[tuple[int, int], int]:
    """(device, inode) -> size of every part file of a generation folder."""
    out = {}
    for file in generation.rglob("part-*.parquet"):
        stat = file.stat()
        out[(stat.st_dev, stat.st_ino)] = stat.st_size
    return out


def _new_bytes(root, old: str, new: str) -> tuple[int, int]:
    """(bytes in files the new generation did not share with the old one, all its part bytes)."""
    before = _files(root / "generations" / old)
    after = _files(root / "generations" / new)
    return sum(size for key, size in after.items() if key not in before), sum(after.values())


@pytest.fixture
def small_parts(monkeypatch):
    monkeypatch.setattr(parts, "PART_BYTES", 2_000)  # a few-kilobyte KB then has many parts, like a big one


def test_a_small_change_writes_a_small_share_of_the_bytes(tmp_path, small_parts):
    kb = _kb()
    root = tmp_path / "kb"
    kb.save(root)
    assert len(list((root / "generations" / "g000001" / "chunks").iterdir())) >= 8
    kb.add_text("zz-late.md", "# Late\n\nOne small late note.")
    kb.save(root)
    written, total = _new_bytes(root, "g000001", "g000002")
    assert 0 < written < 0.25 * total, (written, total)
    assert_kb_equal(kb, crux_nb.open(root))
    # an unchanged table is the same files, linked: the old generation's deletion keeps them
    kb.remove("note-030.md")
    kb.save(root, keep=1)
    assert crux_nb.history(root)["generation"].tolist() == ["g000003"]
    assert_kb_equal(kb, crux_nb.open(root, verify=True))


def test_an_unchanged_save_writes_no_part(tmp_path, small_parts):
    kb = _kb(20)
    root = tmp_path / "kb"
    kb.save(root)
    kb.save(root)
    written, total = _new_bytes(root, "g000001", "g000002")
    assert written == 0 and total > 0


def test_without_hard_links_parts_are_copied(tmp_path, small_parts, monkeypatch):
    kb = _kb(20)
    root = tmp_path / "kb"
    kb.save(root)

    def no_link(src, dst):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(parts.os, "link", no_link)
    kb.add_text("zz.md", "# Z\n\nZed.")
    kb.save(root)
    written, total = _new_bytes(root, "g000001", "g000002")
    assert written == total > 0  # every file its own (copied)
    assert_kb_equal(kb, crux_nb.open(root))


def test_a_damaged_earlier_part_is_written_again_not_linked(tmp_path, small_parts):
    kb = _kb(20)
    root = tmp_path / "kb"
    kb.save(root)
    victim = sorted((root / "generations" / "g000001" / "chunks").iterdir())[0]
    victim.write_bytes(victim.read_bytes()[:-10])  # shorter than the manifest says
    kb.add_text("zz.md", "# Z\n\nZed.")
    kb.save(root)
    assert_kb_equal(kb, crux_nb.open(root, verify=True))


def test_cut_points_move_only_around_an_insert(small_parts):
    frame = pd.DataFrame({"key": [f"k{i:05d}" for i in range(3000)], "text": ["x" * 40] * 3000})
    spans, bits = cut_points(frame, partition_rows=10_000)
    assert bits is not None and len(spans) > 10
    inserted = pd.concat([frame.iloc[:1500], pd.DataFrame({"key": ["k01499a"], "text": ["y"]}), frame.iloc[1500:]],
                         ignore_index=True)
    again, same_bits = cut_points(inserted, partition_rows=10_000, previous_bits=bits)
    assert same_bits == bits

    def pieces(f, s):
        return [tuple(f["key"].iloc[a:b]) for a, b in s]

    before, after = set(pieces(frame, spans)), set(pieces(inserted, again))
    assert len(before - after) == 1 and len(after - before) == 1  # one part changed, all others kept their rows
    assert spans[-1][1] == 3000 and all(b > a for a, b in spans)


def test_partition_rows_still_bounds_every_part(small_parts):
    frame = pd.DataFrame({"key": ["same"] * 500, "text": ["x" * 40] * 500})  # one key: no content boundary
    spans, _ = cut_points(frame, partition_rows=64)
    assert max(b - a for a, b in spans) == 64 and spans[-1][1] == 500 and len(spans) == 8


def test_hard_links_are_used_where_the_file_system_has_them(tmp_path, small_parts):
    kb = _kb(20)
    root = tmp_path / "kb"
    kb.save(root)
    kb.save(root)
    first = root / "generations" / "g000001" / "documents" / "part-00000.parquet"
    second = root / "generations" / "g000002" / "documents" / "part-00000.parquet"
    assert os.path.samefile(first, second) and first.stat().st_nlink == 2


# ------------------------------------------------------------------ indexes saved with the generation
def _query(kb, text="topic 3 item"):
    return [(str(h.ref), round(h.score, 6)) for h in kb.recipe(steps=[crux_nb.retrieve(limit=5)]).retrieve(text)]


def _no_tokenizing(monkeypatch):
    from crux_nb.retrieval.retriever import lexical_index

    def refuse(self, texts):
        raise AssertionError("tokenized again")

    monkeypatch.setattr(lexical_index.SharedTokens, "tokenize", refuse)


def test_the_lexical_index_is_saved_and_reused_by_open(tmp_path, monkeypatch):
    kb = _kb(20)
    expected = _query(kb)
    root = tmp_path / "kb"
    kb.save(root)
    manifest = json.loads((root / "generations" / "g000001" / "manifest.json").read_text())
    assert set(manifest["indexes"]["lexical"]["frames"]) == {"vocab", "sources", "postings", "lengths"}
    _no_tokenizing(monkeypatch)
    opened = crux_nb.open(root)
    assert _query(opened) == expected
    monkeypatch.undo()
    opened.add_text("zz.md", "# Z\n\nTopic 3 item zed.")  # only the new source is tokenized
    fresh = _kb(20)
    fresh.add_text("zz.md", "# Z\n\nTopic 3 item zed.")
    assert _query(opened) == _query(fresh)


@pytest.mark.parametrize("damage", ["fingerprint", "part", "vocab_count"])
def test_a_saved_index_that_does_not_fit_is_rebuilt_not_trusted(tmp_path, damage):
    kb = _kb(20)
    expected = _query(kb)
    root = tmp_path / "kb"
    kb.save(root)
    folder = root / "generations" / "g000001"
    manifest_file = folder / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    index = manifest["indexes"]["lexical"]
    if damage == "fingerprint":
        index["fingerprint"] = "0" * 64
    elif damage == "vocab_count":
        index["params"]["vocab"] += 1  # and a fingerprint that matches the lie
        from crux_nb.store.indexes import fingerprint

        index["fingerprint"] = fingerprint(manifest["tables"], index["depends"], index["params"])
    else:
        part = folder / "indexes" / "lexical" / "postings" / "part-00000.parquet"
        part.write_bytes(b"PAR1 not parquet")
    manifest_file.write_text(json.dumps(manifest))
    opened = crux_nb.open(root, verify=damage != "part")
    assert ("bm25-tokens" in str(list(opened.state.shared))) is False
    assert _query(opened) == expected


def test_a_generation_without_indexes_still_opens(tmp_path):
    kb = _kb(5)
    root = tmp_path / "kb"
    kb.save(root)
    manifest_file = root / "generations" / "g000001" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    del manifest["indexes"]
    manifest_file.write_text(json.dumps(manifest))
    assert _query(crux_nb.open(root)) == _query(kb)


def test_index_parts_of_unchanged_sources_are_linked(tmp_path, small_parts, monkeypatch):
    from crux_nb.store import indexes

    monkeypatch.setattr(indexes, "INDEX_PART_BYTES", 1)  # index parts as small as the tables'
    kb = _kb()
    root = tmp_path / "kb"
    kb.save(root)
    kb.add_text("zz-late.md", "# Late\n\nOne small late note.")
    kb.save(root)
    old = _files(root / "generations" / "g000001" / "indexes")
    new = _files(root / "generations" / "g000002" / "indexes")
    assert len(new) > 4 and sum(v for k, v in new.items() if k not in old) < 0.3 * sum(new.values())


def test_unchanged_tables_are_linked_without_encoding_them_again(tmp_path, small_parts, monkeypatch):
    kb = _kb(20)
    root = tmp_path / "kb"
    kb.save(root)
    opened = crux_nb.open(root)
    encoded = []
    original = parts.encode
    monkeypatch.setattr(parts, "encode", lambda piece: encoded.append((piece.column_names, len(piece))) or original(piece))
    opened.add_text("zz.md", "# Z\n\nZed.")
    opened.save(root)
    saved = json.loads((root / "generations" / "g000002" / "manifest.json").read_text())
    first = json.loads((root / "generations" / "g000001" / "manifest.json").read_text())
    # the tables the change did not touch were linked as they were read: not one of their rows encoded
    untouched = [t for t in saved["tables"] if saved["tables"][t]["parts"] == first["tables"][t]["parts"]]
    assert "entities" in untouched and "chunks" not in untouched
    # and of the tables it touched, only the parts whose rows changed: the others hold rows an earlier part holds
    # (their row digests), linked without encoding
    chunks_encoded = sum(rows for columns, rows in encoded if "content" in columns)
    assert len(saved["tables"]["chunks"]["parts"]) > 2 and 0 < chunks_encoded < saved["tables"]["chunks"]["rows"] / 3
    assert_kb_equal(opened, crux_nb.open(root, verify=True))
    # a part gone from the folder: the table is encoded and written again, not linked from nothing
    for file in (root / "generations" / "g000002" / "entities").iterdir():
        file.unlink()
    (root / "generations" / "g000001").rename(tmp_path / "away")
    opened.add_text("zy.md", "# Y\n\nWhy.")
    encoded.clear()
    opened.save(root)
    assert_kb_equal(opened, crux_nb.open(root, generation="g000003", verify=True))
