"""Recurring lowercase noun phrases (``concept`` entities) for the offline rule extractor.

A concept is a 2–3 word phrase of lowercase content words (no function words, no
``-ly`` adverbs, none of :data:`~crux_nb.models.text.CONCEPT_STOP`) that recurs in at
least ``min_chunks`` chunks. In a long input (from ``SUPPORT_MIN_CHARS`` characters, where the
evidence is there to see; a short note keeps every recurring phrase) it must also be a **noun
compound**:

* seen at least once right after a determiner, possessive or preposition (``the launch plan``,
  ``after the load tests``); a phrase never seen there is a predicate (``wide open``);
* its first word is not an ``-ing`` form (``shaking hands`` is a verb and its object);
* its first word is itself used as a noun somewhere -- it ends a noun phrase after a
  determiner (``the launch is``) -- so adjective + noun descriptions (``plump sister``) are
  not concepts;
* its last word is not a verb: a noun and its verb (``module provides``, ``operation fails``, ``command
  executed``) are a clause, not a term. A word is a verb when the input writes it after *it* or a form of
  *be* (``it provides``, ``is executed``) or before an article (``yields the product``) and never
  as a noun: not after an article or a possessive (``the sets``), and not in the phrase's singular
  (``file sets`` beside ``file set``).

Most widespread, then longest phrases first; a phrase inside a chosen longer one that
recurs no more often than it is skipped.
"""

from __future__ import annotations

import re
from collections import defaultdict

from .offline_names import DETERMINERS, FUNCTION_WORDS, SUPPORT_MIN_CHARS
from .text import CONCEPT_STOP

__all__ = ["recurring_concepts"]

#: Words a noun phrase follows: determiners, possessives and prepositions.
_NP_BEFORE = DETERMINERS | frozenset("of for in on at to from by with about into onto over under per via".split())

#: Words after which a word is a verb or a participle, not a noun (it provides, is executed), unless also seen as one
_VERB_BEFORE = frozenset("it is are was were be been".split())
#: Words that make the next word a noun (``the sets``), for the verb test (no demonstrative: ``this provides``).
_NOUN_BEFORE = frozenset("the a an its their every".split())
_CONCEPT_WORD = re.compile(r"^[a-z][a-z-]{2,}$")
_TOKENS = re.compile(r"[^\W\d_][\w'’-]*|[^\w\s]")


def _content(word: str) -> bool:
    return bool(_CONCEPT_WORD.match(word)) and word not in FUNCTION_WORDS and word not in CONCEPT_STOP \
        and not word.endswith("ly")


def recurring_concepts(texts, spans_by_chunk, min_chunks: int, limit: int, taken: set[str]) -> list[tuple[str, str]]:
    """``(key, name)`` of up to ``limit`` concepts of ``texts`` (``[(id, text)]``), none of them in ``taken``."""
    long_input = sum(len(t) for _c, t in texts) >= SUPPORT_MIN_CHARS
    seen: dict[str, set[int]] = defaultdict(set)
    noun_phrase: set[str] = set()
    nouns: set[str] = set()  # words seen heading a noun phrase: "the launch is", "a test."
    after_it: set[str] = set()  # "it provides", "is executed", "yields the": a verb (unless "the sets": after_article)
    after_article: set[str] = set()
    for ci in range(len(texts)):
        for span in spans_by_chunk[ci]:
            words = _TOKENS.findall(span.text)
            for i in range(1, len(words)):
                before = words[i - 1].lower()
                if before in _VERB_BEFORE:
                    after_it.add(words[i])
                if words[i].lower() in ("the", "a", "an"):
                    after_it.add(words[i - 1])  # "yields the product": a verb before its object
                elif before in _NOUN_BEFORE:
                    after_article.add(words[i])
                if words[i - 1].lower() in DETERMINERS and _content(words[i]) and (
                        i + 1 == len(words) or not _content(words[i + 1])):
                    nouns.add(words[i])
            for size in (3, 2):
                for i in range(len(words) - size + 1):
                    gram = words[i:i + size]
                    if all(_content(w) for w in gram):
                        phrase = " ".join(gram)
                        seen[phrase].add(ci)
                        if i > 0 and words[i - 1].lower() in _NP_BEFORE:
                            noun_phrase.add(phrase)
    def verb_last(phrase: str) -> bool:
        *head, last = phrase.split(" ")
        singular = [last[:-2], last[:-1]] if last.endswith("es") else [last[:-1]] if last.endswith("s") else []
        return last in after_it and last not in after_article and not any(
            " ".join([*head, s]) in seen for s in singular if s)

    ranked = sorted(((len(c), p) for p, c in seen.items() if len(c) >= min_chunks and (not long_input or (
                     p in noun_phrase and not p.split(" ")[0].endswith("ing") and p.split(" ")[0] in nouns
                     and not verb_last(p)))),
                    key=lambda x: (-x[0], -x[1].count(" "), x[1]))
    chosen: list[tuple[str, str]] = []
    for count, phrase in ranked:
        if phrase in taken or any(phrase in c and count <= len(seen[c]) for _k, c in chosen):
            continue
        chosen.append((phrase, phrase))
        if len(chosen) >= limit:
            break
    return chosen
