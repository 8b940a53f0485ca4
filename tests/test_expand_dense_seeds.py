"""expand_relations(dense_entities=k): entities whose names' vectors are nearest the query's seed after the named
ones, only when the run's retrieve step has a dense leg."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from crux_nb.embeddings import FunctionEmbedder, entity_matrix
from crux_nb.errors import ParameterError
from crux_nb.retrieval import BM25Leg, DenseLeg, retrieve
from crux_nb.retrieval.expand.step import expand_relations
from crux_nb.testing import make_kb

# a toy embedder: one axis per topic word, so "nearest" is known exactly
AXES = ("river", "engine", "poem", "ledger")


def _vector(text: str) -> list[float]:
    words = text.lower().replace("?", " ").split()
    return [float(sum(w.startswith(a[:4]) for w in words)) for a in AXES] + [0.01]


EMB = FunctionEmbedder(lambda ts: [_vector(t) for t in ts], dim=len(AXES) + 1, name="axes")


def _kb():
    kb = make_kb(chunks=[("s", c, i, text) for i, (c, text) in enumerate(
        [("a", "the river boat"), ("b", "a steam engine"), ("c", "an old poem"), ("d", "the ledger book")])])
    kb.add_edges(pd.DataFrame([
        {"from_ref": f"chunk:s:{c}", "to_ref": f"entity:{e}", "type": "mentions", "evidence": [f"chunk:s:{c}"]}
        for c, e in (("a", "thames"), ("b", "watt"), ("c", "keats"), ("d", "pacioli"))]))
    kb.add_entities(pd.DataFrame({"entity_id": ["thames", "watt", "keats", "pacioli"],
                                  "canonical_name": ["River Thames", "Engineer Watt", "Poems of Keats", "Ledger Pacioli"]}))
    return kb


def _seeds(kb, legs, **kwargs):
    step = expand_relations(types=["mentions"], seeds=["query"], limit=3, **kwargs)
    _, trace = kb.recipe(steps=[retrieve(limit=1, legs=legs), step]).retrieve_with_trace("engines and poems?")
    return trace.steps[1].details["seeds"]


def test_nearest_entities_seed_after_the_named_ones_only_with_a_dense_leg():
    kb = _kb()
    hybrid = (BM25Leg(), DenseLeg(EMB))
    assert _seeds(kb, hybrid) == ()  # the default: names only, and no entity is named in the query
    assert _seeds(kb, (BM25Leg(),), dense_entities=2) == ()  # no dense leg in the run: nothing to compare with
    two = _seeds(kb, hybrid, dense_entities=2)
    assert two == ("entity:keats", "entity:watt")  # poem and engine: equal cosine, ties in entity (id) order
    assert _seeds(kb, hybrid, dense_entities=1) == ("entity:keats",)
    assert set(_seeds(kb, hybrid, dense_entities=10)) == {"entity:watt", "entity:keats", "entity:thames",
                                                          "entity:pacioli"}  # all with a positive cosine


def test_named_entities_come_first_and_are_not_repeated():
    kb = _kb()
    step = expand_relations(types=["mentions"], seeds=["query"], limit=3, dense_entities=2)
    _, trace = kb.recipe(steps=[retrieve(limit=1, legs=(BM25Leg(), DenseLeg(EMB))), step]).retrieve_with_trace(
        "Poems of Keats and the engine")
    assert trace.steps[1].details["seeds"][:2] == ("entity:keats", "entity:watt")
    assert len(set(trace.steps[1].details["seeds"])) == len(trace.steps[1].details["seeds"])


def test_entity_matrix_is_normalised_and_cached():
    kb = _kb()
    matrix = entity_matrix(kb.state, EMB)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-6)
    assert entity_matrix(kb.state, EMB) is matrix


def test_parameter_is_checked_and_shown_when_changed():
    with pytest.raises(ParameterError):
        expand_relations(dense_entities=-1)
    assert "dense_entities=3" in repr(expand_relations(dense_entities=3))
    assert "dense_entities" not in repr(expand_relations())
