"""``expand_relations`` under a request filter or a view: a hidden candidate is skipped before its route,
reason and hit are built, and what is added is the unfiltered ranking's admitted hits, unchanged."""

from __future__ import annotations

import pandas as pd
import pytest

from crux_nb.graph.traversal import Traversal
from crux_nb.hits import hit_key
from crux_nb.retrieval import custom_step, expand_relations
from crux_nb.retrieval.types import KnowledgeBinding
from crux_nb.testing import make_kb

PUBLIC, PRIVATE = {"access": "public"}, {"access": "private"}


def access_kb():
    """The seed shares entities with chunks of a public and a private source, some chunks marked otherwise."""
    chunks = [("pub", "seed", 0, "seed text"), ("pub", "p1", 1, "p1 text"), ("pub", "p2", 2, "p2 text", None, PRIVATE),
              ("pub", "p3", 3, "p3 text")]
    chunks += [("priv", f"q{i}", i, f"q{i} text") for i in range(1, 6)]
    kb = make_kb(chunks=chunks, metadata={"pub": PUBLIC, "priv": {**PRIVATE, "team": "x"}})
    pairs = ([("pub", "seed", e) for e in ("hub", "gem", "odd")] + [("priv", f"q{i}", "hub") for i in range(1, 6)]
             + [("pub", "p1", "hub"), ("priv", "q1", "gem"), ("priv", "q2", "gem"), ("pub", "p2", "gem"),
                ("pub", "p3", "odd"), ("priv", "q3", "odd")])
    kb.add_edges(pd.DataFrame([{"from_ref": f"chunk:{s}:{c}", "to_ref": f"entity:{e}", "type": "mentions",
                                "evidence": [f"chunk:{s}:{c}"]} for s, c, e in pairs]))
    return kb


def seed_step():
    return custom_step(lambda inp, ctx: [ctx.knowledge.reader.hydrate("chunk:pub:seed")], id="seed-hits",
                       phase=("queries", "hits"))


def expansions(recipe, **request):
    hits, trace = recipe.retrieve_with_trace("q", **request)
    return hits[1:], trace.steps[1].details["expansions"]


@pytest.mark.parametrize("members", [None, frozenset({"pub"}), frozenset()])
@pytest.mark.parametrize("filter", [None, PUBLIC, PRIVATE, {"team": "x"}, {"source_id": "priv"}, {"namespace": "no"}])
def test_row_key_is_the_key_of_the_hit_hydrate_row_admits(filter, members):
    kb = access_kb()
    binding = KnowledgeBinding(kb.reader, kb.namespace, filter, members)
    for row in range(len(kb.chunks)):
        hit = binding.hydrate_row(row)
        assert binding.row_key(row) == (None if hit is None else hit_key(hit))
        assert (hit is None) == (binding.hydrate(kb.chunks["ref"][row]) is None)


@pytest.mark.parametrize("ranking", ["relevance", "upstream"])
@pytest.mark.parametrize("where", ["filter", "view"])
def test_a_filter_or_view_adds_the_admitted_part_of_the_unfiltered_ranking(ranking, where, monkeypatch):
    kb = access_kb()
    step = expand_relations(types=["mentions"], limit=3, ranking=ranking)
    everything, every_record = expansions(kb.recipe(steps=[seed_step(), expand_relations(
        types=["mentions"], limit=20, ranking=ranking)]))
    if where == "filter":
        recipe, request, admitted = kb.recipe(steps=[seed_step(), step]), {"filter": PUBLIC}, {"p1", "p3"}
    else:
        recipe, request, admitted = kb.view(id="pub", where=PUBLIC).recipe(steps=[seed_step(), step]), {}, {
            "p1", "p2", "p3"}
    routes = []
    original = Traversal.path
    monkeypatch.setattr(Traversal, "path", lambda self, i: routes.append(i) or original(self, i))
    hits, records = expansions(recipe, **request)
    want = [(h, r) for h, r in zip(everything, every_record) if h.chunk_id in admitted][:3]
    assert len(want) >= 2 and len(want) < len(everything)  # some candidates ranked above them are hidden
    assert [h.chunk_id for h in hits] == [h.chunk_id for h, _ in want]
    assert hits == [h for h, _ in want]  # the same scores and provenance as unfiltered
    assert list(records) == [r for _, r in want]  # positions still count every candidate ranked above
    assert len(routes) == len(hits)  # a hidden candidate never had its route read
