"""Whether the corpus can answer a global question: the corpus statistics a map call carries, and the
support status of a search's best finding.

A map model scores findings batch by batch; a rare query term ("3.12") should count more than a common
one ("python" in Python's docs), and a term the corpus never names should count against every finding.
An idf computed over a batch would move a finding's score with its neighbours, so the statistics are the
searched corpus' own: the document frequency of each query term over the chunks of the searched sources
(the knowledge base, or a view's members), computed once per knowledge-base state and attached as data to
every unit of every map call (``unit["corpus"]``), the same whichever batch a unit lands in. Models that
do not read it ignore it (the chat prompt shows only a unit's reports); the offline model weighs its
query terms by it.

After the reduce, :func:`support` compares the best finding's score with a threshold: ``"strong"``
(at least the threshold), ``"weak"`` (findings, all below it) or ``"none"`` (no finding), and names the
query terms no chunk holds.
"""

from __future__ import annotations

from typing import Any

from ...models.text import term_forms, terms

__all__ = ["MIN_SUPPORT", "SUPPORT_STATUSES", "corpus_statistics", "absent_terms", "support", "support_warning"]

#: The best finding score (0..1) below which a global search warns that the corpus may not answer the
#: question (measured on three corpora with questions each answers and questions it cannot: see README).
MIN_SUPPORT = 0.25
SUPPORT_STATUSES = ("strong", "weak", "none")
_CACHE = "global-search:term-postings"


def _postings(state: Any) -> tuple[dict[str, list[int]], list[str]]:
    """Term -> chunk rows holding it, and each row's source: built once per state (``state.cache``)."""
    def build() -> tuple[dict[str, list[int]], list[str]]:
        chunks = state.chunks
        rows: dict[str, list[int]] = {}
        for row, content in enumerate(chunks["content"].tolist()):
            for term in set(terms(str(content), whole_numbers=True)):
                rows.setdefault(term, []).append(row)
        return rows, [str(s) for s in chunks["source_id"].tolist()]

    return state.cached(_CACHE, build)


def corpus_statistics(state: Any, visible: set[str] | None, query: str) -> dict[str, Any]:
    """``{"documents": N, "df": {term: chunks holding it}}`` for the distinct terms of ``query``
    (:func:`~crux_nb.models.text.terms`, dotted numbers whole) over the chunks of the ``visible`` sources
    (``None``: every source). A term no chunk holds has df 0.

    Examples
    --------
    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny()
    >>> corpus_statistics(kb.state, None, "What changed in Atlas 3.12?")
    {'documents': 3, 'df': {'chang': 0, 'atla': 1, '3.12': 0}}
    """
    rows, sources = _postings(state)
    if visible is None or visible >= set(sources):
        n, df = len(sources), {t: len(rows.get(t, ())) for t in dict.fromkeys(terms(query, whole_numbers=True))}
    else:
        n = sum(1 for s in sources if s in visible)
        df = {t: sum(1 for r in rows.get(t, ()) if sources[r] in visible)
              for t in dict.fromkeys(terms(query, whole_numbers=True))}
    return {"documents": n, "df": df}


def absent_terms(query: str, statistics: dict[str, Any]) -> tuple[str, ...]:
    """The words of ``query`` (as written) whose term no chunk of the corpus holds.

    >>> absent_terms("What changed in Python 3.12?", {"documents": 9, "df": {"chang": 4, "python": 9, "3.12": 0}})
    ('3.12',)
    """
    df = statistics.get("df") or {}
    absent = (written for term, written in term_forms(query, whole_numbers=True) if df.get(term, 0) == 0)
    return tuple(dict.fromkeys(absent))


def support(best: float | None, threshold: float, absent: tuple[str, ...]) -> dict[str, Any]:
    """The support status of a search whose best finding scored ``best`` (0..1, ``None``: no finding).

    >>> support(0.31, 0.5, ("3.12",))
    {'status': 'weak', 'best': 0.31, 'threshold': 0.5, 'absent_terms': ['3.12']}
    >>> support(None, 0.5, ())["status"], support(0.8, 0.5, ())["status"]
    ('none', 'strong')
    >>> support(0.8, 0.5, ("3.12",))["status"]  # a term the question names that the corpus never holds
    'weak'
    """
    # a term the question names that no chunk of the corpus holds is something the corpus cannot speak to
    status = "none" if best is None else "weak" if best < threshold or absent else "strong"
    return {"status": status, "best": None if best is None else round(float(best), 4), "threshold": threshold,
            "absent_terms": list(absent)}


def support_warning(status: dict[str, Any]) -> str | None:
    """The warning of a weak or empty search (``None`` when the best finding is strong).

    >>> print(support_warning(support(0.31, 0.5, ("3.12",))))
    the corpus may not answer this question: best finding scored 0.31 (< threshold 0.5); query terms not found in the corpus: '3.12'
    >>> print(support_warning(support(0.62, 0.5, ("3.12",))))
    the corpus may not answer this question: best finding scored 0.62; query terms not found in the corpus: '3.12'
    """
    if status["status"] == "strong":
        return None
    if status["status"] == "none":
        head = "the corpus may not answer this question: no finding matched it"
    elif status["best"] >= status["threshold"]:  # weak for a term the corpus never holds, not for the score
        head = f"the corpus may not answer this question: best finding scored {status['best']:.2f}"
    else:
        head = (f"the corpus may not answer this question: best finding scored {status['best']:.2f} "
                f"(< threshold {status['threshold']:g})")
    absent = status["absent_terms"]
    return head + ("; query terms not found in the corpus: " + ", ".join(repr(t) for t in absent) if absent else "")
