"""Exact top-k ranking and reciprocal-rank fusion without whole sorts: equal to the naive computation."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

import crux_nb
from crux_nb.embeddings import FunctionEmbedder
from crux_nb.retrieval import BM25Leg, DenseLeg, retrieve
from crux_nb.retrieval.retriever.lexical import fusion_depth, ranked, ranks_of, rrf, top_order


def naive_ranked(scores, mask):
    rows = [r for r in range(len(scores)) if scores[r] > 0 and mask[r]]
    return sorted(rows, key=lambda r: (-scores[r], r))


@pytest.mark.parametrize("seed", range(6))
def test_top_order_ranked_and_ranks_of_match_a_full_sort(seed):
    rng = np.random.default_rng(seed)
    scores = np.round(rng.uniform(-0.5, 1, 300), 1 if seed % 2 else 6)  # coarse rounding: many ties
    mask = rng.uniform(size=300) > 0.2
    full = naive_ranked(scores, mask)
    for top in (1, 5, 17, 299, None):
        assert ranked(scores, mask, top=top).tolist() == (full if top is None else full[:top])
    rows = np.arange(300)
    expected = [full.index(r) + 1 if r in full else 0 for r in rows]
    assert ranks_of(scores, (scores > 0) & mask, rows).tolist() == expected


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("order", ["sorted", "shuffled"])
def test_top_order_takes_the_lowest_tied_rows_whatever_the_row_order(seed, order):
    rng = np.random.default_rng(seed)
    values = np.round(rng.uniform(0, 1, 200), 1)  # ~10 distinct values: the cut-off value always ties
    rows = rng.choice(1000, size=200, replace=False)
    rows = np.sort(rows) if order == "sorted" else rows
    full = rows[np.lexsort((rows, -values))]
    for top in (1, 3, 10, 57, 199):
        assert top_order(values, rows, top).tolist() == full[:top].tolist()


@pytest.mark.parametrize("seed", range(4))
def test_fused_step_equals_rrf_over_whole_rankings(seed):
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(40)]
    kb = crux_nb.knowledge_base(id="fuse")
    kb.add_frame(pd.DataFrame({"id": [f"d{i:03d}" for i in range(150)],
                               "text": [" ".join(rng.choice(words, 8)) for _ in range(150)]}), format="text")
    table = {w: rng.standard_normal(8) for w in words}
    emb = FunctionEmbedder(lambda ts: [sum(table[w] for w in t.split() if w in table) + 1e-3 for t in ts], dim=8,
                           name="bag")
    for weight in (1.0, 0.5, 2.0):
        legs = (BM25Leg(), DenseLeg(emb, weight=weight))
        hits = kb.recipe(steps=[retrieve(limit=7, legs=legs)]).retrieve("w1 w2 w3")
        state = kb.state
        mask = np.ones(len(state.chunks), dtype=bool)
        rankings = [(np.array(naive_ranked(leg.scores(state, "w1 w2 w3"), mask)), w)
                    for leg, w in zip(legs, (1.0, weight))]
        rows, fused = rrf(rankings)
        expected = [state.chunks["ref"][r] for r in rows[:7].tolist()]
        assert [str(h.ref) for h in hits] == expected
        np.testing.assert_allclose([h.score for h in hits], fused[:7])


def test_fusion_depth_bound():
    assert fusion_depth([1.0, 1.0], 10) == 81
    assert fusion_depth([1.0], 10) >= 10
    rows, _ = rrf([(np.array([3, 1, 2]), 1.0)], top=2)
    assert rows.tolist() == [3, 1]
    assert top_order(np.array([1.0, 1.0, 2.0]), np.array([5, 3, 9]), 2).tolist() == [9, 3]
