"""The offline model's calibrated relevance rating (0..100) of reports for a query.

BM25 scaled against "every query term matched once" (:meth:`crux_nb.models.text.BM25.scaled`) does not
mean the same across questions: a long question has many terms, no report matches most of them, and
its best report rates 20 where a two-word question's best rates 90. So one threshold cannot serve both.
The calibrated rating normalises against what the query can achieve instead:

* each distinct query term ``t`` has a weight ``w(t)``: BM25's idf over the rated reports, with the
  document count floored at ``FLOOR_DOCS`` so that a batch of two or three reports does not make a
  term that both mention worthless (ratings move little with the batch around a report);
* a report matches ``t`` with strength ``1 - 0.3 ** tf`` (one mention 0.7, two 0.91: saturating);
* the *achievable* reference is the weight of the query's ``KEY_TERMS`` heaviest terms: a report that
  names the three most specific things a question asks about is fully relevant, however long the
  question (a short question must match all of its terms);
* the score is normalised by the larger of the best report's score in the call and half that
  reference, so the best report of a call rates 100 only when it matches at least half of what is
  achievable, and a call where nothing matches well rates everything low.

The result is rounded to 2 decimals, in input order, and deterministic.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Sequence

__all__ = ["calibrated_ratings", "KEY_TERMS", "FLOOR_DOCS"]

KEY_TERMS = 3
FLOOR_DOCS = 10
_MATCH = 0.3  # 1 - _MATCH ** tf: the strength of tf mentions
_FLOOR_SHARE = 0.5  # the normaliser is at least this share of the achievable reference


def calibrated_ratings(query: Sequence[str], docs: Sequence[Sequence[str]]) -> list[float]:
    """Ratings 0..100 of tokenised ``docs`` for the tokenised ``query`` (see the module docstring).

    Examples
    --------
    >>> from crux_nb.models.text import terms
    >>> docs = [terms("Scrooge sees his lonely childhood at school"), terms("The Cratchits eat a goose")]
    >>> calibrated_ratings(terms("What does Scrooge see of his childhood?"), docs)
    [100.0, 0.0]
    """
    distinct = list(dict.fromkeys(query))
    if not distinct or not docs:
        return [0.0] * len(docs)
    counts = [Counter(d) for d in docs]
    n = max(len(docs), FLOOR_DOCS)
    df = Counter(t for c in counts for t in c if t in distinct)
    weight = {t: math.log(1.0 + (n - df[t] + 0.5) / (df[t] + 0.5)) for t in distinct}
    reference = sum(sorted(weight.values(), reverse=True)[:KEY_TERMS])
    scores = [sum(weight[t] * (1.0 - _MATCH ** c[t]) for t in distinct if c[t]) for c in counts]
    norm = max(max(scores), _FLOOR_SHARE * reference)
    return [round(min(100.0, 100.0 * s / norm), 2) if norm > 0 else 0.0 for s in scores]
