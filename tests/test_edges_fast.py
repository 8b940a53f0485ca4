"""The column-wise ``add_edges`` / ``add_entities`` path against the row-by-row reference.

Random frames mix valid cells with every kind of bad one; on each, the public path and
the reference (the fast path switched off) must build equal frames or raise the same
error (class, code and message naming the same row).
"""

from __future__ import annotations

import math
from unittest import mock

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import crux_nb
import crux_nb.store.state as state_module
from crux_nb.errors import CruxError
from crux_nb.refs import ChunkRef, EntityRef, encode_ref
from crux_nb.store.rows_fast import fast_edge_rows

CHUNKS = ["chunk:a:c0000", "chunk:a:c0001", "chunk:b:c0000"]
GOOD_ENDS = CHUNKS + ["document:a", "entity:x", "entity:y%3Az", "entity:é", EntityRef("obj"), ChunkRef("b", "c0000")]
BAD_ENDS = ["nonsense", "chunk:a:c9999", "entity:", "entity:a%zz", 3, None, "chunk:a:c0000\ud800"]
GOOD_EVIDENCE = [[c] for c in CHUNKS] + [CHUNKS[:2], (CHUNKS[2],), np.array(CHUNKS[:1]), [ChunkRef("a", "c0001")]]
BAD_EVIDENCE = [[], "chunk:a:c0000", ["entity:x"], ["chunk:zz:c0000"], 5, [None]]
GOOD_TYPES = ["mentions", "related", "références", "a b"]
BAD_TYPES = ["", "has:colon", "50%", "sequence", None, 7, ["x"]]
GOOD_WEIGHTS = [1.0, 2, 0.5, None, float("nan"), True, np.float64(3.0)]
BAD_WEIGHTS = [0, -1.0, float("inf"), "1", 10**400, False]
GOOD_DESCRIPTIONS = [None, "", "a description", "quote \" and \\ and \n", float("nan")]
BAD_DESCRIPTIONS = [3, "bad \udc00"]


@pytest.fixture(scope="module")
def base():
    kb = crux_nb.knowledge_base(id="fast")
    kb.add_text("a", "Alpha one is the first paragraph of source a.\n\nAlpha two is the second paragraph of it.", chunk_size=50)
    kb.add_text("b", "Beta one.", format="text")
    assert kb.chunks["ref"].tolist() == CHUNKS
    return kb.state


def _outcome(fn):
    try:
        state = fn()
    except CruxError as exc:
        return ("error", type(exc).__name__, exc.code, str(exc))
    return ("ok", *(state.frame(t).to_json() for t in ("entities", "edges", "edge_evidence")))


def _both(fn):
    fast = _outcome(fn)
    with mock.patch.multiple(state_module, fast_edge_rows=lambda *a, **k: None, fast_entity_rows=lambda *a, **k: None):
        slow = _outcome(fn)
    return fast, slow


def _frame(rows) -> pd.DataFrame:
    try:
        return pd.DataFrame(rows)
    except UnicodeEncodeError:  # pandas cannot infer a str column holding a lone surrogate: keep objects
        return pd.DataFrame(rows, dtype=object)


def _cell(good, bad):
    return st.one_of(*[st.sampled_from(good)] * 9, st.sampled_from(bad))  # most rows valid: the fast path runs


_ROW = st.fixed_dictionaries({
    "from_ref": _cell(GOOD_ENDS, BAD_ENDS), "to_ref": _cell(GOOD_ENDS, BAD_ENDS),
    "type": _cell(GOOD_TYPES, BAD_TYPES), "evidence": _cell(GOOD_EVIDENCE, BAD_EVIDENCE),
    "direction": _cell(["directed", "symmetric", None], ["both", 1]),
    "weight": _cell(GOOD_WEIGHTS, BAD_WEIGHTS), "description": _cell(GOOD_DESCRIPTIONS, BAD_DESCRIPTIONS),
})


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, min_size=1, max_size=8), drop=st.sets(st.sampled_from(["direction", "weight", "description"])))
def test_fast_edges_match_the_row_loop(base, rows, drop):
    frame = _frame(rows).drop(columns=sorted(drop))
    fast, slow = _both(lambda: state_module.with_edges(base, frame))
    assert fast == slow


def test_fast_path_takes_clean_frames_and_declines_bad_ones(base):
    good = pd.DataFrame({"from_ref": ["chunk:a:c0000", "entity:y"], "to_ref": ["entity:x", "entity:x"],
                         "type": ["mentions", "related"], "direction": ["directed", "symmetric"],
                         "evidence": [["chunk:a:c0000"], ["chunk:b:c0000"]], "weight": [1.0, 2.0]})
    existing, sources = set(CHUNKS) | {"document:a", "document:b"}, {c: c.split(":")[1] for c in CHUNKS}
    rows = fast_edge_rows(good, existing=existing, chunk_sources=sources, stage="user", provenance="exact")
    assert rows is not None and list(rows[0]["to_ref"]) == ["entity:x", "entity:y"]  # symmetric ends sorted
    bad = good.assign(weight=[1.0, -2.0])
    assert fast_edge_rows(bad, existing=existing, chunk_sources=sources, stage="user", provenance="exact") is None
    fast, slow = _both(lambda: state_module.with_edges(base, bad))
    assert fast == slow and fast[0] == "error" and "row 1: weight -2.0" in fast[3]


def test_numeric_and_nullable_weight_columns(base):
    frame = pd.DataFrame({"from_ref": ["entity:a", "entity:b", "entity:c"], "to_ref": ["entity:x"] * 3,
                          "type": ["related"] * 3, "evidence": [[CHUNKS[0]]] * 3})
    for weights in (pd.array([1, 2, None], dtype="Int64"), np.array([1, 2, 3], dtype=np.int64),
                    pd.array([1.5, None, 2.0], dtype="Float64")):
        fast, slow = _both(lambda: state_module.with_edges(base, frame.assign(weight=weights)))
        assert fast == slow and fast[0] == "ok"
    assert math.isclose(state_module.with_edges(base, frame.assign(weight=[1.5, None, 2.0])).edges["weight"].sum(), 4.5)


_ENTITY = st.fixed_dictionaries({
    "entity_id": _cell(["acme", "x", "é", "x"], ["", None, 3, "bad\ud800"]),
    "canonical_name": _cell(["ACME Corp", " Xavier ", "Éa"], ["", "  ", None, "bad\udfff"]),
    "aliases": _cell([["X"], ("b", "a", "a"), [], None, np.array(["A"])], ["X", ["ok", 3], {"k": "v"}, ["\ud800"]]),
    "type": _cell([None, "person", ""], [4]), "description": _cell([None, "text"], [1.5j]),
})


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ENTITY, min_size=1, max_size=6))
def test_fast_entities_match_the_row_loop(base, rows):
    frame = _frame(rows)
    fast, slow = _both(lambda: state_module.with_entities(base, frame))
    assert fast == slow


def _merged(fn, *, general: bool):
    if not general:
        return _outcome(fn)
    with mock.patch.object(state_module, "_first_edges", lambda *a, **k: None):
        return _outcome(fn)


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(rows=st.lists(_ROW, min_size=2, max_size=10), repeat=st.booleans())
def test_first_edges_merge_matches_the_general_merge(base, rows, repeat):
    """A state's first edges skip the string sorts (integer keys of the ids): the same frames as the general
    merge, duplicates and repeated evidence included (those go to the general merge)."""
    frame = _frame(rows + rows[:1] if repeat else rows)
    fast = _merged(lambda: state_module.with_edges(base, frame), general=False)
    slow = _merged(lambda: state_module.with_edges(base, frame), general=True)
    assert fast == slow


def test_first_edges_sort_by_id_and_evidence_order(base):
    frame = pd.DataFrame({"from_ref": [CHUNKS[2], CHUNKS[0], CHUNKS[1]], "to_ref": ["entity:q", "entity:p", "entity:r"],
                          "type": ["mentions"] * 3, "evidence": [[CHUNKS[1], CHUNKS[0]], [CHUNKS[0]], [CHUNKS[2]]]})
    state = state_module.with_edges(base, frame)
    ids = state.edges["edge_id"].tolist()
    assert ids == sorted(ids) and len(ids) == 3
    evidence = state.edge_evidence
    assert list(zip(evidence["edge_id"], evidence["chunk_ref"])) == sorted(zip(evidence["edge_id"], evidence["chunk_ref"]))
    assert len(evidence) == 4


# ----------------------------------------------------------------- column-wise ids and larger random frames
_TEXT = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), min_size=1, max_size=12)
_WORD = st.text(alphabet=st.sampled_from('ab"\\\n\t\x00\x1f\x7fé€\u2028😀 '), min_size=1, max_size=8)


@settings(max_examples=200, deadline=None)
@given(rows=st.lists(st.tuples(st.sampled_from(["directed", "symmetric"]), _TEXT, _TEXT, _TEXT), min_size=1,
                     max_size=20), stage=st.one_of(st.just("user"), _TEXT))
def test_column_wise_ids_are_stable_ids(rows, stage):
    """The Arrow-built canonical JSON hashes to exactly ``stable_id("edge", ...)``: quotes, backslashes,
    control characters, non-BMP and line-separator characters included."""
    from crux_nb._hashing import stable_id
    from crux_nb.store.edge_ids import edge_ids, hex_ids, id_keys, strings

    def coded(values):
        codes, uniques = pd.factorize(pd.Series(values, dtype="str"))
        return codes, strings(uniques.tolist())

    directions, starts, ends, types = (list(c) for c in zip(*rows))
    ids = hex_ids(edge_ids(coded(directions), coded(starts), coded(ends), coded(types), stage)).to_pylist()
    expected = [stable_id("edge", {"type": y, "from": f, "to": t, "direction": d, "stage": stage})
                for d, f, t, y in rows]
    assert ids == expected
    assert id_keys(pd.Series(ids, dtype="str")).tolist() == [int(i[5:], 16) for i in expected]
    with mock.patch("crux_nb.store.edge_ids.HASH_BLOCK", 3):  # hashed a block of rows at a time: the same ids
        blocked = hex_ids(edge_ids(coded(directions), coded(starts), coded(ends), coded(types), stage))
    assert blocked.to_pylist() == expected


def _random_frame(rng: np.random.Generator, n: int, names: list[str]) -> pd.DataFrame:
    """Valid edges only (so the column-wise path must take them): entity ends with awkward ids, chunks,
    documents, repeated edges, several evidence chunks, symmetric pairs, optional cells missing."""
    ends = CHUNKS + ["document:a", "document:b"] + [encode_ref(EntityRef(x)) for x in names]
    frm, to = rng.choice(ends, n), rng.choice(ends, n)
    sizes = rng.integers(1, 4, n)
    evidence = [list(rng.choice(CHUNKS, k)) for k in sizes]
    return pd.DataFrame({"from_ref": frm, "to_ref": to, "type": rng.choice(GOOD_TYPES + ['q"uote', "back\\slash"], n),
                         "direction": rng.choice(np.array(["directed", "symmetric", None], dtype=object), n),
                         "evidence": evidence, "weight": np.where(rng.random(n) < 0.2, np.nan, rng.random(n) + 0.1),
                         "description": rng.choice(np.array([None, "", "d", "two\nlines"], dtype=object), n)})


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(seed=st.integers(0, 2**32 - 1), n=st.integers(1, 400), names=st.lists(_WORD, min_size=1, max_size=30),
       again=st.booleans())
def test_column_wise_frames_equal_the_row_loop_on_random_frames(base, seed, n, names, again):
    """Oracle: on random valid frames (hundreds of rows, repeats and multi-chunk evidence) the column-wise path
    runs (it does not decline) and builds frames equal to the row-by-row reference's, for a state's first
    edges and for edges added to a state that has some (the general merge)."""
    rng = np.random.default_rng(seed)
    frame = _random_frame(rng, n, names)
    existing, sources = state_module._existing_refs(base), dict(zip(base.chunks["ref"], base.chunks["source_id"]))
    assert fast_edge_rows(frame, existing=existing, chunk_sources=sources, stage="user", provenance="exact") is not None
    start = state_module.with_edges(base, _random_frame(rng, 50, names[:3])) if again else base
    before = frame.copy()
    fast, slow = _both(lambda: state_module.with_edges(start, frame))
    assert fast[0] == "ok" and fast == slow
    pd.testing.assert_frame_equal(frame, before)  # the caller's frame is untouched
    state = state_module.with_edges(start, frame)
    assert all(str(state.frame(t)[c].dtype) == "str" for t in ("edges", "edge_evidence")
               for c in state.frame(t).columns if c != "weight")


def test_id_keys_decline_what_is_not_an_edge_id():
    from crux_nb.store.edge_ids import id_keys
    good = "edge_0123456789abcdef"
    assert id_keys(pd.Series([good], dtype="str")).tolist() == [0x0123456789abcdef] == id_keys([good]).tolist()
    for bad in ("edge_0123456789ABCDEF", "edge_0123456789abcde", "edge_0123456789abcdef0", "node_0123456789abcdef",
                "edge_0123456789abcdeé", "edge_0123456789abcdeg"):
        assert id_keys(pd.Series([good, bad], dtype="str")) is None and id_keys([good, bad]) is None, bad
    assert id_keys(pd.Series([good, None], dtype="str")) is None
