"""The conformance suite (crux_nb.testing.check_step / check_knowledge_model) over every built-in step and model,
and the suite catching steps and models that break the contract."""

from __future__ import annotations

import pytest

from crux_nb.models import CassetteModel, OfflineModel
from crux_nb.retrieval import custom_step, expand_relations, global_search, retrieve
from crux_nb.testing import assert_hits_equal, check_knowledge_model, check_step


def _keep(input, context):
    return list(input.hits)


BUILTIN_STEPS = {
    "retrieve": lambda: retrieve(limit=3),
    "retrieve-id": lambda: retrieve(limit=2, id="lexical"),
    "expand_relations": lambda: expand_relations(limit=4),
    "expand_relations-knobs": lambda: expand_relations(depth=2, entity_hops="counted", fan_out=8, max_candidates=20,
                                                       id="wide"),
    "global_search": lambda: global_search(model=OfflineModel(), limit=5),
    "global_search-adaptive": lambda: global_search(model=OfflineModel(), scan="adaptive", threshold=40, max_calls=8),
    "custom_step": lambda: custom_step(_keep, id="keep"),
}


@pytest.mark.parametrize("name", sorted(BUILTIN_STEPS))
def test_every_builtin_step_conforms(name):
    check_step(BUILTIN_STEPS[name]())


@pytest.mark.parametrize("make", [lambda tmp: OfflineModel(), lambda tmp: OfflineModel(max_findings=2),
                                  lambda tmp: CassetteModel(path=tmp / "cassette.jsonl", inner=OfflineModel(),
                                                            mode="auto")], ids=["offline", "offline-2", "cassette"])
def test_every_builtin_model_conforms(make, tmp_path):
    check_knowledge_model(make(tmp_path))


def test_a_nondeterministic_step_fails_the_suite():
    seen = []

    def flaky(input, context):
        seen.append(1)
        return list(input.hits)[: len(seen) % 2 + 1]

    with pytest.raises(AssertionError, match="differ"):
        check_step(custom_step(flaky, id="flaky"))


def test_a_mutable_step_fails_the_suite():
    class Loose:
        id, kind, phase, needs_model, builtin, factory = "loose", "custom", ("hits", "hits"), False, False, "loose"
        model = None

        def config(self):
            return {}

        def __repr__(self):
            return "loose()"

        def to_dict(self):
            return {"id": self.id, "kind": self.kind, "phase": list(self.phase), "needs_model": False, "config": {}}

    with pytest.raises(AssertionError, match="immutable"):
        check_step(Loose())


def test_a_model_with_a_bad_output_fails_the_suite():
    class Broken(OfflineModel):
        def rate(self, query, reports, *, repair=None):
            return {"ratings": [{"community_id": "nope", "rating": 500}]}

    with pytest.raises(AssertionError, match="rate"):
        check_knowledge_model(Broken())


def test_assert_hits_equal_tells_hits_apart():
    import crux_nb

    kb = crux_nb.knowledge_base(id="docs")
    kb.add_text("a.md", "Alpha beta.")
    kb.add_text("b.md", "Alpha gamma.")
    hits = kb.recipe().retrieve("alpha")
    assert_hits_equal(hits, list(hits))
    with pytest.raises(AssertionError):
        assert_hits_equal(hits, list(reversed(hits)))
