"""``bench/_scale_corpus.py``: the extraction benchmark's corpus past the 9,003 real passages is reproducible,
keeps each passage's words other than names, and grows the name vocabulary with the document count (a corpus
repeating the same names would hide a cost that grows with the distinct entities, issue 35)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def corpus(shared_data):
    assert (shared_data / "multihop" / "2wiki" / "corpus.json").is_file()
    import _scale_corpus

    return _scale_corpus


def _name_pairs(texts, names: set[str]) -> set[tuple[str, str]]:
    """Pairs of name words next to each other ("Albert Einstein"): the multi-word names a round brings."""
    pairs = set()
    for text in texts:
        for first, second in zip(text.split(), text.split()[1:]):
            if first in names and second in names:
                pairs.add((first, second))
    return pairs


def test_real_passages_first_then_renamed_rounds(corpus):
    real = corpus.real_passages()
    assert len(real) == 9_003
    docs = corpus.passages(len(real) + 400)
    assert docs["id"].is_unique and len(docs) == len(real) + 400
    assert docs.iloc[:len(real)].equals(real.iloc[:len(real)].reset_index(drop=True))
    names = set(corpus.name_words())
    assert {"The", "However", "In"}.isdisjoint(names) and len(names) > 10_000
    renamed = docs.iloc[len(real):].reset_index(drop=True)
    source = real.iloc[:400].reset_index(drop=True)
    changed = 0
    for new, old in zip(renamed["text"], source["text"]):
        new_words, old_words = corpus.WORD.findall(new), corpus.WORD.findall(old)
        assert len(new_words) == len(old_words)  # one word for one word: the same passage, renamed
        assert [w for w in new_words if w not in names] == [w for w in old_words if w not in names]
        changed += new != old
    assert changed > 350  # nearly every passage has a name


def test_rounds_are_reproducible_and_grow_the_names(corpus):
    real = len(corpus.real_passages())
    first = corpus.passages(2 * real + 200)
    corpus.real_passages.cache_clear()
    corpus.name_words.cache_clear()
    assert corpus.passages(2 * real + 200).equals(first)
    names = set(corpus.name_words())
    rounds = [first.iloc[k * real:k * real + 200]["text"] for k in range(3)]
    seen = [_name_pairs(r, names) for r in rounds]
    assert all(len(s) > 20 for s in seen)
    assert len(seen[0] | seen[1] | seen[2]) > 2.5 * max(len(s) for s in seen)  # new names each round
