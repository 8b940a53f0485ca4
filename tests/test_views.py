import pytest

import crux_nb
from crux_nb.errors import CruxError, ParameterError
from crux_nb.models import OfflineModel
from crux_nb.retrieval import global_search, retrieve
from crux_nb.views import ViewWhereError


@pytest.fixture
def kb():
    kb = crux_nb.knowledge_base(id="v", communities=crux_nb.communities(model=OfflineModel()))
    docs = [("plan.md", "product", "public", 2, "The launch plan moved the Beacon launch to May."),
            ("ops.md", "platform", "internal", 1, "The Ingest Gateway on-call rotation changed."),
            ("notes.md", "product", "internal", 3, "Release planning notes about the launch plan."),
            ("sec.md", "security", "restricted", 1, "Keystone Auth review before the launch.")]
    for sid, team, access, rev, text in docs:
        kb.add_text(sid, f"# {sid}\n\n{text}", metadata={"team": team, "access": access, "rev": rev,
                                                          "tags": ["a", "b"], "flag": rev > 1})
    return kb


@pytest.mark.parametrize("where,code", [
    ("team", "invalid_shape"), ({"any": [{"team": "x"}], "team": "y"}, "invalid_shape"), ({"any": ["team"]}, "invalid_shape"),
    ({"any": []}, "empty_any"), ({}, "empty_clause"), ({"any": [{}]}, "empty_clause"), ({"owner": "x"}, "unknown_field"),
    ({"tags": "a"}, "non_scalar_field"), ({"team": {"x": 1}}, "non_scalar_value"), ({"team": [["x"]]}, "non_scalar_value"),
    ({"team": 3}, "invalid_value"), ({"rev": "2"}, "invalid_value"), ({"flag": 1}, "invalid_value"),
])
def test_where_validation_codes(kb, where, code):
    with pytest.raises(ViewWhereError) as info:
        kb.view(id="x", where=where)
    assert info.value.code == code


def test_normalisation_membership_and_conflicts(kb):
    v = kb.view(id="prod", where={"team": ["product", "product"], "access": ["public", "internal"]})
    assert v.where == {"access": ["internal", "public"], "team": ["product"]}
    assert v.members() == {"plan.md", "notes.md"}
    anyv = kb.view(id="any", where={"any": [{"team": "security"}, {"rev": [2, 3]}, {"rev": [3, 2]}]})
    assert len(anyv.where["any"]) == 2 and anyv.members() == {"plan.md", "notes.md", "sec.md"}
    assert kb.view(id="prod", where={"access": ["public", "internal"], "team": "product"}).where == v.where
    with pytest.raises(CruxError, match="different predicate") as info:
        kb.view(id="prod", where={"team": "platform"})
    assert info.value.code == "view_conflict"
    with pytest.raises(ParameterError):
        kb.view(id="", where={"team": "product"})


def test_revisions_are_content_addressed_and_pinning_replays(kb):
    v = kb.view(id="prod", where={"team": "product"})
    first = v.resolve()
    assert first.revision == v.resolve().revision and first.members == ("notes.md", "plan.md")
    kb.add_text("ops.md", "# ops\n\nChanged text.", metadata={"team": "platform", "access": "internal", "rev": 1,
                                                                 "tags": [], "flag": False})
    assert v.resolve().revision == first.revision  # a non-member changed: same revision
    pinned = v.at(first.revision)
    assert pinned.resolve() == first
    kb.add_text("notes.md", "# notes\n\nRewritten.", metadata={"team": "product", "access": "internal", "rev": 4,
                                                                "tags": [], "flag": True})
    assert v.resolve().revision != first.revision
    with pytest.raises(CruxError, match='revision ".*" is not exactly replayable; source "notes.md"') as info:
        pinned.resolve()
    assert info.value.code == "revision_not_replayable"
    with pytest.raises(CruxError, match="no revision"):
        v.at("vr-nope").resolve()


def test_view_recipes_see_only_members(kb):
    v = kb.view(id="prod", where={"team": "product"})
    hits = v.recipe(steps=[retrieve(limit=10)]).retrieve("launch")
    assert {h.source.id for h in hits} == {"plan.md", "notes.md"}
    assert {h.source.id for h in kb.recipe(steps=[retrieve(limit=10)]).retrieve("launch")} == {"plan.md", "notes.md", "sec.md"}


def test_view_communities_and_global_search_freshness(kb):
    m = OfflineModel()
    v = kb.view(id="prod", where={"team": "product"})
    recipe = v.recipe(steps=[global_search(model=m, detail="detailed")])
    k = recipe.retrieve_with_trace("launch plan").trace.steps[0].knowledge
    revision = v.resolve().revision
    assert k.coverage == "raw-fallback" and k.view == {"id": "prod", "view_revision": revision}
    v.communities.prepare(progress=False)
    assert v.communities.status() == "ready" and kb.communities.status() == "missing"
    result = recipe.retrieve_with_trace("launch plan")
    k = result.trace.steps[0].knowledge
    assert k.coverage == "exact" and {str(s).split(":")[1] for h in result.hits for s in h.citation.supports} <= {
        "plan.md", "notes.md"}
    built = v.communities.generation_id
    kb.add_text("late.md", "# late\n\nThe launch plan gained a rollback step.",
                metadata={"team": "product", "access": "public", "rev": 5, "tags": [], "flag": True})
    assert v.communities.status() == "missing"  # a new revision is its own materialisation
    k = recipe.retrieve_with_trace("launch plan").trace.steps[0].knowledge
    assert k.coverage == "compensated" and k.generations == tuple(sorted((built, "compensated-addition")))
    assert k.view["view_revision"] == v.resolve().revision != revision


def test_empty_view_communities(kb):
    kb.add_text("z.md", "# z\n\nnothing", metadata={"team": "nobody", "access": "public", "rev": 1, "tags": [],
                                                     "flag": False})
    v = kb.view(id="none", where={"team": "nobody"})
    kb.remove("z.md")
    assert v.members() == set()
    v.communities.prepare(progress=False)
    assert v.communities.status() == "ready" and v.communities.reports().reports == ()


def test_view_expansion_adds_only_member_chunks(kb):
    """expand_relations in a view hydrates by chunk row and keeps the view's member check: a related chunk of
    another team is reached through the graph but not added."""
    import pandas as pd

    from crux_nb.retrieval import expand_relations

    refs = dict(zip(kb.chunks["source_id"], kb.chunks["ref"]))
    kb.add_edges(pd.DataFrame([{"from_ref": refs["plan.md"], "to_ref": refs[other], "type": "related",
                                "evidence": [refs["plan.md"]]} for other in ("ops.md", "notes.md")]))
    steps = [retrieve(limit=1), expand_relations(types=["related"], seeds=["hits"])]
    everywhere = kb.recipe(steps=steps).retrieve("Beacon")
    assert [h.source.id for h in everywhere] == ["plan.md", "notes.md", "ops.md"]  # equal scores: ref order
    in_view = kb.view(id="prod", where={"team": "product"}).recipe(steps=steps).retrieve("Beacon")
    assert [h.source.id for h in in_view] == ["plan.md", "notes.md"]
    assert in_view[1].provenance.graph.path == (refs["plan.md"], refs["notes.md"])
