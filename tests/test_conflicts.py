"""Lost updates (issue 15): a save publishes only onto the generation it was read from; history, retention,
opening an earlier generation, merge and overwrite."""

import json
import os

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import ConflictError, NotFoundError, ParameterError, StorageError
from crux_nb.store.generations import history
from crux_nb.store.persist import current_generation
from crux_nb.testing import assert_kb_equal


def _sources(path) -> list[str]:
    return sorted(crux_nb.open(path).documents["source_id"])


@pytest.fixture
def saved(tmp_path):
    path = tmp_path / "kb"
    kb = crux_nb.knowledge_base(id="c")
    kb.add_text("base.md", "# Base\n\nThe base document about release planning.")
    kb.save(path)
    return path


def test_two_handles_the_second_save_conflicts_and_changes_nothing(saved):
    a, b = crux_nb.open(saved), crux_nb.open(saved)
    a.add_text("from_a.md", "# A\n\nAlpha.")
    assert a.save(saved) == "g000002"
    b.add_text("from_b.md", "# B\n\nBeta.")
    state, files = b.state, sorted(p.relative_to(saved).as_posix() for p in saved.rglob("*"))
    with pytest.raises(ConflictError) as info:
        b.save(saved)
    err = info.value
    assert err.code == "save_conflict" and err.current == "g000002" and err.base == "g000001"
    assert "overwrite=True" in err.hint and "merge=True" in err.hint and "crux_nb.open" in err.hint
    assert "Nothing was written" in str(err)
    # the folder and the handle are unchanged
    assert sorted(p.relative_to(saved).as_posix() for p in saved.rglob("*")) == files
    assert current_generation(saved) == "g000002" and _sources(saved) == ["base.md", "from_a.md"]
    assert b.state is state and b.base_generation == "g000001"


def test_reopen_and_reapply_keeps_both(saved):
    a, b = crux_nb.open(saved), crux_nb.open(saved)
    a.add_text("from_a.md", "# A\n\nAlpha.")
    a.save(saved)
    b = crux_nb.open(saved)
    b.add_text("from_b.md", "# B\n\nBeta.")
    b.save(saved)
    assert _sources(saved) == ["base.md", "from_a.md", "from_b.md"]


def test_overwrite_replaces_the_newer_generation_which_stays_in_history(saved):
    a, b = crux_nb.open(saved), crux_nb.open(saved)
    a.add_text("from_a.md", "# A\n\nAlpha.")
    a.save(saved)
    b.add_text("from_b.md", "# B\n\nBeta.")
    assert b.save(saved, overwrite=True) == "g000003"
    assert _sources(saved) == ["base.md", "from_b.md"]
    assert history(saved)["generation"].tolist() == ["g000002", "g000003"]
    assert sorted(crux_nb.open(saved, generation="g000002").documents["source_id"]) == ["base.md", "from_a.md"]


def test_merge_applies_source_changes_onto_the_newer_generation(saved):
    a, b = crux_nb.open(saved), crux_nb.open(saved)
    a.add_text("from_a.md", "# A\n\nAlpha.")
    a.save(saved)
    b.add_text("from_b.md", "# B\n\nBeta mentions entity X.")
    b.add_edges(pd.DataFrame([{"from_ref": "chunk:from_b.md:c0000", "to_ref": "entity:x", "type": "mentions",
                               "evidence": ["chunk:from_b.md:c0000"]}]))
    b.remove("base.md")
    assert b.save(saved, merge=True) == "g000003"
    back = crux_nb.open(saved)
    assert sorted(back.documents["source_id"]) == ["from_a.md", "from_b.md"]
    assert back.edges["to_ref"].tolist() == ["entity:x"] and back.entities["entity_id"].tolist() == ["x"]
    assert_kb_equal(b, back)  # the handle now holds the merged state, and is based on it
    assert b.base_generation == "g000003"
    b.add_text("more.md", "# More\n\nText.")
    b.save(saved)  # no conflict: the handle is current


def test_merge_refuses_a_source_changed_on_both_sides(saved):
    a, b = crux_nb.open(saved), crux_nb.open(saved)
    a.add_text("base.md", "# Base\n\nChanged by a.")
    a.save(saved)
    b.add_text("base.md", "# Base\n\nChanged by b.")
    with pytest.raises(ConflictError) as info:
        b.save(saved, merge=True)
    assert info.value.code == "merge_conflict" and "'base.md'" in str(info.value)
    assert current_generation(saved) == "g000002"
    # the same change on both sides merges
    c = crux_nb.open(saved, generation="g000001")
    c.add_text("base.md", "# Base\n\nChanged by a.")
    c.add_text("c.md", "# C\n\nGamma.")
    c.save(saved, merge=True)
    assert _sources(saved) == ["base.md", "c.md"]


def test_a_new_knowledge_base_does_not_silently_replace_a_saved_one(saved):
    other = crux_nb.knowledge_base(id="c")
    other.add_text("other.md", "# O\n\nOther.")
    with pytest.raises(ConflictError, match="not opened from it"):
        other.save(saved)
    with pytest.raises(ConflictError):
        other.save(saved, merge=True)  # no base to merge from
    other.save(saved, overwrite=True)
    assert _sources(saved) == ["other.md"]


def test_a_handle_from_another_folder_at_the_same_generation_number_conflicts(tmp_path, saved):
    elsewhere = tmp_path / "elsewhere"
    kb = crux_nb.knowledge_base(id="c")
    kb.add_text("else.md", "# E\n\nElse.")
    kb.save(elsewhere)
    assert current_generation(elsewhere) == current_generation(saved)
    with pytest.raises(ConflictError, match="another folder"):
        crux_nb.open(elsewhere).save(saved)


def test_a_byte_copy_of_the_folder_is_the_same_base(tmp_path, saved):
    import shutil

    copy = tmp_path / "copy"
    shutil.copytree(saved, copy)
    kb = crux_nb.open(saved)
    kb.add_text("x.md", "# X\n\nEx.")
    kb.save(copy)
    assert _sources(copy) == ["base.md", "x.md"]


def test_history_generation_and_retention(saved):
    kb = crux_nb.open(saved)
    for i in range(3):
        kb.add_text(f"d{i}.md", f"# D{i}\n\nText {i}.")
        kb.save(saved, keep=3 if i == 0 else None)  # the setting sticks to the folder
    frame = history(saved)
    assert frame["generation"].tolist() == ["g000002", "g000003", "g000004"]
    assert frame["current"].tolist() == [False, False, True] and frame["documents"].tolist() == [2, 3, 4]
    assert json.loads((saved / "CURRENT").read_text())["keep"] == 3
    old = crux_nb.open(saved, generation="g000002")
    assert sorted(old.documents["source_id"]) == ["base.md", "d0.md"] and old.base_generation == "g000002"
    with pytest.raises(ConflictError):
        old.save(saved)  # a rollback must be explicit
    old.save(saved, overwrite=True)
    assert _sources(saved) == ["base.md", "d0.md"]
    with pytest.raises(NotFoundError, match="not kept"):
        crux_nb.open(saved, generation="g000001")
    for bad in ("1", 2, "g1", "../g000002"):
        with pytest.raises(ParameterError, match="generation"):
            crux_nb.open(saved, generation=bad)
    with pytest.raises(ParameterError, match="keep"):
        kb.save(saved, keep=0)
    with pytest.raises(ParameterError, match="merge"):
        kb.save(saved, overwrite=True, merge=True)


def test_merge_needs_the_base_generation_kept(saved):
    stale = crux_nb.open(saved)
    kb = crux_nb.open(saved)
    for i in range(3):
        kb.add_text(f"d{i}.md", f"# D{i}\n\nText {i}.")
        kb.save(saved)
    stale.add_text("late.md", "# L\n\nLate.")
    with pytest.raises(ConflictError, match="no longer kept") as info:
        stale.save(saved, merge=True)
    assert info.value.code == "merge_conflict" and "keep=N" in info.value.hint


# ------------------------------------------------------------------ strict reader
@pytest.mark.parametrize("version", [99, 0, "2", None, True, 2.0])
def test_unknown_format_version_in_current_is_refused(saved, version):
    pointer = json.loads((saved / "CURRENT").read_text())
    pointer["format_version"] = version
    (saved / "CURRENT").write_text(json.dumps(pointer))
    with pytest.raises(StorageError, match=r"this crux_nb reads format versions 1, 2") as info:
        crux_nb.open(saved)
    assert info.value.code == "unsupported_format" and repr(version) in str(info.value)
    with pytest.raises(StorageError, match="format versions"):
        crux_nb.open(saved).save(saved)


def test_unknown_format_version_in_the_manifest_is_refused(saved):
    manifest = saved / "generations" / "g000001" / "manifest.json"
    data = json.loads(manifest.read_text())
    data["format_version"] = 99
    manifest.write_text(json.dumps(data))
    with pytest.raises(StorageError, match="format_version 99; this crux_nb reads"):
        crux_nb.open(saved, verify=False)


@pytest.mark.parametrize("what", ["part", "generation", "generations", "manifest", "table"])
def test_links_leaving_the_folder_are_refused_on_read(tmp_path, saved, what):
    import shutil

    gens = saved / "generations"
    gen = gens / "g000001"
    victim = {"part": gen / "documents" / "part-00000.parquet", "generation": gen, "generations": gens,
              "manifest": gen / "manifest.json", "table": gen / "chunks"}[what]
    target = tmp_path / f"outside-{what}"
    shutil.move(victim, target)  # the same bytes, so only the link itself is wrong
    os.symlink(target, victim)
    with pytest.raises(StorageError, match="link that leaves the knowledge-base folder") as info:
        crux_nb.open(saved)
    assert info.value.code == "link_outside"


def test_a_link_to_a_file_outside_is_never_read(tmp_path, saved):
    secret = tmp_path / "passwd"
    secret.write_text("root:x:0:0")
    part = saved / "generations" / "g000001" / "documents" / "part-00000.parquet"
    part.unlink()
    os.symlink(secret, part)
    with pytest.raises(StorageError, match="leaves the knowledge-base folder"):
        crux_nb.open(saved, verify=False)


def test_a_generations_link_leaving_the_folder_is_not_written_through(tmp_path, saved):
    import shutil

    elsewhere = tmp_path / "elsewhere"
    shutil.move(saved / "generations", elsewhere)
    os.symlink(elsewhere, saved / "generations")
    before = sorted(os.listdir(elsewhere))
    kb = crux_nb.knowledge_base(id="c")
    kb.add_text("x.md", "# X\n\nEx.")
    with pytest.raises(StorageError, match="leaves the knowledge-base folder"):
        kb.save(saved, overwrite=True)
    assert sorted(os.listdir(elsewhere)) == before
    fresh = tmp_path / "fresh"
    fresh.mkdir()
    os.symlink(elsewhere, fresh / "generations")
    with pytest.raises(StorageError, match="leaves the knowledge-base folder"):
        kb.save(fresh)
    assert sorted(os.listdir(elsewhere)) == before


def test_links_inside_the_folder_are_fine(saved):
    import shutil

    gen = saved / "generations" / "g000001"
    shutil.move(gen / "chunks", saved / "chunks-moved")
    os.symlink(saved / "chunks-moved", gen / "chunks")
    assert crux_nb.open(saved).summary()["chunks"] == 1
