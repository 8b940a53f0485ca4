"""Row digests (issue 35): a save links a part whose rows an earlier part holds without encoding it, and never links
one whose rows differ in any value, column type or null."""

from __future__ import annotations

import json

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import crux_nb
from crux_nb.store import parts
from crux_nb.store.row_digest import row_digests
from crux_nb.testing import assert_kb_equal

from test_parts import _kb


def _frame(rng: np.random.Generator, n: int) -> pd.DataFrame:
    words = np.array(["", "a", "bb", "ccc", "dé", "long text " * 5])
    return pd.DataFrame({
        "ref": pd.Series([f"r{i:04d}" for i in range(n)], dtype="str"),
        "text": pd.Series(rng.choice(words, n), dtype="str").mask(rng.random(n) < 0.1),
        "n": rng.integers(-5, 5, n),
        "maybe": pd.Series(rng.integers(0, 3, n), dtype="Int64").where(rng.random(n) > 0.2),
        "x": rng.random(n).round(1),
        "flag": rng.random(n) < 0.5,
    })


def _digest(frame: pd.DataFrame, spans=None) -> list:
    table = pa.Table.from_pandas(frame, preserve_index=False)
    return row_digests(table, spans or [(0, len(frame))])


@pytest.mark.parametrize("seed", range(5))
def test_equal_rows_have_equal_digests_however_the_columns_are_chunked(seed):
    rng = np.random.default_rng(seed)
    frame = _frame(rng, 200)
    table = pa.Table.from_pandas(frame, preserve_index=False)
    cuts = sorted(rng.choice(np.arange(1, 200), 4, replace=False).tolist())
    pieces = [table.slice(a, b - a) for a, b in zip([0, *cuts], [*cuts, 200])]
    rechunked = pa.concat_tables(pieces)
    assert rechunked.column("text").num_chunks == 5
    spans = [(0, 200), (10, 90), (90, 90), (150, 200)]
    assert row_digests(rechunked, spans) == row_digests(table, spans)
    # the same rows sliced out of a bigger table are the same part
    assert row_digests(table.slice(10, 80), [(0, 80)]) == row_digests(table, [(10, 90)])


@pytest.mark.parametrize("seed", range(5))
def test_any_changed_value_null_or_type_changes_the_digest(seed):
    rng = np.random.default_rng(seed)
    frame = _frame(rng, 50)
    base, = _digest(frame)
    row = int(rng.integers(0, 50))
    changed = {
        "text": frame.assign(text=frame["text"].where(frame.index != row, "other")),
        "null": frame.assign(text=frame["text"].where(frame.index != row, None)),
        "n": frame.assign(n=frame["n"].where(frame.index != row, 99)),
        "maybe": frame.assign(maybe=frame["maybe"].where(frame.index != row, pd.NA)),
        "x": frame.assign(x=frame["x"].where(frame.index != row, -0.5)),
        "flag": frame.assign(flag=frame["flag"] ^ (frame.index == row)),
        "type": frame.assign(n=frame["n"].astype("int32")),
        "moved bytes": frame.assign(text=frame["text"].fillna("") + "x", ref=frame["ref"].str[:-1]),
        "column order": frame[list(frame.columns[::-1])],
    }
    for name, other in changed.items():
        if name in ("text", "null", "maybe") and other.equals(frame):
            continue  # the value drawn was already that
        assert _digest(other) != [base], name


def test_columns_without_a_digest_are_encoded():
    assert row_digests(pa.table({"x": pa.array([[1], [2]])}), [(0, 1), (1, 2)]) == [None, None]
    assert row_digests(pa.table({"x": pa.array([None, None])}), [(0, 2)]) == [None]


def _manifest(root, generation: str) -> dict:
    return json.loads((root / "generations" / generation / "manifest.json").read_text())


def test_a_source_rewritten_with_the_same_refs_is_encoded_again(tmp_path, monkeypatch):
    """The keys a part is cut by stay the same, a value changes: that part is new, every other one is linked."""
    monkeypatch.setattr(parts, "PART_BYTES", 1_000)
    kb = _kb(30)
    root = tmp_path / "kb"
    kb.save(root)
    before = kb.chunks.set_index("ref")["content"]
    encoded = []
    original = parts.encode
    monkeypatch.setattr(parts, "encode", lambda piece: encoded.append(piece) or original(piece))
    body = "\n\n".join(f"Paragraph {j} of note 13 about TOPIC {13 % 7} and item {j * 13 % 11}." for j in range(6))
    kb.add_text("note-013.md", f"# Note 13\n\n{body}")  # test_parts._kb's text, one word in capitals
    after = kb.chunks.set_index("ref")["content"]
    assert list(before.index) == list(after.index) and (before != after).sum() > 0  # same refs, new text
    kb.save(root)
    first, second = (_manifest(root, g)["tables"]["chunks"]["parts"] for g in ("g000001", "g000002"))
    assert len(first) == len(second) > 3
    new = [p for p in second if p["sha256"] not in {q["sha256"] for q in first}]
    assert new and len(new) < len(second) / 2
    chunk_rows = [piece for piece in encoded if "content" in piece.column_names]
    assert sum(len(piece) for piece in chunk_rows) == sum(p["rows"] for p in new)
    assert any("TOPIC" in text for piece in chunk_rows for text in piece.column("content").to_pylist())
    assert_kb_equal(kb, crux_nb.open(root, verify=True))
    assert crux_nb.open(root).chunks.set_index("ref")["content"].equals(after)


def test_parts_listed_without_row_digests_are_encoded_and_then_carry_them(tmp_path, monkeypatch):
    """A folder saved before row digests: the first save encodes the parts (and links those with the same bytes),
    records the digests, and the next save links by them."""
    monkeypatch.setattr(parts, "PART_BYTES", 2_000)
    root = tmp_path / "kb"
    _kb(30).save(root)
    manifest_file = root / "generations" / "g000001" / "manifest.json"
    manifest = json.loads(manifest_file.read_text())
    for entry in manifest["tables"].values():
        for part in entry["parts"]:
            part.pop("rows_sha256", None)
    manifest_file.write_text(json.dumps(manifest))
    encoded = []
    original = parts.encode

    def counting(piece):
        if "content" in piece.column_names:  # the chunks table's parts
            encoded.append(len(piece))
        return original(piece)

    monkeypatch.setattr(parts, "encode", counting)
    kb = crux_nb.open(root, verify=False)
    kb.add_text("zz.md", "# Z\n\nA late note.")
    kb.save(root)
    chunks = _manifest(root, "g000002")["tables"]["chunks"]
    assert all(isinstance(p.get("rows_sha256"), str) for p in chunks["parts"])
    assert sum(encoded) >= chunks["rows"]  # nothing to link by: every part encoded once
    encoded.clear()
    kb.add_text("zy.md", "# Y\n\nAnother late note.")
    kb.save(root)
    assert sum(encoded) < _manifest(root, "g000003")["tables"]["chunks"]["rows"] / 2
    assert_kb_equal(kb, crux_nb.open(root, verify=True))
