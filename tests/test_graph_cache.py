"""The disk cache of derived data (crux_nb.store.array_cache): a process that opens tables it opened before reads the
graph's indexes back (crux_nb.graph.cached), array for array what a build gives, and skips the table checks passed
before; a damaged, foreign, partial or unwritable entry is never used and never an error."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time

import numpy as np
import pytest

import crux_nb
import crux_nb.opening
import crux_nb.warming
from crux_nb import expand_relations, retrieve
from crux_nb.graph import build as graph_build
from crux_nb.graph import cached
from crux_nb.store import array_cache
from crux_nb.store.persist import read_saved

QUESTION = "Who owns the ingest gateway?"


@pytest.fixture
def cache(tmp_path, monkeypatch):
    folder = tmp_path / "cache"
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", str(folder))
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)  # the sample counts as large
    return folder


def _open(path, **kwargs):
    kb = crux_nb.open(path, **kwargs)
    if kb.warming is not None:
        kb.warming.join(60)
    return kb


def _answer(kb):
    return kb.recipe(steps=[retrieve(limit=5), expand_relations()]).retrieve(QUESTION)


def _counting_builds(monkeypatch) -> list:
    calls, real = [], graph_build.build_with_adjacency
    monkeypatch.setattr(graph_build, "build_with_adjacency", lambda state: calls.append(1) or real(state))
    return calls


def _entries(folder):
    return sorted(p.name for p in (folder / cached.KIND).iterdir()) if (folder / cached.KIND).is_dir() else []


def test_a_second_open_reads_the_indexes_the_first_one_built(saved_sample, cache, monkeypatch):
    builds = _counting_builds(monkeypatch)
    first = _open(saved_sample)
    assert builds == [1] and len(_entries(cache)) == 1
    second = _open(saved_sample)
    assert builds == [1]  # read back, not built
    _assert_same_indexes(first, second)


def _assert_same_indexes(first, second):
    """``second``'s indexes (read from the cache) are array for array ``first``'s (built), and answer the same."""
    built, read = first.reader.traversal_index, second.reader.traversal_index
    for name, values in built.arrays().items():
        got = read.arrays()[name]
        assert got.dtype == values.dtype and np.array_equal(got, values), name
    for name in ("node", "kind", "row_of_code"):
        assert np.array_equal(getattr(read, name), getattr(built, name)) and \
            getattr(read, name).dtype == getattr(built, name).dtype, name
    assert built._views.keys() == read._views.keys() and len(built._views) == 1  # the default step's cut
    for key, view in built._views.items():
        again = read._views[key]
        for name in ("indptr", "peer", "etype", "truncated", "spec", "df", "owner", "degree"):
            assert np.array_equal(getattr(again, name), getattr(view, name)), name
            assert getattr(again, name).dtype == getattr(view, name).dtype, name
        for rule in view.cost:
            assert np.array_equal(again.cost[rule], view.cost[rule])
            assert np.array_equal(again.zero_cost[rule], view.zero_cost[rule])
        assert (again.fan_out, again.hubs) == (view.fan_out, view.hubs)
        assert all(np.array_equal(a, b) for a, b in zip(again.transposed(), view.transposed()))
        assert np.shares_memory(again.peer, read.peer) == np.shares_memory(view.peer, built.peer)
    assert (second.state.edges["direction"] == "symmetric").any()  # the reverse entries are covered too
    ours, theirs = first.reader._adjacency, second.reader._adjacency
    for name in ("peer", "direction", "edge_row", "etype", "indptr", "ref_array"):
        assert np.array_equal(getattr(ours, name), getattr(theirs, name)), name
    assert ours.type_names == theirs.type_names
    assert _answer(second) == _answer(first)
    some = str(second.state.chunks["ref"].iloc[0])
    assert second.reader.neighbors(some) == first.reader.neighbors(some)
    assert second.reader.reach(some, depth=2) == first.reader.reach(some, depth=2)


def test_other_tables_are_another_entry(saved_sample, cache, tmp_path, monkeypatch):
    _open(saved_sample)
    changed = tmp_path / "changed"
    shutil.copytree(saved_sample, changed)
    kb = crux_nb.open(changed)
    kb.add_text("late.md", "# Late\n\nThe ingest gateway moved to Lisbon.")
    monkeypatch.setattr(crux_nb.warming, "warm_saved", lambda kb: None)  # this save leaves the cache as it is
    kb.save(changed)
    builds = _counting_builds(monkeypatch)
    reopened = _open(changed)
    assert builds == [1] and len(_entries(cache)) == 2
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    assert _answer(reopened) == _answer(crux_nb.open(changed))


def test_an_entry_written_by_other_code_is_not_read(saved_sample, cache, monkeypatch):
    _open(saved_sample)
    monkeypatch.setattr(cached, "code_digest", lambda *packages: "0" * 64)  # another crux_nb's code
    builds = _counting_builds(monkeypatch)
    _open(saved_sample)
    assert builds == [1] and len(_entries(cache)) == 2


def test_an_entry_that_does_not_fit_the_tables_is_not_used(saved_sample, cache, tmp_path, monkeypatch):
    """Under the key of one knowledge base, the arrays of another (what a wrong key would give)."""
    other = tmp_path / "other"
    small = crux_nb.knowledge_base(id="other")
    small.add_text("a.md", "# A\n\nAda met Bob in Paris.")
    small.extract_entities(progress=False)
    small.save(other)
    _open(other)
    (entry,) = _entries(cache)
    key = cached.cache_key(read_saved(saved_sample).manifest["tables"])
    os.rename(cache / cached.KIND / entry, cache / cached.KIND / key)
    builds = _counting_builds(monkeypatch)
    kb = _open(saved_sample)
    assert builds == [1]
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    assert _answer(kb) == _answer(crux_nb.open(saved_sample))


@pytest.mark.parametrize("damage", ["flip", "truncate", "meta"])
def test_a_damaged_entry_is_removed_and_built_again(saved_sample, cache, monkeypatch, damage):
    _open(saved_sample)
    (entry,) = _entries(cache)
    folder = cache / cached.KIND / entry
    if damage == "meta":
        (folder / "meta.json").write_text("{not json")
    else:
        target = folder / "peer.npy"
        data = bytearray(target.read_bytes())
        if damage == "flip":
            data[-8] ^= 0x01  # the last code, one off: in range, so only the checksum tells
        target.write_bytes(bytes(data if damage == "flip" else data[:-7]))
    builds = _counting_builds(monkeypatch)
    kb = _open(saved_sample)
    assert builds == [1] and _entries(cache) == [entry]  # removed, then written again by this open's build
    assert array_cache.read_arrays(cached.KIND, entry) is not None
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    assert _answer(kb) == _answer(crux_nb.open(saved_sample))


def test_no_cache_when_turned_off_unwritable_or_unverified(saved_sample, cache, tmp_path, monkeypatch):
    builds = _counting_builds(monkeypatch)
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    _open(saved_sample)
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", str(blocker))  # no folder can be made under a file
    kb = _open(saved_sample)
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", str(cache))
    _open(saved_sample, verify=False)  # the key names checked tables only
    assert builds == [1, 1, 1] and not cache.exists()
    assert _answer(kb) == _answer(crux_nb.open(saved_sample))


def test_a_partial_entry_is_never_read_and_a_dead_writers_is_removed(cache):
    arrays = {"refs": np.array(["a", "é", ""], dtype=object), "n": np.arange(5)}
    folder = cache / "kind"
    folder.mkdir(parents=True)
    dead = folder / ".tmp-dead"
    dead.mkdir()
    (dead / "n.npy").write_bytes(b"half")
    os.utime(dead, (time.time() - 2 * 3600,) * 2)
    fresh = folder / ".tmp-live"
    fresh.mkdir()
    half = folder / "k1"  # a folder without its meta.json: what no writer leaves (rename is atomic), read as none
    half.mkdir()
    assert array_cache.read_arrays("kind", "k1") is None and not half.exists()  # removed: never whole
    assert array_cache.write_arrays("kind", "k2", arrays)
    assert not dead.exists() and fresh.exists()  # a live writer's folder is left to it
    got = array_cache.read_arrays("kind", "k2")
    assert got["refs"].tolist() == ["a", "é", ""] and got["refs"].dtype == object
    assert np.array_equal(got["n"], np.arange(5))
    assert not array_cache.write_arrays("kind", "k2", arrays)  # there already
    meta = cache / "kind" / "k2" / "meta.json"
    np.save(cache / "kind" / "n.npy", np.arange(5))  # the right bytes, outside the entry
    meta.write_text(meta.read_text().replace('"n.npy"', '"../n.npy"'))
    assert array_cache.read_arrays("kind", "k2") is None  # an entry reads its own files only


def test_concurrent_writers_of_one_entry_leave_one_whole_entry(cache):
    arrays = {"n": np.arange(200_000)}
    results = []
    threads = [threading.Thread(target=lambda: results.append(array_cache.write_arrays("kind", "k", arrays)))
               for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert results.count(True) >= 1 and np.array_equal(array_cache.read_arrays("kind", "k")["n"], arrays["n"])
    assert [p.name for p in (cache / "kind").iterdir()] == ["k"]


def test_the_least_recently_read_entries_go_first(cache):
    for i in range(array_cache.KEEP + 2):
        assert array_cache.write_arrays("kind", f"k{i}", {"n": np.arange(i + 1)})
        os.utime(cache / "kind" / f"k{i}", (1_000 + i,) * 2)
    assert array_cache.read_arrays("kind", "k0") is None  # pruned
    assert array_cache.read_arrays("kind", "k2") is not None  # read now: the most recent
    array_cache.write_arrays("kind", "k9", {"n": np.arange(3)})
    kept = sorted(p.name for p in (cache / "kind").iterdir())
    assert "k2" in kept and "k9" in kept and len(kept) == array_cache.KEEP and "k3" not in kept


def test_tables_found_to_agree_are_not_checked_again(saved_sample, cache, tmp_path, monkeypatch):
    from crux_nb.store import integrity

    checked, real = [], integrity._check_agreement
    monkeypatch.setattr(integrity, "_check_agreement", lambda where, state: checked.append(where) or real(where, state))
    _open(saved_sample)
    _open(saved_sample)
    assert len(checked) == 1  # remembered
    _open(saved_sample, verify=False)  # tables not verified: checked, and not remembered
    assert len(checked) == 2
    broken = tmp_path / "broken"
    shutil.copytree(saved_sample, broken)
    kb = crux_nb.open(broken)
    kb.add_text("late.md", "# Late\n\nA new page.")
    monkeypatch.setattr(crux_nb.warming, "warm_saved", lambda kb: None)  # the save checks nothing here
    kb.save(broken)

    def failing(where, state):
        checked.append(where)
        raise integrity.StorageError(f"{where} is inconsistent.", code="inconsistent_generation")

    monkeypatch.setattr(integrity, "_check_agreement", failing)
    for _ in range(2):  # other tables: checked; a failure is never remembered
        with pytest.raises(integrity.StorageError):
            crux_nb.open(broken)
    assert len(checked) == 4


def test_a_script_that_opens_new_tables_and_ends_leaves_the_entry_written(saved_sample, cache):
    """The interpreter's exit waits for the background build's writing (a killed writer would leave a temporary
    folder and no entry)."""
    script = ("import time, crux_nb, crux_nb.warming\n"
              "from crux_nb.graph import cached\n"
              "crux_nb.warming.WARM_MIN_CHUNKS = 1\n"
              "keep = cached.keep\n"  # a build as slow as a big one's: still under way when the script ends
              "cached.keep = lambda reader, key: time.sleep(1.5) or keep(reader, key)\n"
              f"crux_nb.open({str(saved_sample)!r})\n")
    env = {**os.environ, "CRUX_NB_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    (entry,) = _entries(cache)
    assert not entry.startswith(".") and array_cache.read_arrays(cached.KIND, entry) is not None
    assert entry == cached.cache_key(read_saved(saved_sample).manifest["tables"])


def test_the_temporary_folder_of_a_gone_process_is_removed_at_once(cache):
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True)
    folder = cache / "kind"
    folder.mkdir(parents=True)
    dead = folder / f".tmp-{socket.gethostname()}-{int(gone.stdout)}-abc"
    alive = folder / f".tmp-{socket.gethostname()}-{os.getpid()}-abc"
    for temp in (dead, alive):
        temp.mkdir()
    assert array_cache.write_arrays("kind", "k", {"n": np.arange(3)})
    assert not dead.exists() and alive.exists()


def test_a_view_that_cuts_nothing_reads_the_index_own_arrays(cache):
    """Stored once: the default view of a graph under the fan-out ceiling is the index's arrays themselves."""
    import pandas as pd

    kb = crux_nb.knowledge_base(id="small")
    kb.add_text("a.md", "# A\n\nAda met Bob.\n\n## B\n\nBob met Cy.", chunk_size=50)
    kb.add_edges(pd.DataFrame({"from_ref": ["entity:ada", "entity:bob"], "to_ref": ["entity:bob", "entity:cy"],
                               "type": ["related", "related"], "evidence": [[str(kb.state.chunks["ref"].iloc[0])]] * 2}))
    index = kb.reader.traversal_index
    view = index.view(None, None, 64)
    view.transposed()
    assert np.shares_memory(view.peer, index.peer)
    assert cached.store("k" * 64, index, kb.reader._adjacency)
    files = {p.name for p in (cache / cached.KIND / ("k" * 64)).iterdir()}
    assert "view.0.indptr.npy" in files and "view.0.peer.npy" not in files and "view.0.owner.npy" not in files
    traversal, _ = cached.load("k" * 64, kb.state)
    again = traversal.view(None, None, 64)
    assert np.shares_memory(again.peer, traversal.peer) and np.shares_memory(again.owner, traversal.node)
    assert np.array_equal(again.peer, view.peer) and np.array_equal(again.transposed()[1], view.transposed()[1])


def _edited_copy(saved_sample, folder):
    shutil.copytree(saved_sample, folder)
    kb = crux_nb.open(folder)
    kb.add_text("late.md", "# Late\n\nThe ingest gateway moved to Lisbon; Priya Raman owns it now.")
    return kb


def test_a_save_fills_the_cache_for_the_generation_it_wrote(saved_sample, cache, tmp_path, monkeypatch):
    """A notebook restart after an edit: the first open of the saved generation builds and checks nothing."""
    from crux_nb.store import integrity

    kb = _edited_copy(saved_sample, tmp_path / "edited")
    kb.save(tmp_path / "edited")
    assert kb.warming is not None and kb.warming.name == "crux_nb-fill"
    kb.warming.join(60)
    key = cached.cache_key(read_saved(tmp_path / "edited").manifest["tables"])
    assert key in _entries(cache)
    builds = _counting_builds(monkeypatch)
    checked, real = [], integrity._check_agreement
    monkeypatch.setattr(integrity, "_check_agreement", lambda where, state: checked.append(where) or real(where, state))
    reopened = _open(tmp_path / "edited")
    assert builds == [] and checked == []  # read and remembered, not built or checked
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    rebuilt = _open(tmp_path / "edited")
    assert builds == [1]
    _assert_same_indexes(rebuilt, reopened)
    assert len(_answer(reopened)) and _answer(kb) == _answer(reopened)


def test_a_save_writes_the_indexes_a_query_built_without_building_them_again(cache, tmp_path, monkeypatch):
    from crux_nb.datasets import load_sample

    kb = load_sample()
    kb.extract_entities(progress=False)
    builds = _counting_builds(monkeypatch)
    first = _answer(kb)  # the query builds the graph's indexes
    kb.save(tmp_path / "kb")
    kb.warming.join(60)
    assert builds == [1] and len(_entries(cache)) == 1
    reopened = _open(tmp_path / "kb")
    assert builds == [1] and _answer(reopened) == first


def test_a_save_that_changes_no_table_the_cache_names_does_nothing(saved_sample, cache, tmp_path):
    _open(saved_sample)  # the entry and the checks' memo are there
    shutil.copytree(saved_sample, tmp_path / "again")
    kb = crux_nb.open(tmp_path / "again")
    kb.warming.join(60)
    kb.save(tmp_path / "again")  # the same tables (linked parts): their entries exist
    assert kb.warming.name == "crux_nb-warm" and len(_entries(cache)) == 1


def test_a_save_fills_nothing_when_small_or_the_cache_is_off(saved_sample, cache, tmp_path, monkeypatch):
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 10 ** 9)
    kb = _edited_copy(saved_sample, tmp_path / "small")
    kb.save(tmp_path / "small")
    assert kb.warming is None and _entries(cache) == []
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)
    monkeypatch.setenv("CRUX_NB_CACHE_DIR", "off")
    kb.add_text("later.md", "# Later\n\nAnother page.")
    kb.save(tmp_path / "small")
    assert kb.warming is None and not cache.exists()


def test_a_script_that_saves_and_ends_leaves_the_entry_written(saved_sample, cache, tmp_path):
    """The exit waits for the save's background fill, as for an open's."""
    folder = tmp_path / "edited"
    shutil.copytree(saved_sample, folder)
    script = ("import time, crux_nb, crux_nb.warming\n"
              "from crux_nb.graph import cached\n"
              "crux_nb.warming.WARM_MIN_CHUNKS = 10 ** 9\n"  # the open leaves the cache alone
              f"kb = crux_nb.open({str(folder)!r})\n"
              "crux_nb.warming.WARM_MIN_CHUNKS = 1\n"
              "keep = cached.keep\n"  # a fill as slow as a big one's: still under way when the script ends
              "cached.keep = lambda reader, key: time.sleep(1.5) or keep(reader, key)\n"
              "kb.add_text('late.md', '# Late\\n\\nA new page.')\n"
              f"kb.save({str(folder)!r})\n")
    env = {**os.environ, "CRUX_NB_CACHE_DIR": str(cache)}
    subprocess.run([sys.executable, "-c", script], env=env, check=True, timeout=120)
    assert _entries(cache) == [cached.cache_key(read_saved(folder).manifest["tables"])]


def test_a_burst_of_saves_fills_the_cache_once_for_the_last_one(saved_sample, cache, tmp_path, monkeypatch):
    folder = tmp_path / "edited"
    kb = _edited_copy(saved_sample, folder)
    kb.warming.join(60)
    before = set(_entries(cache))
    kept, keep = [], cached.keep
    monkeypatch.setattr(cached, "keep", lambda reader, key: kept.append(key) or keep(reader, key))
    with crux_nb.warming._FILLING:  # a fill under way: the saves below queue theirs
        kb.save(folder)
        first = kb.warming
        kb.add_text("later.md", "# Later\n\nAnother page about the gateway.")
        kb.save(folder)
        assert kb.warming is not first
    first.join(60)
    kb.warming.join(60)
    assert set(_entries(cache)) - before == {cached.cache_key(read_saved(folder).manifest["tables"])}
    assert len(kept) == 1  # the first save's generation was superseded before its turn came
