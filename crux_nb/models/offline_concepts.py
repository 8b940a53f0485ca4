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
  not concepts.

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
    for ci in range(len(texts)):
        for span in spans_by_chunk[ci]:
            words = _TOKENS.findall(span.text)
            for i in range(1, len(words)):
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
    ranked = sorted(((len(c), p) for p, c in seen.items() if len(c) >= min_chunks and (not long_input or (
                     p in noun_phrase and not p.split(" ")[0].endswith("ing") and p.split(" ")[0] in nouns))),
                    key=lambda x: (-x[0], -x[1].count(" "), x[1]))
    chosen: list[tuple[str, str]] = []
    for count, phrase in ranked:
        if phrase in taken or any(phrase in c and count <= len(seen[c]) for _k, c in chosen):
            continue
        chosen.append((phrase, phrase))
        if len(chosen) >= limit:
            break
    return chosen
