import dataclasses

import numpy as np
import pytest

import crux_nb
from crux_nb.errors import InputError, ParameterError, RetrievalConfigError, RetrievalRunError
from crux_nb.retrieval import (BM25Leg, EvidenceHit, FindingCitation, FindingHit, HitList, Lineage, StepOutput,
                               custom_step, retrieve)
from crux_nb.testing import make_kb


@pytest.fixture
def docs():
    kb = crux_nb.knowledge_base(id="docs")
    kb.add_text("plan.md", "# Release planning\n\nRelease planning for the spring launch.", metadata={"team": "product", "access": "public"})
    kb.add_text("ops.md", "# Operations\n\nOn-call rotation and incident review.", metadata={"team": "platform", "access": "internal"})
    kb.add_text("mix.md", "# Notes\n\nThe launch moved. Planning continues.", metadata={"team": "product", "access": "internal", "n": 1})
    return kb


def refs(hits):
    return [str(h.ref) for h in hits]


def test_bm25_ranks_and_fills_provenance(docs):
    hits = docs.recipe(steps=[retrieve(limit=5)]).retrieve("release planning")
    assert refs(hits) == ["chunk:plan.md:c0000", "chunk:mix.md:c0000"]  # ops.md has no matching term
    assert hits[0].score > hits[1].score > 0
    assert hits[0].provenance.raw_score == hits[0].score
    assert hits[0].provenance.matched_queries == ("release planning",)
    assert hits[1].provenance.ranks == {"bm25": 2}
    assert hits[0].parent.title == "Release planning" and hits[0].metadata["team"] == "product"


def test_limit_and_no_match(docs):
    assert len(docs.recipe(steps=[retrieve(limit=1)]).retrieve("release planning")) == 1
    assert docs.recipe().retrieve("zebra") == []
    assert len(docs.recipe().retrieve("planning", limit=1)) == 1


def test_request_filters_exact_scalar_match(docs):
    recipe = docs.recipe()
    assert refs(recipe.retrieve("launch planning", filter={"team": "product", "access": "internal"})) == ["chunk:mix.md:c0000"]
    assert refs(recipe.retrieve("launch planning", filter={"source_id": "plan.md"})) == ["chunk:plan.md:c0000"]
    assert recipe.retrieve("launch planning", filter={"namespace": "other"}) == []
    assert recipe.retrieve("launch", filter={"n": True}) == []  # booleans never equal numbers
    assert refs(recipe.retrieve("launch", filter={"n": 1.0})) == ["chunk:mix.md:c0000"]
    with pytest.raises(ParameterError, match=r"filter\['team'\]"):
        recipe.retrieve("launch", filter={"team": ["a", "b"]})
    with pytest.raises(ParameterError, match="parameter 'filter'"):
        recipe.retrieve("launch", filter="team=a")


def test_empty_queries_are_rejected(docs):
    for bad in ("", "   ", None, 3):
        with pytest.raises(InputError, match="must be non-empty"):
            docs.recipe().retrieve(bad)


def test_ties_are_broken_by_chunk_order():
    kb = make_kb(chunks=[("b", "c", 0, "same words"), ("a", "z", 1, "same words"), ("a", "y", 2, "same words")])
    assert refs(kb.recipe().retrieve("words")) == ["chunk:a:z", "chunk:a:y", "chunk:b:c"]


@dataclasses.dataclass(frozen=True)
class FixedLeg:
    id: str
    order: tuple

    def scores(self, state, query):
        scores = np.zeros(len(state.chunks))
        for rank, row in enumerate(self.order):
            scores[row] = 10.0 - rank
        return scores


def test_second_leg_is_fused_by_rrf():
    kb = make_kb(chunks=[("s", "a", 0, "alpha"), ("s", "b", 1, "beta"), ("s", "c", 2, "gamma")])
    step = retrieve(limit=3, legs=(FixedLeg("one", (0, 1)), FixedLeg("two", (1, 2))))
    hits = kb.recipe(steps=[step]).retrieve("q")
    assert refs(hits) == ["chunk:s:b", "chunk:s:a", "chunk:s:c"]
    assert hits[0].score == pytest.approx(1 / 62 + 1 / 61)
    assert hits[0].provenance.fused_score == hits[0].score and hits[0].provenance.ranks == {"one": 2, "two": 1}
    assert repr(step) == "retrieve(limit=3, legs=['one', 'two'])"


@pytest.mark.parametrize("limit", [0, -1, 2.5, "3", None, True, float("nan")])
def test_retrieve_rejects_bad_limit(limit):
    with pytest.raises(ParameterError, match=r"retrieve\(\): parameter 'limit' must be an integer >= 1; got"):
        retrieve(limit=limit)


def test_retrieve_rejects_bad_legs():
    with pytest.raises(ParameterError, match="legs"):
        retrieve(legs=("bm25",))
    with pytest.raises(ParameterError, match="distinct"):
        retrieve(legs=(BM25Leg(), BM25Leg()))


def test_steps_are_data():
    step = retrieve(limit=4)
    assert repr(step) == "retrieve(limit=4)"
    assert step.to_dict() == {"id": "retrieve", "kind": "retrieve", "phase": ["queries", "hits"],
                              "needs_model": False, "config": {"limit": 4}}
    assert step == retrieve(limit=4) and step != retrieve(limit=5)
    with pytest.raises(dataclasses.FrozenInstanceError):
        step.limit = 3
    assert "<" not in repr(step) and "kind: retrieve" in step._repr_html_()


def passthrough(inp, ctx):
    return list(inp.hits)


def test_recipe_construction_errors(docs):
    hits_step = custom_step(passthrough, id="mine")
    cases = [
        (dict(steps=[hits_step]), "invalid_step_order", 'Retrieval step "mine" expects hits input but receives queries.'),
        (dict(steps=[retrieve(), retrieve()]), "invalid_step_order",
         'Retrieval recipe has more than one producer step: "retrieve" and "retrieve". Use exactly one of retrieve() or global_search().'),
        (dict(steps=[retrieve()], id=""), "invalid_step_order", "Retrieval recipe id must be non-empty."),
        (dict(steps=[retrieve()], id="docs"), "recipe_id_conflict", 'Retrieval recipe id "docs" conflicts'),
        (dict(steps=[retrieve(), custom_step(passthrough, id="fusion")]), "reserved_step_id", 'Retrieval step id "fusion" is reserved'),
        (dict(steps=[retrieve(), custom_step(passthrough, id="m", needs_model=True)]), "missing_model",
         'Retrieval step "m" requires a model.'),
    ]
    for kwargs, code, message in cases:
        with pytest.raises(RetrievalConfigError) as info:
            docs.recipe(**kwargs)
        assert info.value.code == code and info.value.message.startswith(message), info.value.message
    with pytest.raises(ParameterError, match="parameter 'steps'"):
        docs.recipe(steps=["retrieve"])
    docs.recipe(steps=[retrieve(), custom_step(passthrough, id="m", needs_model=True)], model=object())


def test_custom_steps_trace_and_warnings(docs):
    def reverse(inp, ctx):
        assert ctx.knowledge.namespace == "docs" and ctx.recipe_id == "r"
        return StepOutput(hits=tuple(reversed(inp.hits)), warnings=("reversed",), knowledge={"contributor": "x"})

    recipe = docs.recipe(steps=[retrieve(), custom_step(reverse, id="reverse")], id="r")
    hits, trace = recipe.retrieve_with_trace("launch planning")
    assert refs(hits) == ["chunk:plan.md:c0000", "chunk:mix.md:c0000"][::-1]
    assert [s.step_id for s in trace.steps] == ["retrieve", "reverse"]
    assert trace.steps[1].knowledge == {"contributor": "x"} and trace.warnings == ("reversed",)
    assert (trace.steps[0].input_queries, trace.steps[0].output_hits, trace.steps[1].input_hits) == (1, 2, 2)
    assert trace.result_count == 2 and trace.query == "launch planning"
    frame = trace.to_frame()
    assert frame["status"].tolist() == ["success", "success"] and frame["warnings"].tolist() == [0, 1]


def test_a_failing_step_raises_a_run_error_with_the_trace(docs):
    def broken(inp, ctx):
        raise ValueError("boom")

    recipe = docs.recipe(steps=[retrieve(), custom_step(broken, id="broken")])
    with pytest.raises(RetrievalRunError, match="boom") as info:
        recipe.retrieve("launch")
    err = info.value
    assert err.code == "step_failed" and isinstance(err.__cause__, ValueError)
    assert [(s.step_id, s.status) for s in err.trace.steps] == [("retrieve", "success"), ("broken", "error")]
    assert err.trace.steps[1].error == {"name": "ValueError", "message": "boom"}


def test_query_phase_recipe_returns_no_hits(docs):
    rewrite = custom_step(lambda inp, ctx: list(inp.queries), id="rewrite", phase=("queries", "queries"))
    assert docs.recipe(steps=[rewrite]).retrieve("x") == []


def test_hydrate_binding_applies_the_request_filter(docs):
    seen = {}

    def probe(inp, ctx):
        seen["public"] = ctx.knowledge.hydrate("chunk:plan.md:c0000")
        seen["internal"] = ctx.knowledge.hydrate("chunk:ops.md:c0000")
        return list(inp.hits)

    docs.recipe(steps=[retrieve(), custom_step(probe, id="probe")]).retrieve("launch", filter={"access": "public"})
    assert seen["public"] is not None and seen["internal"] is None


def test_reprs_are_short_deterministic_and_html_escapes(docs):
    docs.add_text("evil", "<script>alert(1)</script> launch <img src=x onerror=alert(2)>")
    recipe = docs.recipe(steps=[retrieve(limit=3)], id="r")
    result = recipe.retrieve_with_trace("launch")
    hits, trace = result
    assert repr(recipe) == "Recipe(id='r', steps=[retrieve(limit=3)])"
    assert repr(trace).startswith("RecipeTrace(recipe_id='r', query='launch', steps=[retrieve:success]")
    assert repr(hits) == repr(recipe.retrieve("launch"))
    for html in (hits._repr_html_(), trace._repr_html_(), docs._repr_html_(), recipe._repr_html_(), result._repr_html_()):
        assert "<script>alert" not in html and "<img src" not in html and "<script" not in html.replace("<style>", "")
    assert "&lt;script&gt;" in hits._repr_html_()
    assert "0x" not in repr(hits) + repr(trace) + repr(docs) + repr(result)


def test_hits_to_frame():
    finding = FindingHit(namespace="n", content="A finding.", score=0.5, citation=FindingCitation(
        finding_target="finding:abc", supports=(crux_nb.ChunkRef("s", "c"),), assertion_refs=(),
        lineage=Lineage(None, "g1", "comm")))
    kb = make_kb(chunks=[("s", "c", 0, "text here")])
    hits = kb.recipe().retrieve("text")
    mixed = HitList([*hits, finding])
    frame = mixed.to_frame()
    assert frame["kind"].tolist() == ["evidence", "finding"] and frame["rank"].tolist() == [1, 2]
    assert frame["ref"].tolist()[0] == "chunk:s:c" and frame["supports"].tolist()[1] == "chunk:s:c"
    assert frame["key"].tolist() == ["kb:s:c", "n:finding:finding:abc"]
    assert HitList().to_frame().empty
    assert isinstance(hits[0], EvidenceHit) and hits[0].ref == crux_nb.ChunkRef("s", "c")
