"""The incremental BM25 index scores exactly like bm25s, and a change re-tokenizes only what changed
(issue 15)."""

import numpy as np
import pytest

import crux_nb
from crux_nb.retrieval.retriever import lexical_index
from crux_nb.retrieval.retriever.lexical import BM25Leg

from test_communities import TEXTS

QUERIES = ["Priya Raman plan", "the ingest gateway", "Query Engine day 2 review review", "nothing matches zzz",
           "", "the of and", "Contoso Fabrikam Northwind"]


def bm25s_scores(state, query):
    import bm25s

    corpus = state.lookup.columns["content"]
    index = bm25s.BM25()
    index.index(bm25s.tokenize(corpus, stopwords="en", show_progress=False), show_progress=False)
    terms = [t for t in bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
             if t in index.vocab_dict]
    return np.asarray(index.get_scores(terms), dtype=float) if terms else np.zeros(len(corpus))


def _kb():
    kb = crux_nb.knowledge_base(id="lx", chunk_size=120)
    for source, text in TEXTS.items():
        kb.add_text(source, text)
    kb.add_text("empty-ish.md", "# The\n\nthe of and a.")  # a chunk with no token but stop words
    return kb


@pytest.mark.parametrize("query", QUERIES)
def test_scores_equal_bm25s_exactly(query):
    kb = _kb()
    state = kb.state
    assert np.array_equal(BM25Leg().scores(state, query), bm25s_scores(state, query))
    kb.add_text("new.md", "# New\n\nPriya Raman joins the Query Engine team.")
    kb.remove("team-0-1.md")
    assert np.array_equal(BM25Leg().scores(kb.state, query), bm25s_scores(kb.state, query))


@pytest.mark.parametrize("dense", [1, 10**9], ids=["sparse-postings", "dense-postings"])
def test_dense_and_sparse_postings_score_alike(monkeypatch, dense):
    # DENSE=1: no term is dense (every posting indexed); 10**9: every term is (one pass over all chunks)
    monkeypatch.setattr(lexical_index.LexicalIndex, "DENSE", dense)
    state = _kb().state
    for query in QUERIES:
        assert np.array_equal(BM25Leg().scores(state, query), bm25s_scores(state, query))


def test_a_change_tokenizes_only_the_changed_source(monkeypatch):
    kb = _kb()
    BM25Leg().scores(kb.state, "plan")
    seen = []
    tokenize = lexical_index.SharedTokens.tokenize_sources
    monkeypatch.setattr(lexical_index.SharedTokens, "tokenize_sources",
                        lambda self, sources, **k: seen.extend(map(list, sources)) or tokenize(self, sources, **k))
    kb.add_text("tiny.md", "# Tiny\n\nA tiny note.")
    kb.add_text("team-0-0.md", "# Changed\n\nPriya Raman changed this.")
    kb.remove("team-1-1.md")
    scores = BM25Leg().scores(kb.state, "Priya Raman")
    assert sorted(seen) == [["# Changed\n\nPriya Raman changed this."], ["# Tiny\n\nA tiny note."]]
    assert np.array_equal(scores, bm25s_scores(kb.state, "Priya Raman"))


def test_a_reopened_knowledge_base_builds_its_own_index(tmp_path):
    kb = _kb()
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb")
    assert back.state.shared is not kb.state.shared
    assert np.array_equal(BM25Leg().scores(back.state, "gateway plan"), bm25s_scores(back.state, "gateway plan"))


def _arrays(index):
    return [index.terms, index.rows, index.tfs, index.lengths]


def test_the_saved_index_is_used_whole_after_open_and_equals_a_fresh_build(tmp_path):
    from crux_nb.schema import SCHEMAS
    from crux_nb.store.state import KBState

    kb = _kb()
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb")
    leg = BM25Leg()
    settings = leg.settings(back.state)
    shared = back.state.shared[("bm25-tokens", settings)]
    assert shared.whole is not None  # installed from the saved frames, not tokenized
    fresh = KBState(**{t: back.state.frame(t) for t in SCHEMAS})  # no shared caches: tokenizes every chunk
    opened = lexical_index.build_index(back.state, k1=leg.k1, b=leg.b, settings=settings)
    rebuilt = lexical_index.build_index(fresh, k1=leg.k1, b=leg.b, settings=settings)
    assert opened.terms is shared.whole[1]  # the installed arrays themselves
    vocab = {i: t for t, i in shared.vocab.items()}
    fresh_vocab = {i: t for t, i in fresh.shared[("bm25-tokens", settings)].vocab.items()}
    assert [vocab[i] for i in opened.terms] == [fresh_vocab[i] for i in rebuilt.terms]
    for mine, theirs in zip(_arrays(opened)[1:], _arrays(rebuilt)[1:]):
        assert mine.dtype == theirs.dtype and np.array_equal(mine, theirs)
    assert np.array_equal(leg.scores(back.state, "gateway plan"), bm25s_scores(back.state, "gateway plan"))
    back.add_text("late.md", "# Late\n\nA late gateway note.")  # other sources: built from the per-source arrays
    assert np.array_equal(leg.scores(back.state, "gateway note"), bm25s_scores(back.state, "gateway note"))
    assert shared.whole is None


@pytest.mark.parametrize("query", QUERIES + ["Ünïcode ÉCOLE straße İstanbul", "x-ray x_ray a1 1a __ 42", "Who's the O'Neil?",
                                             "tab\tnew\nline  ÀÉ", "日本語 テキスト", "ΣΊΣΥΦΟΣ σίσυφος"])
def test_query_tokens_equal_bm25s_tokenize(query):
    import bm25s

    shared = lexical_index.SharedTokens()
    expected = bm25s.tokenize([query], stopwords="en", return_ids=False, show_progress=False)[0]
    assert shared.query_tokens(query) == list(expected)


@pytest.mark.parametrize("opened", [False, True])
def test_saved_frames_hold_each_sources_token_arrays_in_chunk_order(tmp_path, opened):
    """The frames a save writes are cut from the state's own index (no second join of every source's arrays):
    per source, exactly its token arrays, rows counted from its first chunk; the next query reuses that index."""
    from crux_nb.retrieval.retriever.lexical_index import _source_spans
    from crux_nb.retrieval.retriever.lexical_store import lexical_frames

    kb = _kb()
    if opened:  # the index installed whole from a saved generation, then changed
        kb.save(tmp_path / "kb")
        kb = crux_nb.open(tmp_path / "kb")
    kb.add_text("aaa-first.md", "# First\n\nA source sorted before the others, about the ingest gateway.")
    kb.remove(sorted(kb.documents["source_id"])[3])
    state = kb.state
    frames = lexical_frames(state)["frames"]
    shared = state.shared[("bm25-tokens", BM25Leg().settings(state))]
    postings, lengths = frames["postings"], frames["lengths"]
    counts = frames["sources"]["postings"].to_numpy()
    ends = np.cumsum(counts)
    for i, (key, start, end) in enumerate(_source_spans(state)):
        terms, rows, tfs, chunk_lengths = shared.sources[key]
        part = postings.iloc[ends[i] - counts[i]:ends[i]]
        assert np.array_equal(part["term"].to_numpy(), terms) and np.array_equal(part["row"].to_numpy(), rows)
        assert np.array_equal(part["tf"].to_numpy(), tfs)
        assert np.array_equal(lengths["length"].to_numpy()[start:end], chunk_lengths)
    assert ends[-1] == len(postings) and len(lengths) == len(state.chunks)
    index = BM25Leg()._index(state)
    assert np.shares_memory(postings["term"].to_numpy(), index.terms)  # taken, not copied
    for query in QUERIES:
        assert np.array_equal(BM25Leg().scores(state, query), bm25s_scores(state, query))
