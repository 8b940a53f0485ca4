"""What ``crux_nb.open`` prepares for the first query (issue 35): one build per state and key however many threads
ask (``KBState.cached``), the default expansion's indexes built in the background, and saved index frames decoded
only in the columns their owner reads."""

from __future__ import annotations

import hashlib
import io
import json
import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import crux_nb
from crux_nb import expand_relations, retrieve
from crux_nb.retrieval.retriever.lexical_index import global_rows
from crux_nb.store.indexes import SavedFrame
from crux_nb.store.state import KBState


def test_threads_asking_for_one_key_share_one_build():
    state, calls, found = KBState(), [], []

    def build():
        calls.append(1)
        time.sleep(0.05)  # long enough for every thread to arrive while it runs
        return object()

    threads = [threading.Thread(target=lambda: found.append(state.cached("k", build))) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(calls) == 1 and len({id(value) for value in found}) == 1


def test_a_build_under_way_does_not_hold_up_other_keys():
    state, release, started = KBState(), threading.Event(), threading.Event()

    def slow():
        started.set()
        release.wait(10)
        return "a"

    first = threading.Thread(target=lambda: state.cached("a", slow))
    first.start()
    started.wait(10)
    other = threading.Thread(target=lambda: state.cached("b", lambda: "b"))
    other.start()
    other.join(5)
    done = not other.is_alive()
    release.set()
    first.join()
    assert done and state.cache == {"a": "a", "b": "b"}


def _recipe(kb):
    return kb.recipe(steps=[retrieve(limit=5), expand_relations()])


def test_open_prepares_what_the_default_expansion_reads(saved_sample, monkeypatch):
    import crux_nb.opening
    import crux_nb.warming
    from crux_nb.graph import frontier_index
    from crux_nb.retrieval.expand import entity_match, titles

    started = []
    real_warm = crux_nb.warming.warm
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)  # the sample counts as large
    monkeypatch.setattr(crux_nb.warming, "warm", lambda kb, **k: started.append(real_warm(kb, **k)) or started[-1])
    kb = crux_nb.open(saved_sample)
    started[0].join(30)
    builds = []
    for module, name in ((frontier_index, "View"), (entity_match, "EntityNameIndex"), (titles, "SourceNames")):
        real = getattr(module, name)
        monkeypatch.setattr(module, name, lambda *a, _real=real, _name=name, **k: builds.append(_name) or _real(*a, **k))
    hits = _recipe(kb).retrieve("Who owns the ingest gateway?")
    assert builds == []  # the first query found each one built
    assert "content" in kb.state.lookup.columns  # and the chunk columns a hit is made of
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 10 ** 9)
    assert hits == _recipe(crux_nb.open(saved_sample)).retrieve("Who owns the ingest gateway?")


def test_a_failed_background_build_is_left_to_the_query(saved_sample, monkeypatch):
    import crux_nb.opening
    import crux_nb.warming

    def broken(reader, state, step=None):
        raise RuntimeError("no memory")

    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)
    monkeypatch.setattr(crux_nb.warming, "prepare_expansion", broken)
    kb = crux_nb.open(saved_sample)  # opens anyway; the query builds what it needs
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 10 ** 9)
    assert _recipe(kb).retrieve("Who owns the ingest gateway?") == \
        _recipe(crux_nb.open(saved_sample)).retrieve("Who owns the ingest gateway?")


def _parquet(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def test_a_saved_frame_decodes_only_the_columns_asked_for():
    parts = [_parquet(pa.table({"key": [1, 1, 2], "n": pa.array([3, 4, 5], pa.int32())})),
             _parquet(pa.table({"key": [9], "n": pa.array([6], pa.int32())}))]
    frame = SavedFrame(parts)
    assert frame.num_rows == 4
    arrays = frame.arrays(["n"])
    assert list(arrays) == ["n"] and arrays["n"].dtype == np.int32 and arrays["n"].tolist() == [3, 4, 5, 6]
    assert frame.column("key").to_pylist() == [1, 1, 2, 9]
    with pytest.raises(ValueError):  # pyarrow's ArrowInvalid: what opening catches and rebuilds after
        frame.arrays(["missing"])
    with pytest.raises(ValueError):
        SavedFrame(parts, num_rows=5).arrays(["n"])


def test_a_saved_index_missing_a_column_it_needs_is_rebuilt(tmp_path):
    kb = crux_nb.datasets.load_sample()
    query = "Who owns the ingest gateway?"
    expected = kb.recipe(steps=[retrieve(limit=5)]).retrieve(query)
    root = tmp_path / "kb"
    kb.save(root)
    folder = root / "generations" / "g000001"
    manifest = json.loads((folder / "manifest.json").read_text())
    entry = manifest["indexes"]["lexical"]["frames"]["postings"]["parts"][0]
    part = folder / "indexes" / "lexical" / "postings" / entry["file"]
    data = _parquet(pq.read_table(part).drop_columns(["tf"]))  # checksums and row counts still agree
    part.unlink()  # a hard link shared with nothing else here, but never write through one
    part.write_bytes(data)
    entry["sha256"], entry["bytes"] = hashlib.sha256(data).hexdigest(), len(data)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    opened = crux_nb.open(root)
    assert not any("bm25-tokens" in str(key) for key in opened.state.shared)  # not installed
    assert opened.recipe(steps=[retrieve(limit=5)]).retrieve(query) == expected


@pytest.mark.parametrize("step", [1, 5, 1 << 20])
def test_global_rows_shift_each_sources_postings_by_its_first_row(step):
    rng = np.random.default_rng(step)
    counts = rng.integers(0, 6, 300)  # sources without postings too
    starts = np.cumsum(rng.integers(1, 9, 300))
    local = rng.integers(0, 8, int(counts.sum())).astype(np.int32)
    expected = local + np.repeat(starts.astype(np.int32), counts)
    got = global_rows(local, starts, counts, step=step)
    assert got.dtype == np.int32 and got.tolist() == expected.tolist()


def test_the_background_build_reads_names_only_once_the_saved_lexical_index_is_installed(saved_sample, monkeypatch):
    """The graph's indexes are built while the saved index is installed, but the source names read the lexical
    statistics it brings: a build that read them ahead of the install counted every chunk's identifiers itself
    (seconds at 200k chunks), while the install waited on its lock."""
    import crux_nb.opening
    import crux_nb.warming
    from crux_nb.retrieval.retriever import lexical_index

    counted, started = [], []
    real_count, real_install, real_warm = lexical_index.identifier_counts, crux_nb.opening.install_indexes, \
        crux_nb.warming.warm

    def slow_install(state, indexes):
        time.sleep(0.5)  # a slow disk: the background build has every chance to run first
        real_install(state, indexes)

    monkeypatch.setattr(lexical_index, "identifier_counts", lambda texts: counted.append(1) or real_count(texts))
    monkeypatch.setattr(crux_nb.opening, "install_indexes", slow_install)
    monkeypatch.setattr(crux_nb.warming, "warm", lambda kb, **k: started.append(real_warm(kb, **k)) or started[-1])
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)
    crux_nb.open(saved_sample)
    started[0].join(30)
    assert counted == []


def test_the_graph_is_built_while_the_saved_lexical_index_is_installed(saved_sample, monkeypatch):
    """The graph's indexes read no saved index: their build starts before the install, on the other core."""
    import crux_nb.opening
    import crux_nb.warming

    seen, real_install = [], crux_nb.opening.install_indexes

    def watching_install(state, indexes):
        deadline = time.monotonic() + 20
        while "graph-adjacency" not in state.cache and time.monotonic() < deadline:
            time.sleep(0.01)
        seen.append("graph-adjacency" in state.cache)
        real_install(state, indexes)

    monkeypatch.setattr(crux_nb.opening, "install_indexes", watching_install)
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)
    crux_nb.open(saved_sample)
    assert seen == [True]
