"""The first query after ``crux_nb.open()`` builds only what it reads (issue 35), and the faster builds give the
same arrays and answers as the straightforward ones they replace."""

from __future__ import annotations

import random
import re
import time

import numpy as np
import pandas as pd
import pytest

import crux_nb
from crux_nb import expand_relations, retrieve
from crux_nb.graph.adjacency import _entry_order
from crux_nb.retrieval.expand.entity_match import normalise_words
from crux_nb.retrieval.retriever.lexical_index import term_counts


@pytest.mark.parametrize("seed", range(25))
def test_entry_order_is_lexsort_of_the_five_keys(seed):
    rng = np.random.default_rng(seed)
    m, n_nodes, n_types = int(rng.integers(0, 400)), int(rng.integers(1, 30)), int(rng.integers(1, 4))
    node, peer = rng.integers(0, n_nodes, m), rng.integers(0, n_nodes, m)  # many ties on (node, peer)
    etype, edge_row, direction = rng.integers(0, n_types, m), rng.integers(0, m + 1, m), rng.integers(0, 2, m)
    expected = np.lexsort((direction, edge_row, etype, peer, node))
    got = _entry_order(node, peer, etype, edge_row, direction, n_nodes=n_nodes, n_types=n_types)
    assert got.tolist() == expected.tolist()


def test_entry_order_falls_back_to_lexsort_when_the_key_would_overflow():
    node, peer = np.array([2, 0, 1]), np.array([0, 0, 1])
    zeros = np.zeros(3, dtype=np.int64)
    got = _entry_order(node, peer, zeros, zeros, zeros, n_nodes=2 ** 30, n_types=8)
    assert got.tolist() == [1, 2, 0]


@pytest.mark.parametrize("step", [1, 3, 1 << 20])
def test_term_counts_is_bincount(step):
    terms = np.random.default_rng(step).integers(0, 50, 1000).astype(np.int32)
    assert term_counts(terms, 60, step=step).tolist() == np.bincount(terms, minlength=60).tolist()
    assert term_counts(np.zeros(0, np.int32), 60).tolist() == []


def test_normalise_words_splits_as_the_word_regex_does():
    word = re.compile(r"\w+", re.UNICODE)
    rng = random.Random(7)
    # letters that change under casefold, combining marks, digits of other scripts, odd spaces, punctuation
    alphabet = "aZ_ 9-.'\u00dfI\u0130\ufb01\u03a3\u03c2\u0301\u00a0\t\u2003\u00e9\u4e2d\u0661\u00b2\u216b"
    for _ in range(20_000):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 8)))
        assert normalise_words(text) == tuple(word.findall(text.casefold())), repr(text)


def test_a_first_query_after_open_builds_no_evidence_index_and_no_ref_dicts(saved_sample):
    kb = crux_nb.open(saved_sample)
    hits = kb.recipe(steps=[retrieve(limit=3), expand_relations()]).retrieve("Who owns the ingest gateway?")
    assert hits
    built = vars(kb.reader._adjacency)
    assert "_evidence_index" not in built and "code" not in built  # a traversal reads neither
    assert "chunk_row" not in vars(kb.state.lookup)
    # read on demand, they are what the frames hold
    assert kb.state.lookup.chunk_row == {ref: i for i, ref in enumerate(kb.chunks["ref"].tolist())}
    assert kb.state.lookup.columns["content"] == kb.chunks["content"].tolist()
    with pytest.raises(KeyError):
        kb.state.lookup.columns["no such column"]


def test_evidence_read_after_a_traversal_equals_a_fresh_readers(saved_sample):
    kb, fresh = crux_nb.open(saved_sample), crux_nb.open(saved_sample)
    kb.recipe(steps=[retrieve(limit=3), expand_relations()]).retrieve("Who owns the ingest gateway?")
    ref = kb.edges["from_ref"].iloc[0]
    assert kb.reader.neighbors(ref, include_evidence=True) == fresh.reader.neighbors(ref, include_evidence=True)
    assert any(n.evidence for n in kb.reader.neighbors(ref, include_evidence=True))


def test_open_builds_the_graph_indexes_in_the_background_on_large_knowledge_bases(saved_sample, monkeypatch):
    import time

    import crux_nb.opening
    import crux_nb.warming

    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 1)  # the sample counts as large
    kb = crux_nb.open(saved_sample)
    reader = kb.reader
    deadline = time.monotonic() + 30
    while "traversal" not in reader._built and time.monotonic() < deadline:  # never asked for: built by open
        time.sleep(0.01)
    assert "traversal" in reader._built
    monkeypatch.setattr(crux_nb.warming, "WARM_MIN_CHUNKS", 10 ** 9)
    cold = crux_nb.open(saved_sample).reader
    assert cold._built == {}  # a small knowledge base starts no build
    warm, fresh = reader.traversal_index, cold.traversal_index
    for name in ("refs", "indptr", "peer", "etype", "direction", "kind"):
        assert np.array_equal(getattr(warm, name), getattr(fresh, name)), name


def test_threads_asking_for_the_traversal_index_at_once_share_one_build(saved_sample, monkeypatch):
    import threading

    from crux_nb.graph import build

    kb = crux_nb.open(saved_sample)
    built, real = [], build.build_with_adjacency

    def counted(*args):
        built.append(1)
        return real(*args)

    monkeypatch.setattr(build, "build_with_adjacency", counted)
    reader, found = kb.reader, []
    threads = [threading.Thread(target=lambda: found.append(reader.traversal_index)) for _ in range(4)]
    threads.append(reader.warm())
    for thread in threads[:4]:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(built) == 1 and len({id(index) for index in found}) == 1


def test_threads_asking_for_one_view_share_its_cut_and_its_incoming_lists(saved_sample, monkeypatch):
    """The background build (``crux_nb.open``) and a query ask for the default view at once: one cut, one
    transposition (each cut alone, the query's second one made the first query wait for both)."""
    import threading

    from crux_nb import expand_relations
    from crux_nb.graph import frontier_index

    index = crux_nb.open(saved_sample).reader.traversal_index
    calls, cut, transpose = [], frontier_index.TraversalIndex._cut, frontier_index.View._transpose

    def slow(real, name):
        def counted(*args):
            calls.append(name)
            time.sleep(0.05)  # long enough for every thread to arrive while the first builds
            return real(*args)
        return counted

    monkeypatch.setattr(frontier_index.TraversalIndex, "_cut", slow(cut, "cut"))
    monkeypatch.setattr(frontier_index.View, "_transpose", slow(transpose, "transpose"))
    found = []
    key = expand_relations().view_key()
    threads = [threading.Thread(target=lambda: found.append(index.view(*key).transposed())) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(calls) == ["cut", "transpose"] and len({id(f) for f in found}) == 1


def test_a_states_lookup_does_not_keep_the_state_alive(saved_sample):
    import gc
    import weakref

    from crux_nb.schema import SCHEMAS
    from crux_nb.store.state import KBState

    frames = crux_nb.open(saved_sample).state
    state = KBState(**{t: frames.frame(t) for t in SCHEMAS})
    state.lookup.columns["content"], state.lookup.chunk_row  # built, as a query builds them
    ref = weakref.ref(state)
    gc.disable()  # reference counting alone must free it: no cycle through the lookup
    try:
        del state
        assert ref() is None
    finally:
        gc.enable()


def test_an_edit_that_leaves_the_entities_and_edges_keeps_their_indexes(saved_sample, monkeypatch):
    from crux_nb.graph import build
    from crux_nb.retrieval.expand.entity_match import entity_name_index

    kb = crux_nb.open(saved_sample)
    recipe = lambda: kb.recipe(steps=[retrieve(limit=3), expand_relations()])  # noqa: E731
    recipe().retrieve("Who owns the ingest gateway?")
    before, names = kb.reader._adjacency, entity_name_index(kb.state)
    kb.add_text("zz-note.md", "# Note\n\nThe ingest gateway is owned by the platform team.")
    real = build.build_with_adjacency
    monkeypatch.setattr(build, "build_with_adjacency", lambda state: pytest.fail("the edges were factorised again"))
    hits = recipe().retrieve("Who owns the ingest gateway?")  # the traversal index from the kept adjacency
    monkeypatch.setattr(build, "build_with_adjacency", real)
    assert kb.reader._adjacency is before and entity_name_index(kb.state) is names  # add_text left both frames
    fresh = crux_nb.open(saved_sample)
    fresh.add_text("zz-note.md", "# Note\n\nThe ingest gateway is owned by the platform team.")
    assert hits == fresh.recipe(steps=[retrieve(limit=3), expand_relations()]).retrieve("Who owns the ingest gateway?")
    chunk = kb.chunks["ref"].iloc[0]
    kb.add_edges(pd.DataFrame([{"from_ref": chunk, "to_ref": kb.edges["to_ref"].iloc[0], "type": "cites",
                                "evidence": [chunk]}]))  # new edges: a new adjacency, which reads them
    assert kb.reader._adjacency is not before
    assert [n.type for n in kb.reader.neighbors(chunk)].count("cites") == 1
