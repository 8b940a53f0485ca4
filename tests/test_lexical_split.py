"""BM25 terms by the fast paths (issue 35, cost): ASCII text split by ``str.translate`` and ``str.split`` with one
filter pass, the identifier gate scanning for its literals, the identifier patterns run token by token, and token
ids numbered by C loops, each the same as the plain definition it replaces (the regex ``\\b\\w\\w+\\b``, the gate
as first written, the patterns over the whole text, a ``setdefault`` per token), on generated text and on the
sample corpus."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from crux_nb.datasets import sample_path
from crux_nb.retrieval.retriever.lexical_index import SharedTokens
from crux_nb.store import lexical
from crux_nb.store.lexical import analyzer, lexical_settings

_WORD = re.compile(r"(?u)\b\w\w+\b")  # bm25s.tokenize's token pattern
_GATE = re.compile(r"\w(?:\.|::)\w|(?<![\w\-])--?[^\W\d]").search  # the identifier gate as first written

SETTINGS = [lexical_settings("t"), lexical_settings("t", stopwords=None), lexical_settings("t", tokenizer="bm25s"),
            lexical_settings("t", language="fr"), lexical_settings("t", stopwords=["the", "a", "x", "os"])]
# ASCII of every class (letters of both cases, digits, "_", the identifier marks, white space \w leaves out),
# Latin letters with accents, a letter whose lower case is two characters, CJK
PIECES = list("aZq9_0 .-:`\"'([{\t\n\x0b\x1c\x1f\xa0\u3000Ééßİ日本語のテ") + ["::", "--", "os.path", "__x__"]
TEXT = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


def reference_split(settings_):
    """The analyzer as the plain definition: the regex's words (CJK bigrams under ``crux``), the identifier terms
    behind the first gate, then the stop words left out."""
    stop, crux = settings_.stopword_set(), settings_.tokenizer == "crux"

    def extra(lower):
        out = lexical._COMPOUND.findall(lower) if _GATE(lower) else []
        for word in lexical._UNDERSCORED(lower) if "_" in lower else []:
            parts = _WORD.findall(word.replace("_", " "))
            out += parts if parts != [word] else []
        return out

    def split(text):
        lower = text.lower()
        words = lexical._cjk_terms(lower) if crux and lexical._HAS_CJK(lower) else _WORD.findall(lower)
        words += extra(lower) if crux else []
        return [w for w in words if w not in stop]

    return split


@pytest.mark.parametrize("index", range(len(SETTINGS)))
@settings(max_examples=300, deadline=None)
@given(text=TEXT)
def test_split_is_the_plain_definition(index, text):
    assert analyzer(SETTINGS[index])(text) == reference_split(SETTINGS[index])(text)


@settings(max_examples=500, deadline=None)
@given(text=TEXT)
def test_the_gate_is_the_first_one_and_never_misses_an_identifier(text):
    lower = text.lower()
    assert bool(lexical._MAY_COMPOUND(lower)) == bool(_GATE(lower))
    assert lexical._MAY_COMPOUND(lower) or not lexical._COMPOUND.findall(lower)


@settings(max_examples=500, deadline=None)
@given(text=TEXT)
def test_identifiers_found_token_by_token_are_the_whole_texts(text):
    """Both identifier patterns run on the whitespace-separated tokens holding their marks: the same matches, in
    the same order, as over the whole text, and the same counts for ``stopwords="auto"``."""
    lower = text.lower()
    whole = (lexical._COMPOUND.findall(lower), lexical._UNDERSCORED(lower))
    assert lexical._identifiers(lower) == whole
    assert lexical.identifier_counts([text]) == (len(whole[0]) + len(whole[1]), len(lower.split()))


def _sample_texts():
    texts = [p.read_text(encoding="utf-8") for p in sorted(Path(sample_path()).rglob("*.md"))]
    assert texts, "the bundled sample corpus"
    return [block for text in texts for block in text.split("\n\n")]


def test_split_on_the_sample_corpus_and_identifiers():
    texts = _sample_texts() + ["Call os.path.join(--verbose) in __main__; std::vector<int> a_b", "Ärger über Öl -x"]
    for settings_ in SETTINGS:
        split, reference = analyzer(settings_), reference_split(settings_)
        assert [split(t) for t in texts] == [reference(t) for t in texts]
    assert analyzer(SETTINGS[1])("a os.path.join snake_case --v x") == [
        "os", "path", "join", "snake_case", "os.path.join", "--v", "snake", "case"]


def test_tokenize_numbers_new_terms_in_order_of_first_appearance():
    shared = SharedTokens(SETTINGS[1])
    reference: dict[str, int] = {}
    sources = [["beta alpha beta", "", "gamma alpha"], ["delta beta", "alpha epsilon delta"], [""], []]
    for texts in sources:
        terms, rows, tfs, lengths = shared.tokenize(texts)
        tokens = [shared.split(t) for t in texts]
        ids = [[reference.setdefault(token, len(reference)) for token in words] for words in tokens]
        assert lengths.tolist() == [len(words) for words in tokens] and lengths.dtype == np.int64
        pairs = sorted({(row, term): None for row, line in enumerate(ids) for term in line})
        assert list(zip(rows.tolist(), terms.tolist())) == pairs
        assert tfs.tolist() == [float(ids[row].count(term)) for row, term in pairs]
        assert (terms.dtype, rows.dtype, tfs.dtype) == (np.int32, np.int32, np.float32)
    assert list(shared.vocab.items()) == list(reference.items())


@pytest.mark.parametrize("batch", [1, 3, 4096])
def test_sources_tokenized_in_batches_are_tokenized_one_by_one(batch):
    """``tokenize_sources`` cuts each batch's arrays back per source: the arrays and the vocabulary numbering of
    a ``tokenize`` call per source, whatever the batch (a source larger than it is a batch of its own)."""
    texts = _sample_texts()[:40]
    sources = [texts[0:3], [], texts[3:4], ["", "? !"], texts[4:12], texts[12:13], texts[13:40]]
    batched, one_by_one = SharedTokens(SETTINGS[0]), SharedTokens(SETTINGS[0])
    got = batched.tokenize_sources(sources, batch=batch)
    expected = [one_by_one.tokenize(source) for source in sources]
    assert len(got) == len(expected)
    for ours, theirs in zip(got, expected):
        assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(ours, theirs))
    assert list(batched.vocab.items()) == list(one_by_one.vocab.items())
