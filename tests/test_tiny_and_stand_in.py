"""datasets.load_tiny / load_tiny_questions (the examples' knowledge base) and testing.stand_in_chat."""

import pytest

import crux_nb
from crux_nb.datasets import load_tiny, load_tiny_questions
from crux_nb.datasets.tiny import TINY_TEAMS, TINY_TEXTS
from crux_nb.errors import ValidationExhaustedError
from crux_nb.models import ChatModel
from crux_nb.testing import stand_in_chat


def test_load_tiny_holds_the_texts_with_their_team():
    kb = load_tiny(id="t")
    chunks = kb.chunks.sort_values("source_id")
    assert kb.id == "t" and kb.summary()["entities"] == 0 and not kb.has_communities
    assert dict(zip(chunks["source_id"], chunks["content"])) == TINY_TEXTS
    platform = kb.view(id="p", where={"team": "platform"})
    assert sorted({h.source.id for h in platform.recipe().retrieve("Priya Raman Platform Atlas Beacon")}) == ["ops.md", "team.md"]


def test_load_tiny_entities_and_communities():
    entities = load_tiny(entities=True)
    assert {"Beacon", "Priya Raman", "Atlas"} <= set(entities.entities["canonical_name"])
    assert not entities.has_communities
    kb = load_tiny(communities=True)
    assert kb.has_communities and kb.communities.status() == "ready"
    assert len(kb.communities.reports()) >= 2
    assert set(kb.entities["canonical_name"]) == set(entities.entities["canonical_name"])  # communities imply entities


def test_tiny_questions_gold_are_sources_of_the_tiny_kb():
    questions = load_tiny_questions()
    assert list(questions.columns) == ["question", "gold"] and str(questions["question"].dtype) == "str"
    assert {g for gold in questions["gold"] for g in gold} <= set(TINY_TEXTS)
    summary = crux_nb.evaluate({"top1": load_tiny().recipe(steps=[crux_nb.retrieve(limit=1)])}, questions).summary()
    assert summary.loc["top1", "recall@5"] < 1.0  # the two-source question needs more than one hit


def test_stand_in_chat_replays_in_order_and_records_requests():
    with stand_in_chat({"a": 1}, "not json") as server:
        model = ChatModel(base_url=server.base_url, model="toy", max_retries=0)
        assert model.generate_object(messages=[{"role": "user", "content": "one"}]) == {"a": 1}
        with pytest.raises(ValidationExhaustedError):
            model.generate_object(messages=[{"role": "user", "content": "two"}])
        with pytest.raises(crux_nb.errors.ModelError):  # nothing left to answer: HTTP 500
            model.generate_object(messages=[{"role": "user", "content": "three"}])
    assert [r["messages"][0]["content"] for r in server.requests] == ["one", "two", "three"]
