"""Hostile and malformed input (issue 9), part 2: documents, metadata, frames, files, edges and entities.

Same contract as ``test_hostile_input.py`` (whose helpers and strategies this module reuses): a call
succeeds or raises a CruxError with a code and a hint, and a failed call leaves the knowledge base
exactly as it was. What succeeds on odd input must also save and reopen equal (checked on curated
cases and on a small hypothesis sample: saving is slow).
"""

from __future__ import annotations

import datetime as dt
import math
import os
from decimal import Decimal

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st

import crux_nb
from crux_nb import KnowledgeBase
from crux_nb.testing import assert_kb_equal
from test_hostile_input import GRID, SPECIALS, Opaque, attempt, examples, garbage, guarded, odd_text, param

BASE_TEXT = "# Base\n\nThe base document stays as it is."


_BASE = []


def fresh_kb():
    """A knowledge base holding one document (a new object over a shared immutable state: cheap)."""
    if not _BASE:
        kb = crux_nb.knowledge_base(id="docs")
        kb.add_text("base.md", BASE_TEXT, metadata={"team": "core"})
        _BASE.append(kb.state)
    return KnowledgeBase(id="docs", namespace="docs", state=_BASE[0])


@pytest.fixture(autouse=True)
def base_untouched():
    """Every knowledge base of these tests shares the base state: no call may change its frames in place."""
    yield from guarded(fresh_kb())


def assert_reopens_equal(kb, folder) -> None:
    kb.save(folder)
    assert_kb_equal(kb, crux_nb.open(folder))


def value_id(value) -> str:
    """A stable test id (an object's default repr holds its address)."""
    return "Opaque" if isinstance(value, Opaque) else repr(value)


def obj(*values) -> pd.Series:
    """An object column (pandas 3 would make a pyarrow string column, which cannot hold a lone surrogate)."""
    return pd.Series(list(values), dtype=object)


# ------------------------------------------------------------------ strategies
ODD_IDS = ["../x", "..", ".", "", " ", "/", "\\", "a/../../etc/passwd", "C:\\Windows\\x", "a\x00b", "a\nb", "a\tb",
           "CON", "NUL", "aux.txt", "COM1", "LPT1.md", "x" * 5000, "a:b", "a%3Ab", "%", "chunk:a:b", "\u202eevil.md",
           "\u200b", "e\u0301", "\U0001F389.md", "\ud800", "trailing. ", "-rf", "*", "?", "'quoted'", '"dq"']
source_ids = st.one_of(st.sampled_from(ODD_IDS), odd_text, st.text(max_size=20), garbage)
TEXTS = ["", " ", "\n\n\t", "\x00", "abc\x00def", "plain", "# Only a heading", "---\ntitle: x\n---\n", "---\na: 1\n---\nbody",
         "\ufeffBOM first", "\u202e right-to-left \u200f marks", "e\u0301\u0301\u0301 combining", "\U0001F389" * 50,
         "\u200b\u200c\u200d zero width", "\r\n\r\nwindows\r\nlines\r", "\x1b[31m ansi \x07 bell", "\ud800 lone",
         "\udfff\ud800 reversed", "x" * 3000, "# " + "h" * 300 + "\n\nbody", "```\n# not a heading\n```\ntext",
         "a\u2028b\u2029c\x85d", "#" * 7 + " deep", "<script>alert(1)</script>", "%3A:%25:" * 20]
texts = st.one_of(st.sampled_from(TEXTS), odd_text, st.text(), st.binary(max_size=10), garbage)
metadata_values = st.one_of(st.sampled_from(SPECIALS), garbage, odd_text,
                            st.recursive(st.one_of(st.integers(), st.floats(), st.text(max_size=5), st.none(),
                                                   st.booleans()),
                                         lambda c: st.one_of(st.lists(c, max_size=3),
                                                             st.dictionaries(st.one_of(st.text(max_size=3),
                                                                                       st.integers()), c, max_size=3)),
                                         max_leaves=8))
metadatas = st.one_of(st.none(), garbage,
                      st.dictionaries(st.one_of(st.sampled_from(["title", "team", "", " ", "\ud800", "a.b", "any"]),
                                                st.text(max_size=6), st.integers(), st.none(), st.tuples(st.text())),
                                      metadata_values, max_size=4))


# ------------------------------------------------------------------ add_text
@examples(200)
@given(source_id=source_ids, text=texts, metadata=metadatas, format=param("markdown", "text"),
       chunk_size=param(None, 50, 1200, 24_000))
def test_add_text(source_id, text, metadata, format, chunk_size):
    kb = fresh_kb()
    ok, _ = attempt(lambda: kb.add_text(source_id, text, metadata=metadata, format=format, chunk_size=chunk_size), kb)
    if ok:
        docs = kb.documents
        assert set(docs["source_id"]) == {"base.md", source_id}
        assert (kb.chunks["source_id"] == source_id).sum() == docs.set_index("source_id").loc[source_id, "n_chunks"] >= 1
        assert all(len(c) <= (chunk_size or kb.chunk_size) for c in kb.chunks["content"])


#: Valid but odd: any Unicode except lone surrogates (and control characters in ids).
odd_ids = st.text(st.characters(exclude_categories=("Cs", "Cc")), min_size=1, max_size=40).filter(str.strip)
odd_texts = st.text(st.characters(exclude_categories=("Cs",), exclude_characters="\x00"), min_size=1,
                    max_size=2000).filter(str.strip)
odd_metadata = st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8),
                               st.one_of(st.none(), st.booleans(), st.integers(-(2**63) + 1, 2**63 - 1),
                                         st.floats(allow_nan=False, allow_infinity=False),
                                         st.text(st.characters(exclude_categories=("Cs",)), max_size=20),
                                         st.lists(st.text(st.characters(exclude_categories=("Cs",)), max_size=5),
                                                  max_size=3)), max_size=4)


@examples(60)
@given(source_id=odd_ids, text=odd_texts, metadata=odd_metadata, format=st.sampled_from(["markdown", "text"]))
def test_odd_unicode_documents(source_id, text, metadata, format):
    """Valid but odd documents: accepted (or rejected for having no content), then every chunk reads back."""
    kb = fresh_kb()
    ok, err = attempt(lambda: kb.add_text(source_id, text, metadata=metadata, format=format, chunk_size=50), kb)
    if not ok:
        assert "no content" in err.message or "no text to index" in err.message, err
        return
    chunks = kb.chunks[kb.chunks["source_id"] == source_id]
    assert len(chunks) >= 1 and chunks["n_chars"].between(1, 50).all()
    for ref in chunks["ref"]:
        hit = kb.reader.hydrate(ref)
        assert hit is not None and hit.source.id == source_id
        assert kb.reader.neighbors(ref, types=["hierarchy"])  # its section or its document


@examples(12)
@given(source_id=st.one_of(st.sampled_from(ODD_IDS), odd_ids), text=st.one_of(st.sampled_from(TEXTS), odd_texts),
       metadata=st.one_of(metadatas, odd_metadata))
def test_odd_documents_that_are_accepted_save_and_reopen_equal(tmp_path_factory, source_id, text, metadata):
    kb = fresh_kb()
    ok, _ = attempt(lambda: kb.add_text(source_id, text, metadata=metadata), kb)
    if ok:
        assert_reopens_equal(kb, tmp_path_factory.mktemp("kb"))


ACCEPTED = [("../x", "\u202e right-to-left \u200f marks \u200b", {"title": "\U0001F389", "when": dt.date(2020, 1, 2)}),
            ("CON", "e\u0301\u0301 combining " + "\U0001F389" * 30, {"n": 2**63 - 1, "m": -(2**63) + 1, "f": 1e308}),
            ("\U0001F389.md", "\ufeffBOM\r\nwindows\rmac\x1b[0m", {"nested": {"1": [1, {"x": None}], "2": []}}),
            ("x" * 5000, "%3A:%25:" * 20, {"when": dt.datetime(2020, 1, 1, 12, tzinfo=dt.timezone.utc),
                                           "np": np.int64(3), "b": np.bool_(False), "t": (1, "a")}),
            ("a/../../etc/passwd", "---\ntitle: Front\nn: 3\n---\n# H\n\nbody \u2028 line", {"k": "\u202e"})]


def test_accepted_odd_documents_save_and_reopen_equal(tmp_path):
    kb = fresh_kb()
    for source_id, text, metadata in ACCEPTED:
        ok, err = attempt(lambda: kb.add_text(source_id, text, metadata=metadata), kb, deep=True)
        assert ok, err
    assert_reopens_equal(kb, tmp_path / "kb")
    reopened = crux_nb.open(tmp_path / "kb")
    for ref in kb.chunks["ref"]:
        assert reopened.reader.hydrate(ref) is not None and reopened.reader.neighbors(ref)
    assert len(reopened.recipe().run("the base document")) >= 1


@pytest.mark.parametrize("text", ["word " * 220_000, "x" * 1_100_000,
                                  ("# Part\n\n" + "Sentence one. Sentence two! " * 40 + "\n\n") * 1_000])
def test_huge_texts(tmp_path, text):
    assert len(text) >= 1_000_000
    kb = fresh_kb()
    ok, err = attempt(lambda: kb.add_text("huge.md", text), kb)
    assert ok, err
    chunks = kb.chunks[kb.chunks["source_id"] == "huge.md"]
    assert chunks["n_chars"].max() <= kb.chunk_size and chunks["n_chars"].sum() >= len(text.split()) // 2
    if text.startswith("x"):
        assert_reopens_equal(kb, tmp_path / "kb")


@pytest.mark.parametrize("text,code_word", [(b"bytes are not text", "decode"), (bytearray(b"x"), "decode"),
                                            ("\x00binary\x00", "binary"), ("\ud800", "surrogate"), ("", "empty")])
def test_rejected_texts_say_why(text, code_word):
    kb = fresh_kb()
    ok, err = attempt(lambda: kb.add_text("x.md", text), kb)
    assert not ok and err.code == "invalid_input"
    assert code_word in str(err)


def test_every_add_text_parameter_with_every_special_value():
    frame = pd.DataFrame({"id": ["q"], "text": ["t"]})
    calls = [lambda kb, v: kb.add_text(v, "text"), lambda kb, v: kb.add_text("s", v),
             lambda kb, v: kb.add_text("s", "t", metadata=v), lambda kb, v: kb.add_text("s", "t", metadata={"k": v}),
             lambda kb, v: kb.add_text("s", "t", metadata={"k": [v]}),
             lambda kb, v: kb.add_text("s", "t", metadata={"k": {"n": v}}), lambda kb, v: kb.add_text("s", "t", format=v),
             lambda kb, v: kb.add_text("s", "t", chunk_size=v), lambda kb, v: kb.remove(v), lambda kb, v: kb.add_path(v),
             lambda kb, v: kb.add_frame(v), lambda kb, v: kb.add_edges(v), lambda kb, v: kb.add_entities(v),
             lambda kb, v: kb.add_frame(frame, id_column=v), lambda kb, v: kb.add_frame(frame, text_column=v)]
    tried = 0
    for call in calls:
        for value in GRID:
            kb = fresh_kb()
            attempt(lambda: call(kb, value), kb)
            tried += 1
    assert tried >= 900


# ------------------------------------------------------------------ metadata
class Recursive(list):
    pass


def _recursive_list():
    value = Recursive([1])
    value.append(value)
    return value


def _recursive_dict():
    value: dict = {}
    value["self"] = value
    return value


def _nested(depth: int) -> list:
    value: list = []
    for _ in range(depth):
        value = [value]
    return value


METADATA = {"set": {1, 2}, "bytes": b"x", "datetime": dt.datetime(2020, 1, 1), "time": dt.time(1, 2),
            "timedelta": dt.timedelta(1), "nan": math.nan, "inf": -math.inf, "nested nan": {"a": [math.nan]},
            "huge": 10**30, "very huge": 10**5000, "np nan": np.float64("nan"), "np array": np.array([1, 2]),
            "decimal": Decimal("1.1"), "complex": 1j, "object": Opaque(), "NA": pd.NA, "NaT": pd.NaT,
            "recursive list": _recursive_list(), "recursive dict": _recursive_dict(),
            "deep": _nested(500), "deep but fine": _nested(60), "colliding keys": {1: "a", "1": "b"}, "surrogate": "\ud800",
            "surrogate nested key": {"\udfff": 1}, "generator": (i for i in range(2)), "type": int,
            "Timestamp": pd.Timestamp("2020-01-01", tz="UTC"), "np datetime": np.datetime64("2020-01-01"),
            "series": pd.Series([1]), "frame": pd.DataFrame({"a": [1]}), "range": range(3)}
NON_STRING_KEYS = [1, None, 1.5, (1, 2), True, b"k", "", "\ud800", Opaque()]


def test_metadata_values(tmp_path):
    kb = fresh_kb()
    accepted = []
    for name, value in METADATA.items():
        ok, _ = attempt(lambda: kb.add_text(f"{name}.md", "text", metadata={"k": value}), kb, deep=True)
        accepted += [name] if ok else []
    assert {"datetime", "deep but fine", "Timestamp", "np datetime", "NA", "NaT"} <= set(accepted)
    assert not {"nan", "inf", "set", "bytes", "huge", "very huge", "recursive list", "recursive dict", "deep", "surrogate",
                "colliding keys", "object"} & set(accepted)
    assert_reopens_equal(kb, tmp_path / "kb")  # every accepted value saves and reads back equal


@pytest.mark.parametrize("key", NON_STRING_KEYS, ids=value_id)
def test_metadata_keys(key):
    kb = fresh_kb()
    ok, _ = attempt(lambda: kb.add_text("m.md", "text", metadata={key: 1}), kb)
    assert not ok


@examples(150)
@given(metadata=metadatas)
def test_metadata_property(metadata):
    kb = fresh_kb()
    ok, _ = attempt(lambda: kb.add_text("m.md", "text", metadata=metadata), kb)
    if ok:
        stored = kb.documents.set_index("source_id").loc["m.md", "metadata"]
        assert all(isinstance(k, str) and k for k in stored)
        ok, view = attempt(lambda: kb.view(id="v", where={"team": "core"}), kb, read_only=True)
        assert ok and "base.md" in view.members()


# ------------------------------------------------------------------ add_frame
FRAMES = {
    "duplicate ids": pd.DataFrame({"id": ["q", "q"], "text": ["a", "b"]}),
    "replaces an existing id": pd.DataFrame({"id": ["base.md"], "text": ["new text"]}),
    "int ids": pd.DataFrame({"id": [1, 2], "text": ["a", "b"]}),
    "float ids": pd.DataFrame({"id": [1.5, np.nan], "text": ["a", "b"]}),
    "nan text": pd.DataFrame({"id": ["q"], "text": [np.nan]}),
    "None text": pd.DataFrame({"id": ["q"], "text": obj(None)}),
    "NA text": pd.DataFrame({"id": ["q"], "text": obj(pd.NA)}),
    "bytes text": pd.DataFrame({"id": ["q"], "text": obj(b"hello")}),
    "surrogate text": pd.DataFrame({"id": ["q"], "text": obj("\ud800")}),
    "surrogate id": pd.DataFrame({"id": obj("\ud800"), "text": ["t"]}),
    "surrogate column name": pd.DataFrame([["q", "t", 1]], columns=pd.Index(["id", "text", "\ud800"], dtype=object)),
    "MultiIndex rows": pd.DataFrame({"id": ["q", "r"], "text": ["a", "b"]},
                                    index=pd.MultiIndex.from_tuples([(1, 2), (3, 4)])),
    "MultiIndex columns": pd.DataFrame([["q", "a", 1]], columns=pd.MultiIndex.from_tuples([("id", ""), ("text", ""),
                                                                                          ("m", "x")])),
    "MultiIndex columns, two levels": pd.DataFrame([["q", "a"]], columns=pd.MultiIndex.from_tuples([("id", "a"),
                                                                                                   ("text", "b")])),
    "duplicate text columns": pd.DataFrame([["q", "a", "b"]], columns=["id", "text", "text"]),
    "duplicate id columns": pd.DataFrame([["q", "r", "b"]], columns=["id", "id", "text"]),
    "duplicate metadata columns": pd.DataFrame([["q", "a", 1, 2]], columns=["id", "text", "m", "m"]),
    "int column names": pd.DataFrame([["q", "a", 1]], columns=["id", "text", 5]),
    "empty": pd.DataFrame({"id": [], "text": []}),
    "no columns": pd.DataFrame(),
    "missing text column": pd.DataFrame({"id": ["q"]}),
    "missing id column": pd.DataFrame({"text": ["q"]}),
    "categorical": pd.DataFrame({"id": pd.Categorical(["q"]), "text": pd.Categorical(["hello"])}),
    "list metadata": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": obj([1, 2])}),
    "array metadata": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": obj(np.array([1, 2]))}),
    "set metadata": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": obj({1, 2})}),
    "nested non-string keys": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": obj({1: 2, (1, 2): 3})}),
    "timestamps": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": [pd.Timestamp("2020-01-01", tz="UTC")]}),
    "timedeltas": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": [pd.Timedelta("1D")]}),
    "periods": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": [pd.Period("2020-01")]}),
    "intervals": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": [pd.Interval(0, 1)]}),
    "complex": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": [1 + 2j]}),
    "nullable ints": pd.DataFrame({"id": ["q", "r"], "text": ["a", "b"], "m": pd.array([1, None], dtype="Int64")}),
    "int title": pd.DataFrame({"id": ["q"], "text": ["hi"], "title": [5]}),
    "empty column name": pd.DataFrame({"id": ["q"], "text": ["hi"], "": [1]}),
    "sparse": pd.DataFrame({"id": ["q"], "text": ["hi"], "m": pd.arrays.SparseArray([1])}),
    "huge": pd.DataFrame({"id": [f"d{i}" for i in range(300)], "text": ["t"] * 299 + ["\x00"]}),
    "not a frame": {"id": ["q"], "text": ["t"]},
}


def test_add_frame_odd_frames(tmp_path):
    kb, accepted = fresh_kb(), []
    for name, frame in FRAMES.items():
        ok, out = attempt(lambda: kb.add_frame(frame), kb, deep=True)
        if ok:
            assert set(out) <= set(kb.documents["source_id"])
            accepted.append(name)
    assert {"replaces an existing id", "MultiIndex rows", "categorical", "nullable ints", "timestamps"} <= set(accepted)
    assert not {"duplicate ids", "int ids", "nan text", "bytes text", "surrogate text", "duplicate text columns",
                "MultiIndex columns, two levels", "huge", "not a frame"} & set(accepted)
    assert_reopens_equal(kb, tmp_path / "kb")


frame_cells = st.one_of(st.sampled_from(["q", "r", "base.md", "", "\ud800", "text", None, np.nan, pd.NA, 1, b"x"]),
                        odd_text, garbage)


@examples(100)
@given(rows=st.lists(st.tuples(frame_cells, frame_cells, frame_cells), max_size=4),
       columns=st.sampled_from([["id", "text", "m"], ["id", "text", "text"], ["id", "txt", "m"], ["id", "text", 7]]))
def test_add_frame_property(rows, columns):
    kb = fresh_kb()
    frame = pd.DataFrame({i: obj(*[r[i] for r in rows]) for i in range(3)})
    frame.columns = columns
    attempt(lambda: kb.add_frame(frame), kb)


# ------------------------------------------------------------------ add_path
def _symlink(target, link) -> None:
    try:
        os.symlink(target, link)
    except OSError:
        pytest.skip("symlinks are not available")


PATHS = {
    "missing": lambda root: root / "nowhere.md",
    "empty folder": lambda root: (root / "empty").mkdir() or root / "empty",
    "binary .md": lambda root: (root / "bin.md").write_bytes(bytes(range(256))) or root / "bin.md",
    "latin-1 .txt": lambda root: (root / "l1.txt").write_bytes("caf\xe9".encode("latin-1")) or root / "l1.txt",
    "NUL in .md": lambda root: (root / "nul.md").write_text("a\x00b") or root / "nul.md",
    "empty .md": lambda root: (root / "e.md").write_text("") or root / "e.md",
    "headings only": lambda root: (root / "h.md").write_text("# A\n## B\n") or root / "h.md",
    "unknown suffix": lambda root: (root / "x.pdf").write_bytes(b"%PDF-1.4") or root / "x.pdf",
    "folder of binaries": lambda root: _folder(root, {"a.bin": b"\x00\x01", "b.png": b"\x89PNG"}),
    "folder with one bad file": lambda root: _folder(root, {"good.md": b"# Good\n\nfine", "bad.md": b"\xff\xfe\x00"}),
    "folder with hidden files": lambda root: _folder(root, {".hidden.md": b"secret", "sub/.git/x.md": b"x"}),
    "folder with odd names": lambda root: _folder(root, {"\u202eevil.md": b"rtl name", "CON.md": b"reserved",
                                                         "sp ace.txt": b"space", "e\u0301.md": b"combining"}),
    "dangling symlink": lambda root: _link(root, root / "gone.md", "dangling.md"),
    "symlink loop": lambda root: _link(root, root / "loop", "loop") and root,
    "NUL in path": lambda root: str(root / "a\x00b.md"),
    "surrogate in path": lambda root: str(root / "\ud800.md"),
    "very long path": lambda root: root / ("x" * 300 + ".md"),
    "a file as folder": lambda root: (root / "f.md").write_text("x") or root / "f.md" / "child.md",
    "bytes path": lambda root: os.fsencode(root / "x.md"),
    "non-UTF-8 file name": lambda root: _raw_name(root, b"caf\xe9.md"),
    "/dev/null": lambda root: "/dev/null",
}


def _raw_name(root, name: bytes):
    folder = root / "raw"
    folder.mkdir()
    with open(os.path.join(os.fsencode(folder), name), "wb") as fh:
        fh.write(b"# Raw\n\nA file whose name is not UTF-8.")
    return folder


def _folder(root, files):
    folder = root / "folder"
    for name, data in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(data)
    return folder


def _link(root, target, name):
    _symlink(target, root / name)
    return root / name


def test_add_path_odd_paths(tmp_path):
    kb, accepted = fresh_kb(), []
    for name, make in PATHS.items():
        root = tmp_path / f"case{len(accepted)}-{abs(hash(name))}"
        root.mkdir()
        path = make(root)
        ok, out = attempt(lambda: kb.add_path(path), kb, deep=True)
        if ok:
            assert set(out) <= set(kb.documents["source_id"])
            accepted.append(name)
    assert accepted == ["folder with odd names"]  # hidden files are skipped: that folder holds nothing to read
    assert_reopens_equal(kb, tmp_path / "saved")


# ------------------------------------------------------------------ add_edges / add_entities
EDGE_VALID = {"from_ref": ["chunk:base.md:c0000", "entity:e1", "document:base.md", "parent:base.md:base"],
              "to_ref": ["entity:e2", "chunk:base.md:c0000", "entity:\u202e"],
              "type": ["mentions", "related", "cites"], "evidence": [["chunk:base.md:c0000"], ("chunk:base.md:c0000",)],
              "direction": ["directed", "symmetric", None], "description": ["d", None, ""], "weight": [1.0, 2, None]}
EDGE_BAD = {"from_ref": ["chunk:nope:c0000", "chunk:base.md", "\ud800", "entity:\ud800"],
            "to_ref": ["asset:x", "", "entity:%zz"],
            "type": ["hierarchy", "sequence", "a:b", "50%", "", " ", "\ud800", 7],
            "evidence": ["chunk:base.md:c0000", [], ["entity:e1"], ["chunk:base.md:c9999"], [None], 5, {"a": 1}],
            "direction": ["both", "out", pd.NA, np.array([1, 2])],
            "description": ["\ud800", 5, ["x"]], "weight": [0, -1, math.nan, math.inf, 10**400, "1", True, pd.NA]}


def _column_values(valid, bad, name):
    """Mostly valid cells (so that some frames pass), else known-bad ones, else anything."""
    good = st.sampled_from(valid[name])
    return st.one_of(good, good, good, good, st.sampled_from(bad[name]), garbage)


@examples(150)
@given(data=st.data())
def test_add_edges_property(data):
    kb = fresh_kb()
    required = ["from_ref", "to_ref", "type", "evidence"]
    dropped = data.draw(st.one_of(st.just(()), st.just(()), st.just(()), st.lists(st.sampled_from(required))),
                        label="dropped")
    optional = data.draw(st.lists(st.sampled_from(["direction", "description", "weight"]), unique=True),
                         label="optional")
    columns = [c for c in required if c not in dropped] + optional
    n = data.draw(st.integers(0, 3), label="rows")
    frame = pd.DataFrame({c: obj(*[data.draw(_column_values(EDGE_VALID, EDGE_BAD, c), label=c) for _ in range(n)])
                          for c in columns}, index=pd.RangeIndex(n))
    ok, _ = attempt(lambda: kb.add_edges(frame), kb)
    if ok:
        assert len(kb.edges) >= min(n, 1) and kb.edges["weight"].gt(0).all()
        assert set(kb.edge_evidence["chunk_ref"]) <= set(kb.chunks["ref"])


ENTITY_VALID = {"entity_id": ["e1", "e2", "\U0001F389", "a:b"], "canonical_name": ["One", " padded "],
                "type": ["PERSON", None], "aliases": [["A"], (), None, np.array(["x", "y"])],
                "description": ["d", None]}
ENTITY_BAD = {"entity_id": ["", None, 5, "\ud800", pd.NA], "canonical_name": ["", " ", None, 5, "\ud800"],
              "type": [5, "\ud800", ["x"]], "aliases": ["A", [1], 5, {"a": 1}, [None], ["\ud800"], b"x"],
              "description": [5, "\ud800", {"x": 1}]}


@examples(150)
@given(data=st.data())
def test_add_entities_property(data):
    kb = fresh_kb()
    required = ["entity_id", "canonical_name"]
    dropped = data.draw(st.one_of(st.just(()), st.just(()), st.just(()), st.lists(st.sampled_from(required))),
                        label="dropped")
    optional = data.draw(st.lists(st.sampled_from(["type", "aliases", "description"]), unique=True), label="optional")
    columns = [c for c in required if c not in dropped] + optional
    n = data.draw(st.integers(0, 3), label="rows")
    frame = pd.DataFrame({c: obj(*[data.draw(_column_values(ENTITY_VALID, ENTITY_BAD, c), label=c) for _ in range(n)])
                          for c in columns}, index=pd.RangeIndex(n))
    ok, _ = attempt(lambda: kb.add_entities(frame), kb)
    if ok:
        assert set(frame["entity_id"]) <= set(kb.entities["entity_id"])


MALFORMED = {
    "MultiIndex columns": pd.DataFrame([["chunk:base.md:c0000", "entity:e", "t", ["chunk:base.md:c0000"]]],
                                       columns=pd.MultiIndex.from_tuples([("from_ref", ""), ("to_ref", ""),
                                                                          ("type", ""), ("evidence", "")])),
    "duplicate columns": pd.DataFrame([["chunk:base.md:c0000", "entity:e", "t", "u", ["chunk:base.md:c0000"]]],
                                      columns=["from_ref", "to_ref", "type", "type", "evidence"]),
    "MultiIndex rows": pd.DataFrame({"from_ref": ["chunk:base.md:c0000"], "to_ref": ["entity:e"], "type": ["t"],
                                     "evidence": [["chunk:base.md:c0000"]]},
                                    index=pd.MultiIndex.from_tuples([(1, 2)])),
    "evidence as JSON text": pd.DataFrame({"from_ref": ["chunk:base.md:c0000"], "to_ref": ["entity:e"], "type": ["t"],
                                           "evidence": ['["chunk:base.md:c0000"]']}),
    "arrow list column": pd.DataFrame({"from_ref": ["chunk:base.md:c0000"], "to_ref": ["entity:e"], "type": ["t"],
                                       "evidence": pd.array([["chunk:base.md:c0000"]],
                                                            dtype=pd.ArrowDtype(__import__("pyarrow").list_(
                                                                __import__("pyarrow").string())))}),
    "empty": pd.DataFrame({"from_ref": [], "to_ref": [], "type": [], "evidence": []}),
}


def test_malformed_edge_and_entity_frames(tmp_path):
    kb = fresh_kb()
    for name, frame in MALFORMED.items():
        attempt(lambda: kb.add_edges(frame), kb, deep=True)
        renamed = frame.rename(columns={"from_ref": "entity_id", "type": "canonical_name"})
        attempt(lambda: kb.add_entities(renamed), kb, deep=True)
    assert_reopens_equal(kb, tmp_path / "kb")


# ------------------------------------------------------------------ saving to odd paths
SAVE_PATHS = [5, None, b"kb", "", "a\x00b", "\ud800", ["kb"], Opaque()]


@pytest.mark.parametrize("path", SAVE_PATHS, ids=value_id)
def test_save_to_odd_paths(path):
    kb = fresh_kb()
    ok, err = attempt(lambda: kb.save(path), kb, deep=True)
    assert not ok and err.code == "invalid_parameter"


@pytest.mark.parametrize("name", ["\u202e\u200b \U0001F389", "CON", "..x", "e\u0301"])
def test_save_to_odd_folder_names(tmp_path, name):
    kb = fresh_kb()
    assert_reopens_equal(kb, tmp_path / name)


@pytest.mark.parametrize("path", SAVE_PATHS, ids=value_id)
def test_open_odd_paths(path):
    ok, err = attempt(lambda: crux_nb.open(path))
    assert not ok
