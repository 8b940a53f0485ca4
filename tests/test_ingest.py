import os

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import InputError, NotFoundError, ParameterError
from crux_nb.store.chunking import MAX_CHUNK_SIZE

MD = """---
team: platform
access: internal
revision: 2
---
Intro line before any heading.

# Release planning

We plan releases every quarter.

## Timeline

March: freeze. April: launch.
"""


def frames(kb):
    return {k: v.copy() for k, v in kb.frames().items()}


def assert_unchanged(before, kb):
    after = kb.frames()
    for name, frame in before.items():
        pd.testing.assert_frame_equal(frame, after[name])


def test_markdown_headings_become_parents_and_front_matter_metadata(kb):
    kb.add_text("plan.md", MD, metadata={"access": "public"})
    parents = kb.parents
    assert parents["parent_id"].tolist() == ["release-planning", "timeline"]
    assert parents["title"].tolist() == ["Release planning", "Timeline"]
    assert parents["heading_level"].tolist() == [1, 2]
    chunks = kb.chunks
    assert chunks["ordinal"].tolist() == [0, 1, 2]
    assert chunks["parent_id"].isna().tolist() == [True, False, False]
    assert chunks["ref"].tolist()[0] == "chunk:plan.md:c0000"
    meta = chunks["metadata"].iloc[1]
    assert meta == {"team": "platform", "access": "public", "revision": 2}  # explicit metadata wins
    assert kb.documents["title"].tolist() == ["Release planning"]
    assert "---" not in "".join(chunks["content"])


def test_chunk_columns_and_dtypes(kb):
    kb.add_text("a", "Some text here.")
    chunks = kb.chunks
    for col in ("source_id", "chunk_id", "parent_id", "ordinal", "content", "metadata"):
        assert col in chunks.columns
    assert pd.api.types.is_string_dtype(chunks["content"]) and chunks["ordinal"].dtype == "int64"


@pytest.mark.parametrize("size", [50, 120, 400])
def test_chunks_are_bounded_and_cover_the_text(size):
    kb = crux_nb.knowledge_base(id="c", chunk_size=size)
    text = "\n\n".join(f"Paragraph {i}. " + "word " * (i * 7 % 60) + "end." for i in range(30))
    text += "\n\n" + "x" * (size * 3)  # one unbroken run longer than a chunk
    kb.add_text("long.txt", text, format="text")
    contents = kb.chunks["content"].tolist()
    assert max(map(len, contents)) <= size
    assert "".join("".join(c.split()) for c in contents) == "".join(text.split())


def test_chunk_size_limits():
    with pytest.raises(ParameterError, match="chunk_size"):
        crux_nb.knowledge_base(chunk_size=MAX_CHUNK_SIZE + 1)
    with pytest.raises(ParameterError):
        crux_nb.knowledge_base(chunk_size=10)
    kb = crux_nb.knowledge_base(chunk_size=MAX_CHUNK_SIZE)
    kb.add_text("big", ("word " * 10_000 + "\n\n") * 3, format="text")
    assert kb.chunks["n_chars"].max() <= MAX_CHUNK_SIZE


def test_add_path_file_and_folder(tmp_path, kb):
    (tmp_path / "docs" / "sub").mkdir(parents=True)
    (tmp_path / "docs" / "a.md").write_text("# A\n\nAlpha text.")
    (tmp_path / "docs" / "sub" / "b.txt").write_text("Beta text.")
    (tmp_path / "docs" / ".hidden.md").write_text("# hidden")
    assert kb.add_path(tmp_path / "docs", metadata={"team": "x"}) == ["a.md", "sub/b.txt"]
    docs = kb.documents
    assert docs["source_id"].tolist() == ["a.md", "sub/b.txt"]
    assert docs["media_type"].tolist() == ["text/markdown", "text/plain"]
    assert docs["metadata"].iloc[0] == {"team": "x"}
    assert kb.parents["source_id"].tolist() == ["a.md"]  # a .txt file has no headings
    kb2 = crux_nb.knowledge_base()
    assert kb2.add_path(tmp_path / "docs" / "a.md") == ["a.md"]


def test_add_frame_other_columns_become_metadata(kb):
    df = pd.DataFrame({"id": ["x", "y"], "text": ["First doc.", "Second doc."], "team": ["a", None],
                       "year": [2024, 2025], "when": pd.to_datetime(["2024-01-02", "2025-03-04"])})
    assert kb.add_frame(df) == ["x", "y"]
    metas = kb.documents["metadata"].tolist()
    assert metas[0] == {"team": "a", "year": 2024, "when": "2024-01-02T00:00:00"}
    assert metas[1] == {"year": 2025, "when": "2025-03-04T00:00:00"}  # missing values dropped
    assert df.columns.tolist() == ["id", "text", "team", "year", "when"]  # caller's frame untouched


def test_readding_replaces_and_remove_removes(kb):
    kb.add_text("a", "# One\n\nOld text.")
    kb.add_text("b", "Other.")
    kb.add_text("a", "New text only.")
    assert kb.chunks.query("source_id == 'a'")["content"].tolist() == ["New text only."]
    assert kb.parents.empty
    kb.remove("a")
    assert kb.documents["source_id"].tolist() == ["b"]
    with pytest.raises(NotFoundError, match="'zzz'"):
        kb.remove("zzz")


BAD_TEXT = [
    ("", "is empty"),
    ("   \n\t", "is empty"),
    (b"bytes", "must be a string"),
    (42, "must be a string"),
    ("a\x00b", "NUL"),
    ("---\nk: v\n---\n", "no content"),
]


@pytest.mark.parametrize("text,message", BAD_TEXT)
def test_bad_text_is_rejected_and_kb_unchanged(kb, text, message):
    kb.add_text("keep", "Kept.")
    before = frames(kb)
    with pytest.raises(InputError, match=message) as info:
        kb.add_text("bad", text)
    assert "'bad'" in str(info.value) and info.value.code == "invalid_input"
    assert_unchanged(before, kb)


@pytest.mark.parametrize("source_id", ["", "  ", None, 3, "a\nb"])
def test_bad_source_ids(kb, source_id):
    with pytest.raises(InputError):
        kb.add_text(source_id, "text")


@pytest.mark.parametrize("metadata,message", [
    ("team", "must be a mapping"),
    ({1: "x"}, "key 1"),
    ({"when": object()}, "cannot be saved as JSON"),
    ({"x": float("nan")}, "finite"),
])
def test_bad_metadata(kb, metadata, message):
    with pytest.raises(InputError, match=message):
        kb.add_text("a", "text", metadata=metadata)


def test_bad_frames_leave_kb_unchanged(kb):
    kb.add_text("keep", "Kept.")
    before = frames(kb)
    with pytest.raises(InputError, match="appears more than once"):
        kb.add_frame(pd.DataFrame({"id": ["x", "x"], "text": ["a", "b"]}))
    with pytest.raises(InputError, match="'y'.*must be a string"):
        kb.add_frame(pd.DataFrame({"id": ["x", "y"], "text": ["fine", 3]}, dtype=object))
    with pytest.raises(InputError, match="missing column"):
        kb.add_frame(pd.DataFrame({"name": ["x"], "body": ["a"]}))
    with pytest.raises(InputError, match="must be a pandas DataFrame"):
        kb.add_frame([{"id": "x", "text": "a"}])
    assert_unchanged(before, kb)


def test_bad_files_leave_kb_unchanged(tmp_path, kb):
    kb.add_text("keep", "Kept.")
    before = frames(kb)
    folder = tmp_path / "f"
    folder.mkdir()
    (folder / "good.md").write_text("# Good\n\ntext")
    (folder / "bad.md").write_bytes(b"\xff\xfe\x00binary")
    with pytest.raises(InputError, match="bad.md.*UTF-8"):
        kb.add_path(folder)
    (folder / "bad.md").unlink()
    (folder / "empty.md").write_text("  \n")
    with pytest.raises(InputError, match="'empty.md' is empty"):
        kb.add_path(folder)
    with pytest.raises(InputError, match="type '.png'"):
        (tmp_path / "x.png").write_bytes(b"\x89PNG")
        kb.add_path(tmp_path / "x.png")
    with pytest.raises(InputError, match="cannot be read as PDF"):
        (tmp_path / "x.pdf").write_bytes(b"%PDF")
        kb.add_path(tmp_path / "x.pdf")
    with pytest.raises(NotFoundError, match="does not exist"):
        kb.add_path(tmp_path / "nope")
    only_other = tmp_path / "other"
    only_other.mkdir()
    (only_other / "img.png").write_bytes(b"\x89PNG")
    with pytest.raises(InputError, match="holds no file crux_nb reads.*img.png"):
        kb.add_path(only_other)
    if os.geteuid() != 0:  # root can read anything
        locked = tmp_path / "locked.md"
        locked.write_text("x")
        locked.chmod(0)
        with pytest.raises(InputError, match="cannot be read"):
            kb.add_path(locked)
    assert_unchanged(before, kb)


def test_returned_frames_cannot_corrupt_the_store(kb):
    kb.add_text("a", "# T\n\nText.", metadata={"team": "x"})
    chunks = kb.chunks
    chunks.loc[0, "content"] = "changed"
    chunks["extra"] = 1
    with pytest.raises(TypeError, match="read-only"):
        chunks["metadata"].iloc[0]["team"] = "y"
    assert kb.chunks["content"].iloc[0] == "# T\n\nText."
    assert "extra" not in kb.chunks.columns and kb.chunks["metadata"].iloc[0] == {"team": "x"}


def test_knowledge_base_parameters():
    assert crux_nb.knowledge_base(id="a").namespace == "a"
    assert crux_nb.knowledge_base(id="a", namespace="n").namespace == "n"
    for bad in ("", " ", "a:b", None):
        with pytest.raises(ParameterError, match="parameter 'id'"):
            crux_nb.knowledge_base(id=bad)


def test_sample_corpus_loads(sample_kb):
    docs = sample_kb.documents
    assert len(docs) >= 30
    assert {"team", "access", "date"} <= set(docs["metadata"].iloc[0])
    assert {"launch-plan-v1.md", "launch-plan-v2.md", "launch-plan-v3.md"} <= set(docs["source_id"])
