"""A conflict while ``communities.prepare()`` publishes (issue 15): another handle saved during the build."""

import pytest

import crux_nb
from crux_nb.errors import ConflictError
from crux_nb.models import OfflineModel
from crux_nb.store.persist import current_generation

from test_communities import TEXTS


class SavesMidBuild:
    """The offline model; its first report call lets another handle add a document and save."""

    def __init__(self, path):
        self.inner, self.path, self.done = OfflineModel(), path, False
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def write_report(self, community, *, repair=None):
        if not self.done:
            self.done = True
            other = crux_nb.open(self.path)
            other.add_text("from_other.md", "# Other\n\nSaved while communities were being built.")
            other.save(self.path)
        return self.inner.write_report(community, repair=repair)


def test_a_conflict_while_prepare_publishes_keeps_the_folder_and_the_build(tmp_path):
    path = tmp_path / "kb"
    kb = crux_nb.knowledge_base(id="cc")
    for source, text in TEXTS.items():
        kb.add_text(source, text)
    kb.save(path)
    model = SavesMidBuild(path)
    a = crux_nb.open(path, communities=crux_nb.communities(model=model))
    with pytest.raises(ConflictError) as info:
        a.communities.prepare(progress=False)
    assert info.value.code == "save_conflict" and "merge=True" in info.value.hint
    # the folder holds the other handle's save, no communities, and no lease is left behind
    assert current_generation(path) == "g000002"
    saved = crux_nb.open(path)
    assert "from_other.md" in set(saved.documents["source_id"]) and saved.state.communities.empty
    assert not (path / "communities.lease").exists() and not (path / "lease").exists()
    # the build is kept in memory (ready for what this handle holds) and can be merged onto the newer generation
    assert a.communities.status() == "ready" and "from_other.md" not in set(a.documents["source_id"])
    a.save(path, merge=True)
    merged = crux_nb.open(path, communities=crux_nb.communities(model=OfflineModel()))
    assert "from_other.md" in set(merged.documents["source_id"])
    assert merged.communities.generation_id == a.communities.generation_id
    assert merged.communities.status() == "stale"  # built before the other document arrived
    result = merged.communities.prepare(progress=False)
    assert result.status == "ready" and result.reports_reused > 0
