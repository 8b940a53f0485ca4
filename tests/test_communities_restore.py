"""The communities configuration is saved with the knowledge base and restored by ``crux_nb.open`` (issue 15)."""

import json

import pytest

import crux_nb
from crux_nb.errors import CruxError
from crux_nb.models import OfflineModel

from test_communities import TEXTS


class KeyedModel:
    """A model like a ChatModel: it works, but nothing in the saved folder can rebuild it."""

    def __init__(self):
        self.inner = OfflineModel()
        self.name, self.fingerprint = "remote-llm", "fp-remote"

    def __getattr__(self, name):
        return getattr(self.inner, name)


def _kb(model, **options):
    kb = crux_nb.knowledge_base(id="r", communities=crux_nb.communities(model=model, **options))
    for source, text in TEXTS.items():
        kb.add_text(source, text, metadata={"team": source.split("-")[1]})
    return kb


def test_open_restores_the_offline_configuration_and_ready_communities(tmp_path):
    model = OfflineModel(max_findings=3)
    kb = _kb(model, resolution=0.5, seed=7, id="teams")
    kb.communities.prepare(progress=False)
    kb.save(tmp_path / "kb")
    saved = json.loads((tmp_path / "kb" / "generations" / "g000001" / "manifest.json").read_text())["communities"]
    assert saved["resolution"] == 0.5 and saved["seed"] == 7 and saved["model"]["fingerprint"] == model.fingerprint
    back = crux_nb.open(tmp_path / "kb")
    assert back.communities.status() == "ready"
    assert back.communities.config.strategy_fingerprint == kb.communities.config.strategy_fingerprint
    assert back.communities.config.id == "teams" and back.communities.config.model.max_findings == 3
    assert len(back.communities.reports().reports) == len(kb.communities.reports().reports)


def test_a_model_that_cannot_be_restored_must_be_given_again(tmp_path):
    kb = _kb(KeyedModel())
    kb.communities.prepare(progress=False)
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb")
    assert back.communities.status() == "model_required"
    assert "model_required" in repr(back.communities) and "remote-llm" in repr(back.communities)
    with pytest.raises(CruxError) as info:
        back.communities.reports()
    err = info.value
    assert err.code == "communities_model_required"
    assert "'remote-llm'" in err.message and "must be given again" in err.message and "key" in err.message
    assert "crux_nb.open(path)" in err.hint and "communities=" in err.hint
    # retrieval (also through a view) still works; the view's communities say the same
    assert len(back.recipe().retrieve("Priya Raman")) > 0
    view = back.view(id="t0", where={"team": "0"})
    assert len(view.recipe().retrieve("Priya Raman")) > 0 and view.communities.status() == "model_required"
    # saving it keeps the record, and passing the model again makes the communities ready
    back.save(tmp_path / "kb")
    again = crux_nb.open(tmp_path / "kb", communities=crux_nb.communities(model=KeyedModel()))
    assert again.communities.status() == "ready"
    assert crux_nb.open(tmp_path / "kb").communities.status() == "model_required"


def test_a_knowledge_base_without_communities_still_says_communities_missing(tmp_path):
    kb = crux_nb.knowledge_base(id="n")
    kb.add_text("a.md", "# A\n\nText.")
    kb.save(tmp_path / "kb")
    with pytest.raises(CruxError) as info:
        crux_nb.open(tmp_path / "kb").communities
    assert info.value.code == "communities_missing"
