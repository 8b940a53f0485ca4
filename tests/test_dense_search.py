"""The dense leg's query path: one normalised matrix per state, one single-threaded product, filters as masks."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import crux_nb
from crux_nb.embeddings import FunctionEmbedder, chunk_matrix, cosine_scores, query_vector
from crux_nb.retrieval import DenseLeg, retrieve
from crux_nb.retrieval.filters import filter_mask, hit_record, members_mask, record_matches


def _kb(n: int = 60, seed: int = 0):
    rng = np.random.default_rng(seed)
    kb = crux_nb.knowledge_base(id="dense-search")
    values = ["a", "b", 1, 1.0, 2, True, False, None, 2.5, [1], {"x": 1}]
    for i in range(n):
        meta = {"team": values[rng.integers(len(values))]}
        if rng.uniform() < 0.5:
            meta["tier"] = values[rng.integers(len(values))]
        kb.add_text(f"d{i:03d}.md", f"text {i} " + " ".join(f"w{j}" for j in rng.integers(0, 20, 6)), metadata=meta,
                    format="text")
    return kb


def _rowwise(state, namespace, filter):
    cols = state.lookup.columns
    return np.array([record_matches(hit_record(namespace, s, c, m), filter)
                     for s, c, m in zip(cols["source_id"], cols["chunk_id"], cols["metadata"])], dtype=bool)


@pytest.mark.parametrize("filter", [
    {"team": "a"}, {"team": 1}, {"team": 1.0}, {"team": True}, {"team": False}, {"team": None}, {"team": 2.5},
    {"tier": 1, "team": "b"}, {"source_id": "d003.md"}, {"chunk_id": "c0000"}, {"namespace": "default"},
    {"namespace": "other"}, {"missing": "a"}, {"team": 0}, None, {},
])
def test_filter_mask_equals_the_row_by_row_rule(filter):
    kb = _kb()
    state = kb.state
    for namespace in ("default", "other"):
        expected = _rowwise(state, namespace, filter)
        np.testing.assert_array_equal(filter_mask(state, namespace, filter), expected)
    if filter and "team" in filter and filter["team"] in ("a", 1, True, None):
        assert 0 < _rowwise(state, "default", filter).sum() < len(state.chunks)  # the case is not trivial


def test_members_mask_matches_isin():
    kb = _kb()
    state = kb.state
    members = frozenset({"d001.md", "d007.md", "nope.md"})
    np.testing.assert_array_equal(members_mask(state, members), state.chunks["source_id"].isin(members).to_numpy())
    assert not members_mask(state, frozenset()).any()


def test_cosine_scores_equal_a_float64_reference_on_both_paths():
    rng = np.random.default_rng(3)
    for n, dim in ((50, 8), (3000, 64)):  # below and above the single-thread cut-off
        matrix = rng.standard_normal((n, dim)).astype(np.float32)
        matrix /= np.linalg.norm(matrix, axis=1, keepdims=True)
        unit = rng.standard_normal(dim).astype(np.float32)
        unit /= np.linalg.norm(unit)
        got = cosine_scores(matrix, unit)
        assert got.dtype == np.float32 and got.shape == (n,)
        np.testing.assert_allclose(got, matrix.astype(np.float64) @ unit.astype(np.float64), atol=1e-5)


def test_query_vector_is_unit_or_none():
    emb = FunctionEmbedder(lambda ts: [[3.0, 4.0] if t else [0.0, 0.0] for t in ts], dim=2, name="q")
    np.testing.assert_allclose(query_vector(emb, "x"), [0.6, 0.8], rtol=1e-6)
    assert query_vector(emb, "") is None


def test_dense_leg_ranks_by_exact_cosine_with_filters_and_a_cached_matrix():
    rng = np.random.default_rng(5)
    n, dim = 400, 16
    table = rng.standard_normal((n, dim))
    kb = crux_nb.knowledge_base(id="dense-rank")
    kb.add_frame(pd.DataFrame({"id": [f"s{i:03d}" for i in range(n)], "text": [f"row {i}" for i in range(n)],
                               "half": ["odd" if i % 2 else "even" for i in range(n)]}), format="text")
    emb = FunctionEmbedder(lambda ts: [table[int(t.split()[1])] if t.startswith("row") else table[7] + 0.1
                                       for t in ts], dim=dim, name="table")
    matrix = chunk_matrix(kb.state, emb)
    assert matrix.flags.c_contiguous and matrix.dtype == np.float32 and not matrix.flags.writeable
    state = kb.state
    rows = [int(c.split()[1]) for c in state.chunks["content"]]
    query = table[7] + 0.1
    cos = (table[rows] @ query) / (np.linalg.norm(table[rows], axis=1) * np.linalg.norm(query))
    meta = state.chunks["metadata"].tolist()
    for filter in (None, {"half": "odd"}):
        keep = [i for i in range(n) if cos[i] > 0 and (filter is None or meta[i].get("half") == "odd")]
        expected = sorted(keep, key=lambda i: (-cos[i], i))[:10]
        hits = kb.recipe(steps=[retrieve(limit=10, legs=(DenseLeg(emb),))]).retrieve("q", filter=filter)
        assert [str(h.ref) for h in hits] == [state.chunks["ref"][i] for i in expected]
        np.testing.assert_allclose([h.score for h in hits], cos[expected], atol=1e-5)
    assert chunk_matrix(kb.state, emb) is matrix  # built once for the state


def test_single_thread_limit_is_restored_after_concurrent_products():
    threadpoolctl = pytest.importorskip("threadpoolctl", reason="threadpoolctl is a core dependency; absent here")
    from concurrent.futures import ThreadPoolExecutor

    before = [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"]
    rng = np.random.default_rng(0)
    matrix = rng.standard_normal((20_000, 32)).astype(np.float32)
    unit = np.ones(32, dtype=np.float32) / np.sqrt(32)
    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda _: cosine_scores(matrix, unit), range(16)))
    assert all(np.array_equal(r, results[0]) for r in results)
    assert [i["num_threads"] for i in threadpoolctl.threadpool_info() if i["user_api"] == "blas"] == before
