"""Lexical settings of BM25 (issue 31, item 3): language, stop words, stemmer and token rules on the knowledge
base and the leg, saved with the knowledge base; identifiers kept whole; CJK bigrams; French stop words; a
warning for a query with no indexable terms; the index cache keyed by the settings."""

from __future__ import annotations

import json
import sys
import warnings
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import crux_nb
from crux_nb.errors import CruxError, ParameterError
from crux_nb.retrieval import BM25Leg, retrieve
from crux_nb.store.lexical import BM25S_SETTINGS, DEFAULT_SETTINGS, LexicalSettings, analyzer, lexical_settings

from test_lexical_incremental import bm25s_scores


def _kb(**settings):
    kb = crux_nb.knowledge_base(id="lx", **settings)
    kb.add_text("with.md", "# with\n\nThe with statement wraps a block with methods of a context manager.")
    kb.add_text("dict.md", "# dict\n\nCall dict.setdefault to insert a key if it is absent.")
    kb.add_text("parts.md", "# parts\n\nA dict has keys; setdefault is one of its methods, get is another.")
    kb.add_text("loop.md", "# loop\n\nThe for statement iterates over a sequence.")
    return kb


def _top(kb, query, leg=None, limit=4):
    steps = [retrieve(limit=limit, legs=(leg,))] if leg is not None else [retrieve(limit=limit)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return [h.source.id for h in kb.recipe(steps=steps).retrieve(query)]


@pytest.mark.parametrize("name, value", [("language", "klingon"), ("language", 3), ("stopwords", 3),
                                         ("stopwords", "klingon"), ("stopwords", ["ok", 1]), ("stemmer", "japanese"),
                                         ("stemmer", 1), ("tokenizer", "spacy")])
def test_invalid_settings_raise_parameter_errors(name, value):
    with pytest.raises(ParameterError, match=f"knowledge_base\\(\\): parameter '{name}' must be"):
        crux_nb.knowledge_base(**{name: value})
    with pytest.raises(ParameterError, match=f"BM25Leg\\(\\): parameter '{name}' must be"):
        BM25Leg(**{name: value})


def test_settings_are_normalised():
    kb = crux_nb.knowledge_base(language="French", stopwords=["Le", "la", "le"])
    assert kb.lexical == LexicalSettings("fr", ("la", "le"), None, "crux") and kb.state.lexical == kb.lexical
    assert crux_nb.knowledge_base().lexical == DEFAULT_SETTINGS
    assert BM25Leg(stopwords=["b", "a"]).stopwords == ("b", "a")  # a list becomes a tuple: the leg stays hashable
    hash(BM25Leg(stopwords=["b", "a"]))


def test_stop_words_none_keeps_keywords_and_the_language_list_drops_them():
    assert _kb(stopwords="language").lexical.stopword_set() >= {"with", "for", "the"}
    assert BM25Leg().scores(_kb(stopwords="language").state, "with").tolist() == [0.0] * 4
    kept = _kb(stopwords=None)
    scores = BM25Leg().scores(kept.state, "with")
    assert scores[kept.state.chunks["source_id"].tolist().index("with.md")] == scores.max() > 0
    assert _top(kept, "with statement")[0] == "with.md"
    # the leg overrides the knowledge base's setting, either way
    assert BM25Leg(stopwords=None).scores(_kb(stopwords="language").state, "with").max() > 0
    assert BM25Leg(stopwords="en").scores(kept.state, "with").max() == 0


def test_a_custom_list_and_another_language_list():
    kb = _kb(stopwords=["statement", "sequence"])
    assert BM25Leg().scores(kb.state, "statement").max() == 0 and BM25Leg().scores(kb.state, "with").max() > 0
    french = BM25Leg(stopwords="fr")  # "est" and "la" are French stop words, "the" is not one
    assert french.scores(kb.state, "est la").max() == 0 and french.scores(kb.state, "the").max() > 0


def test_auto_stop_words_follow_the_corpus():
    code = _kb()  # identifiers in every chunk: code-like, every word kept
    assert code.lexical.stopwords == "auto" and BM25Leg().settings(code.state).stopwords is None
    assert _top(code, "with statement")[0] == "with.md"
    prose = crux_nb.knowledge_base(id="prose")
    for source, text in {"a.md": "The launch moved to May with the team.", "b.md": "Lunch is at noon."}.items():
        prose.add_text(source, text)
    assert BM25Leg().settings(prose.state).stopwords == "language"
    assert BM25Leg().scores(prose.state, "with").max() == 0
    # the decision is the corpus': enough identifiers flip it, and the token arrays of both settings are kept
    prose.add_text("c.md", "Call os.path.join, dict.get and sys.exit; pass --verbose or -q to __main__.")
    assert BM25Leg().settings(prose.state).stopwords is None and BM25Leg().scores(prose.state, "with").max() > 0


def test_a_query_with_no_indexable_terms_warns_with_the_reason_and_the_setting():
    kb = _kb(stopwords="language")
    with pytest.warns(UserWarning, match="every word it has is a stop word .*stopwords=None"):
        result = kb.recipe().retrieve_with_trace("is it the")
    assert len(result.hits) == 0
    assert len(result.trace.warnings) == 1 and "'is it the'" in result.trace.warnings[0]
    with pytest.warns(UserWarning, match="tokenizer keeps words of two or more letters"):
        kb.recipe().retrieve("? ! a")
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a query with a term never warns, even when nothing matches it
        assert len(kb.recipe().retrieve("zzz qqq")) == 0
        kb.recipe().retrieve("with statement")


def test_identifiers_are_kept_whole_beside_their_parts():
    split = analyzer(DEFAULT_SETTINGS)
    assert {"dict.setdefault", "dict", "setdefault"} <= set(split("dict.setdefault()"))
    assert {"str.removeprefix", "os.path.join", "--verbose", "__exit__", "exit", "async_with", "async"} <= set(
        split("str.removeprefix, os.path.join, --verbose, __exit__, async_with"))
    assert "with" not in split("async_with")  # a part is a term like any other: English stop words drop it
    assert split("The end. Next") == ["end", "next"]  # a sentence's dot joins nothing
    # an option after a space, a bracket, a double quote or a backtick; a plain-text dash after a word or a closing
    # mark is punctuation, and _emphasis_ is markup: neither adds a term
    assert {"-m", "--no-site", "--foo"} <= set(split('python -m venv "--no-site" ``--foo``'))
    assert not any(t.startswith("-") for t in split("'Much!'--Marley said; so--and then;--in a seven-years'-dead"))
    assert "did" not in split("_did_ it") and "exit" in split("__exit__")
    kb = _kb()
    assert _top(kb, "dict.setdefault")[0] == "dict.md"  # the exact identifier first
    assert set(_top(kb, "setdefault")) == {"dict.md", "parts.md"}  # the part alone still matches both
    # the whole identifier widens the exact chunk's lead over the one with the parts alone
    bm25s_only = BM25Leg(tokenizer="bm25s").scores(kb.state, "dict.setdefault")
    crux = BM25Leg().scores(kb.state, "dict.setdefault")
    rows = kb.state.chunks["source_id"].tolist()
    gap = lambda s: s[rows.index("dict.md")] - s[rows.index("parts.md")]  # noqa: E731
    assert gap(crux) > gap(bm25s_only)


def test_cjk_text_is_split_into_bigrams_and_matches():
    kb = crux_nb.knowledge_base(id="zh", language="zh")
    kb.add_text("a.md", "机器学习是人工智能的一个分支。")
    kb.add_text("b.md", "今天的天气很好，我们去公园散步。")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert [h.source.id for h in kb.recipe().retrieve("什么是机器学习？")][:1] == ["a.md"]
        assert [h.source.id for h in kb.recipe().retrieve("天气")] == ["b.md"]
    assert analyzer(kb.lexical)("日本語") == ["日本", "本語"] and analyzer(kb.lexical)("中") == ["中"]
    # bm25s' split makes each sentence one token: the question matches nothing
    assert BM25Leg(tokenizer="bm25s").scores(kb.state, "什么是机器学习？").max() == 0


FRENCH = {
    "paris.md": "Paris est la capitale de la France et sa plus grande ville.",
    "lyon.md": "Lyon est située au confluent du Rhône et de la Saône.",
    "ecole.md": "L'école publique est gratuite et obligatoire en France depuis les lois de Jules Ferry.",
}


def test_french_text_with_french_stop_words():
    kb = crux_nb.knowledge_base(id="fr", language="fr")
    for source, text in FRENCH.items():
        kb.add_text(source, text, format="text")
    assert {"est", "la", "de", "et"} <= kb.lexical.stopword_set()
    assert _top(kb, "Quelle est la capitale de la France ?")[0] == "paris.md"
    assert _top(kb, "Où se trouve le confluent du Rhône ?")[0] == "lyon.md"
    assert _top(kb, "Depuis quand l'école est-elle obligatoire ?")[0] == "ecole.md"
    # the same question under English stop words: "est", "la", "de" count, and every chunk has some of them
    english = BM25Leg(language="en")
    assert (english.scores(kb.state, "Quelle est la capitale de la France ?") > 0).sum() == 3
    assert (BM25Leg().scores(kb.state, "Quelle est la capitale de la France ?") > 0).sum() == 2


def test_settings_survive_save_and_open(tmp_path):
    kb = _kb(language="fr", stopwords=["statement"], tokenizer="crux")
    assert crux_nb.knowledge_base().lexical.stopwords == "auto"
    kb.save(tmp_path / "kb")
    back = crux_nb.open(tmp_path / "kb")
    assert back.lexical == kb.lexical and back.state.lexical == kb.lexical
    assert np.array_equal(BM25Leg().scores(back.state, "statement with"), BM25Leg().scores(kb.state, "statement with"))
    back.add_text("new.md", "New text.")  # a later state keeps the settings
    assert back.state.lexical == kb.lexical


def test_a_manifest_without_settings_opens_with_the_behaviour_it_was_built_with(tmp_path):
    kb = _kb()
    kb.save(tmp_path / "kb")
    [manifest] = (tmp_path / "kb" / "generations").glob("*/manifest.json")
    data = json.loads(manifest.read_text())
    del data["kb"]["lexical"]
    manifest.write_text(json.dumps(data))
    back = crux_nb.open(tmp_path / "kb", verify=False)
    assert back.lexical == BM25S_SETTINGS
    for query in ["dict.setdefault statement", "with"]:
        assert np.array_equal(BM25Leg().scores(back.state, query), bm25s_scores(back.state, query))


def test_the_index_cache_is_keyed_by_the_settings():
    state = _kb(stopwords="language").state
    plain, keep = BM25Leg(), BM25Leg(stopwords=None)
    assert plain.scores(state, "with").max() == 0 and keep.scores(state, "with").max() > 0
    keys = [k for k in state.cache if isinstance(k, tuple) and k[0] == "bm25"]
    assert len(keys) == 2 and {k[-1] for k in keys} == {plain.settings(state), keep.settings(state)}
    assert keep.settings(state).stopwords is None and plain.settings(state).stopwords == "language"
    shared = [k for k in state.shared if isinstance(k, tuple) and k[0] == "bm25-tokens"]
    assert len(shared) == 2
    assert plain.scores(state, "with").max() == 0  # the first index is reused, not overwritten
    assert len([k for k in state.cache if isinstance(k, tuple) and k[0] == "bm25"]) == 2


@pytest.mark.parametrize("query", ["dict.setdefault --verbose __exit__ async_with", "日本語 テキスト", "the with",
                                   "os.path.join(x)", "Priya Raman plan"])
def test_the_bm25s_setting_equals_bm25s_bit_for_bit(query):
    kb = _kb()  # the knowledge base's default is the crux split: the leg asks for bm25s' own
    kb.add_text("jp.md", "日本語のテキスト and os.path.join")
    leg = BM25Leg(tokenizer="bm25s", stopwords="language")  # "auto" would keep every word of this code-like text
    assert np.array_equal(leg.scores(kb.state, query), bm25s_scores(kb.state, query))


def test_a_stemmer_without_pystemmer_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "Stemmer", None)  # import Stemmer raises ImportError
    with pytest.raises(CruxError, match="PyStemmer") as error:
        crux_nb.knowledge_base(stemmer="language")
    assert error.value.code == "missing_dependency" and "crux_nb[stem]" in str(error.value)


def test_a_stemmer_joins_word_forms():
    pytest.importorskip("Stemmer")
    kb = _kb(stemmer="language")
    assert lexical_settings("f()", stemmer="language").stemmer_name() == "english"
    assert _top(kb, "iterating sequences")[0] == "loop.md"
    assert BM25Leg(stemmer=None).scores(kb.state, "iterating sequences").max() == 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("ab_.:-  \n(é1Z")), max_size=40) | st.text(max_size=40))
def test_the_crux_split_keeps_every_word_of_the_bm25s_split(text):
    """Identifier terms are added, never substituted: a part alone still matches (CJK text aside, split anew)."""
    crux = analyzer(lexical_settings("f()", stopwords=None))(text)
    plain = analyzer(lexical_settings("f()", stopwords=None, tokenizer="bm25s"))(text)
    if not any("\u3040" <= c <= "\ufaff" or "\uac00" <= c <= "\ud7af" or "\u1100" <= c <= "\u11ff" or
               "\uff66" <= c <= "\uff9f" for c in text):
        assert Counter(plain) <= Counter(crux)
    assert crux == analyzer(lexical_settings("f()", stopwords=None))(text)  # deterministic
