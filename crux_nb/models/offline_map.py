"""The offline model's map scoring: each finding statement scored on its own against the query.

:func:`match_scores` gives a statement the share of the query's terms it names (BM25-saturated and
length-normalised against a fixed length, 0..100); with ``map_score="idf"`` each query term weighs its idf
over the whole searched corpus (:func:`corpus_weights` of the ``"corpus"`` statistics the units carry), so a
rare term counts more than a common one and a term the corpus never names counts against every finding.
Nothing depends on which other statements share the batch (version 3's ``"batch-bm25"`` did).
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from .text import BM25, terms

__all__ = ["MATCH_LENGTH", "match_scores", "corpus_weights", "map_output"]

#: The reference length (terms) of :func:`match_scores`' length normalisation: a finding sentence of about a
#: dozen content words (a fixed constant, so that a score never depends on the other documents scored with it).
MATCH_LENGTH = 12.0


def match_scores(query: Sequence[str], docs: Sequence[Sequence[str]], *, k1: float = 1.2, b: float = 0.75,
                 length: float = MATCH_LENGTH, weights: Mapping[str, float] | None = None) -> list[float]:
    """Each document's share of the query it matches, 0..100, scored on its own (no collection statistics).

    The score of a document is the mean, over the distinct query terms, of BM25's saturated term frequency
    ``tf * (k1 + 1) / (tf + k1 * (1 - b + b * dl / length))`` (0 for an absent term), times 100, capped at 100
    and rounded to 2 decimals: a document of ``length`` terms naming every query term once scores 100, one
    naming half of them about 50. Unlike :meth:`BM25.scaled` there is no idf over ``docs``, so a document's
    score does not depend on which other documents are scored with it (a map batch's neighbours cannot move
    it). ``weights`` (term -> weight, e.g. :func:`corpus_weights`: an idf over a whole corpus, fixed before
    any batch is formed) makes it a weighted mean; a query term without a weight weighs 1.

    >>> match_scores(terms("Who owns the gateway?"), [terms("Platform owns the Ingest Gateway."), terms("Lunch.")])
    [100.0, 0.0]
    >>> match_scores(["marley", "chain"], [["marley"]]) == match_scores(["marley", "chain"], [["marley"], ["chain"]])[:1]
    True
    >>> match_scores(["ghost", "marley"], [["ghost"], ["marley"]], length=1, weights={"ghost": 1.0, "marley": 3.0})
    [25.0, 75.0]
    """
    distinct = list(dict.fromkeys(query))
    w = {t: 1.0 if weights is None else float(weights.get(t, 1.0)) for t in distinct}
    reference = sum(w.values())
    if not distinct or reference <= 0:
        return [0.0] * len(docs)
    out = []
    for doc in docs:
        counts = Counter(doc)
        norm = k1 * (1.0 - b + b * len(doc) / length)
        total = sum(w[t] * counts[t] * (k1 + 1.0) / (counts[t] + norm) for t in distinct if counts[t])
        out.append(round(min(100.0, 100.0 * total / reference), 2))
    return out


def corpus_weights(query: Sequence[str], corpus: Mapping[str, Any]) -> dict[str, float]:
    """BM25's idf of each distinct query term over a corpus given by its statistics.

    ``corpus`` is ``{"documents": N, "df": {term: documents holding it}}``; a term missing from ``df`` is in
    no document, so it gets the highest idf: a query term the corpus never names weighs most, and counts
    against every document (none can name it).

    >>> w = corpus_weights(["python", "3.12"], {"documents": 100, "df": {"python": 60}})
    >>> round(w["python"], 3), round(w["3.12"], 3)
    (0.512, 5.308)
    """
    n = max(int(corpus.get("documents") or 0), 1)
    df = corpus.get("df") or {}
    out = {}
    for t in dict.fromkeys(query):
        d = min(max(int(df.get(t, 0)), 0), n)
        out[t] = math.log(1.0 + (n - d + 0.5) / (d + 0.5))
    return out



def map_output(query: str, units: list[dict[str, Any]], map_score: str) -> dict[str, Any]:
    """``map_findings``' output: one finding per distinct statement with a positive score, ordered by score
    (desc) then first finding id (see :class:`~crux_nb.models.OfflineModel` for ``map_score``).

    >>> unit = {"community_id": "c1", "findings": [{"id": "c1:f1", "statement": "Ada leads Atlas."}]}
    >>> map_output("Who leads Atlas?", [unit], "idf")["findings"][0]["score"]
    100.0
    """
    ids_by_statement: dict[str, list[str]] = {}
    for unit in units:
        for finding in unit.get("findings") or ():
            statement = str(finding.get("statement") or "")
            if statement.strip():
                ids_by_statement.setdefault(statement, []).append(str(finding["id"]))
    statements = list(ids_by_statement)
    if map_score == "batch-bm25":
        docs = [terms(s) for s in statements]
        scores = BM25(docs).scaled(terms(query))
    elif map_score == "match":
        scores = match_scores(terms(query), [terms(s) for s in statements])
    else:
        asked = terms(query, whole_numbers=True)
        corpus = next((u["corpus"] for u in units if isinstance(u.get("corpus"), dict)), None)
        weights = None if corpus is None else corpus_weights(asked, corpus)
        scores = match_scores(asked, [terms(s, whole_numbers=True) for s in statements], weights=weights)
    out = [
        {"statement": s, "finding_ids": sorted(ids_by_statement[s]), "score": score}
        for s, score in zip(statements, scores)
        if score > 0
    ]
    out.sort(key=lambda f: (-f["score"], f["finding_ids"][0]))
    return {"findings": out}

