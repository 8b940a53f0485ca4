""":class:`OfflineModel`: the deterministic, network-free default model.

It is honest about being extractive: nothing it writes is invented.

* ``extract`` — rule-based (see :mod:`crux_nb.models.offline_extract`).
* ``write_report`` — TextRank: sentences of the evidence become nodes of a
  tf-idf cosine-similarity graph, ranked by PageRank personalised towards
  sentences that name the community's entities. Findings are the most central
  sentences (near-duplicates skipped), each copied verbatim (an exact substring
  of its chunk text; sentences over 500 characters are skipped, and only if no
  sentence fits is one cut at a clause boundary) and citing exactly the chunk
  refs whose text contains it. The summary joins the top sentences (whitespace
  collapsed) in document order; the title names the most central entities.
  Parent reports use only their children's findings: statements copied, evidence
  the union of the evidence of the findings that share that statement.
* ``map_findings`` — each finding statement scored on its own against the query
  (:mod:`crux_nb.models.offline_map`: the share of the query's terms it names, 0..100, each
  term weighted by its idf over the whole searched corpus, from the ``"corpus"`` statistics
  ``global_search`` attaches to every unit, so "3.12" weighs more than "python" in Python's docs
  and a term the corpus never names counts against every finding): one finding per distinct
  statement with a positive score. A finding's score does not depend on which reports share its
  batch (version 3's batch BM25 did); version 4 had no idf (``map_score="match"``).
* ``rate`` — every report (title + summary + any finding statements), in input
  order: by default the calibrated rating of :mod:`crux_nb.models.rating`
  (normalised against what the query can achieve, so one threshold serves short
  and long questions); ``rating="bm25"`` keeps the map's scale.

``repair`` is accepted and ignored: the output is always valid, and the same
input gives the same output byte for byte.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, ClassVar

import numpy as np

from .._hashing import stable_hash
from ..errors import ParameterError
from .offline_extract import extract_entities
from .offline_spacy import spacy_extract, spacy_version
from .text import (
    BM25,
    Span,
    cosine_matrix,
    normalize_ws,
    pagerank,
    sentence_spans,
    terms,
)
from .offline_map import map_output
from .rating import calibrated_ratings
from .validation import REPORT_LIMITS

__all__ = ["OfflineModel", "OFFLINE_MODEL_VERSION"]

OFFLINE_MODEL_VERSION = "8"  # 2: cleaner entity graph; 3: whole sources, concepts; 4: batch-independent map scores;
#  5: technical text (identifiers, markup noise, types from context, acronyms by definition), idf-weighted map scores;
#  6: reST markup, <placeholder> templates; 7: reST titles, code directive bodies, call arguments one by one;
#  8: metavariables (<file1>) and filler parts (Xxx_) no identifiers, title-case reST references blanked, no noun + verb
#  concepts, no runs across table columns, a common word before an acronym dropped (docs/manual/models.md)
#: Chunk text per ``extract`` call that ``kb.extract_entities`` uses for this model by default: a whole source up to
#: this size (the rules count how a word is written across the input: more input, better evidence); a longer one is
#: cut, as the rules' time grows faster than their input: 3.5 MB in 2 calls took 166 s against 33 s as 64 files.
#: Above the longest source of the bundled and benchmark corpora (A Christmas Carol, 159k characters).
EXTRACT_BATCH_CHARS = 200_000
EXTRACTORS = ("rules", "spacy")
MAP_SCORES = ("idf", "match", "batch-bm25")
_CLAUSE_END = re.compile(r"[;:,—]\s|--")


@dataclass(frozen=True)
class _Node:
    statement: str  # verbatim text
    order: int  # first position, for document order and ties
    evidence: tuple[str, ...]


def _check_int(owner: str, name: str, value: Any, low: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < low:
        raise ParameterError(owner, name, f"an integer >= {low}", value)


@dataclass(frozen=True, kw_only=True)
class OfflineModel:
    """Deterministic extractive model (no network, no randomness).

    Parameters (all keyword-only)::

        name: model name (default ``"offline"``).
        max_findings: findings per report (default 6).
        summary_sentences: sentences joined into a report summary (default 3).
        title_entities: entity names in a report title (default 3).
        redundancy: cosine similarity above which a sentence repeats a chosen one (0.75).
        concepts: also extract recurring lowercase noun phrases (default True).
        concept_min_chunks: chunks a phrase must recur in to count (default 3).
        min_terms: content words a sentence needs to be preferred as a finding (default 6).
        rating: how ``rate`` scores reports: ``"calibrated"`` (default, see
            :mod:`crux_nb.models.rating`) or ``"bm25"`` (BM25 scaled, idf over the rated batch).
        map_score: how ``map_findings`` scores findings: ``"idf"`` (default, each statement on its own,
            :func:`~crux_nb.models.offline_map.match_scores`, query terms weighted by the corpus idf the units
            carry), ``"match"`` (version 4: the same without idf) or ``"batch-bm25"`` (version 3's BM25 with
            idf over the batch's statements, which depends on the batch; kept for comparison).
        extractor: ``"rules"`` (default: capitalisation rules, no dependencies) or ``"spacy"``
            (spaCy's small English NER, the optional ``nlp`` extra; see
            :mod:`crux_nb.models.offline_spacy`). Both clean and fold names the same way.

    ``extract_batch_chars`` (a class constant) tells ``kb.extract_entities`` to send a whole source per
    ``extract`` call: the rules weigh how each word is written across their input.

    ``fingerprint`` is a stable hash of the name, the version and these options (``rating`` only when
    it is not the default, so reports written before it existed keep their fingerprint; the spaCy and
    model versions for ``extractor="spacy"``).

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> text = "AND THEN there was Ebenezer Scrooge. How odd, said old Mr. Scrooge to Bob Cratchit; Bob smiled."
    >>> out = OfflineModel().extract([{"id": "c1", "text": text}])
    >>> [(e["name"], e["aliases"]) for e in out["entities"]]
    [('Bob Cratchit', ['Bob']), ('Ebenezer Scrooge', ['Mr. Scrooge'])]
    >>> OfflineModel(rating="bm25").rate("Who is Marley?", [{"community_id": "c1", "title": "Marley",
    ...                                                      "summary": "Marley was dead."}])["ratings"]
    [{'community_id': 'c1', 'rating': 100.0}]
    """

    name: str = "offline"
    max_findings: int = 6
    summary_sentences: int = 3
    title_entities: int = 3
    redundancy: float = 0.75
    concepts: bool = True
    concept_min_chunks: int = 3
    min_terms: int = 6
    rating: str = "calibrated"
    map_score: str = "idf"
    extractor: str = "rules"
    fingerprint: str = field(init=False)
    extract_batch_chars: ClassVar[int] = EXTRACT_BATCH_CHARS

    def __post_init__(self) -> None:
        owner = "OfflineModel"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ParameterError(owner, "name", "a non-empty string", self.name)
        _check_int(owner, "max_findings", self.max_findings, 0)
        _check_int(owner, "summary_sentences", self.summary_sentences, 1)
        _check_int(owner, "title_entities", self.title_entities, 1)
        _check_int(owner, "concept_min_chunks", self.concept_min_chunks, 1)
        _check_int(owner, "min_terms", self.min_terms, 1)
        if isinstance(self.redundancy, bool) or not isinstance(self.redundancy, (int, float)) or not 0 < self.redundancy <= 1:
            raise ParameterError(owner, "redundancy", "a number in (0, 1]", self.redundancy)
        if not isinstance(self.concepts, bool):
            raise ParameterError(owner, "concepts", "a bool", self.concepts)
        if self.rating not in ("calibrated", "bm25"):
            raise ParameterError(owner, "rating", "'calibrated' or 'bm25'", self.rating)
        if self.map_score not in MAP_SCORES:
            raise ParameterError(owner, "map_score", "'idf', 'match' or 'batch-bm25'", self.map_score)
        if self.extractor not in EXTRACTORS:
            raise ParameterError(owner, "extractor", "one of 'rules', 'spacy'", self.extractor)
        identity = {"name": self.name, "version": OFFLINE_MODEL_VERSION, "options": self.options()}
        if self.extractor == "spacy":
            identity["spacy"] = spacy_version()
        object.__setattr__(self, "fingerprint", stable_hash(identity))

    def options(self) -> dict[str, Any]:
        """The output-relevant options (part of the fingerprint): a changed option is a different model.

        >>> from crux_nb.models import OfflineModel
        >>> OfflineModel().options()["max_findings"], OfflineModel(max_findings=3).fingerprint == OfflineModel().fingerprint
        (6, False)
        """
        options = {
            "max_findings": self.max_findings,
            "summary_sentences": self.summary_sentences,
            "title_entities": self.title_entities,
            "redundancy": self.redundancy,
            "concepts": self.concepts,
            "concept_min_chunks": self.concept_min_chunks,
            "min_terms": self.min_terms,
            **({"extractor": self.extractor} if self.extractor != "rules" else {}),  # rules: fingerprints as before
            **({"map_score": self.map_score} if self.map_score != "idf" else {}),
        }
        return options if self.rating == "calibrated" else {**options, "rating": self.rating}

    def __repr__(self) -> str:
        extractor = "" if self.extractor == "rules" else f", extractor={self.extractor!r}"
        return f"OfflineModel(name={self.name!r}{extractor}, fingerprint={self.fingerprint!r})"

    # ------------------------------------------------------------------ extract
    def extract(self, chunks: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """Entities, mentions and co-occurrence relations (see module docs).

        >>> out = OfflineModel().extract([{"id": "c1", "text": "Ada Lovelace met Charles Babbage in London."}])
        >>> sorted(e["name"] for e in out["entities"])
        ['Ada Lovelace', 'Charles Babbage', 'London']
        """
        if self.extractor == "spacy":
            return spacy_extract(chunks)
        return extract_entities(chunks, concepts=self.concepts, concept_min_chunks=self.concept_min_chunks)

    # ------------------------------------------------------------------ reports
    def write_report(self, community: dict[str, Any], *, repair: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """An extractive report: verbatim central sentences citing the chunks that contain them.

        >>> leaf = {"community_id": "c1", "level": 0, "entities": [{"name": "Platform"}], "children": [],
        ...         "chunks": [{"ref": "chunk:a.md:c0000", "text": "Platform owns the Ingest Gateway."}]}
        >>> OfflineModel().write_report(leaf)["findings"]
        [{'id': 'finding-1', 'statement': 'Platform owns the Ingest Gateway.', 'evidence': ['chunk:a.md:c0000']}]
        """
        chunks = [(str(c["ref"]), str(c.get("text") or "")) for c in community.get("chunks") or ()]
        entities = [e for e in community.get("entities") or () if str(e.get("name") or "").strip()]
        if chunks:
            nodes = self._leaf_nodes(chunks)
            if not entities:
                entities = extract_entities([{"id": r, "text": t} for r, t in chunks], concepts=False)["entities"]
        else:
            nodes = self._parent_nodes(community.get("children") or ())
        entity_names = list(dict.fromkeys(_forms(e) for e in entities))
        ranked, ranks = self._rank(nodes, entity_names)
        findings = []
        for node in ranked[: self.max_findings]:
            findings.append({"id": f"finding-{len(findings) + 1}", "statement": node.statement, "evidence": list(node.evidence)})
        return {
            "title": self._title(community, nodes, ranks, entity_names),
            "summary": self._summary(ranked),
            "findings": findings,
        }

    def _leaf_nodes(self, chunks: list[tuple[str, str]]) -> list[_Node]:
        limit = REPORT_LIMITS["statement"]
        candidates: dict[str, int] = {}
        long_ones: list[Span] = []
        short: dict[str, int] = {}
        tiny: dict[str, int] = {}
        order = 0
        for _ref, text in chunks:
            for span in sentence_spans(text):
                order += 1
                n_terms = len(terms(span.text))
                if span.kind == "heading" or span.text.startswith("|") or n_terms == 0:
                    continue
                if len(span.text) > limit:
                    long_ones.append(span)
                elif n_terms < 3:
                    tiny.setdefault(span.text, order)
                elif n_terms < self.min_terms:
                    short.setdefault(span.text, order)
                else:
                    candidates.setdefault(span.text, order)
        if len(candidates) < self.max_findings:  # few informative sentences: admit the short ones
            for text, position in short.items():
                candidates.setdefault(text, position)
        if not candidates:  # nothing but very short sentences
            candidates.update(tiny)
        if not candidates:  # every sentence is too long: cut at a clause boundary instead
            for span in long_ones:
                cut = [m.start() + 1 for m in _CLAUSE_END.finditer(span.text) if m.start() + 1 <= limit]
                if cut:
                    candidates.setdefault(span.text[: cut[-1]].rstrip(" ,;:—-"), span.start)
        return [
            _Node(statement, order, tuple(ref for ref, text in chunks if statement in text))
            for statement, order in candidates.items()
            if statement
        ]

    @staticmethod
    def _parent_nodes(children: Any) -> list[_Node]:
        evidence: dict[str, list[str]] = {}
        first: dict[str, int] = {}
        for child in children:
            for finding in child.get("findings") or ():
                statement = str(finding.get("statement") or "")
                if not statement.strip():
                    continue
                refs = evidence.setdefault(statement, [])
                first.setdefault(statement, len(first))
                for ref in finding.get("evidence") or ():
                    if str(ref) not in refs:
                        refs.append(str(ref))
        return [_Node(s, first[s], tuple(refs)) for s, refs in evidence.items() if refs]

    def _rank(self, nodes: list[_Node], entity_names: list[tuple[str, ...]]) -> tuple[list[_Node], np.ndarray]:
        """Nodes by TextRank score (desc, then document order), near-duplicates removed."""
        if not nodes:
            return [], np.zeros(0)
        docs = [terms(n.statement) for n in nodes]
        sim = cosine_matrix(docs)
        lowered = [n.statement.lower() for n in nodes]
        # personalisation: sentences naming more of the community's entities, and saying more, matter more
        personal = [
            (1.0 + sum(1 for forms in entity_names if any(f in text for f in forms[1:]))) * np.log1p(len(doc))
            for text, doc in zip(lowered, docs)
        ]
        ranks = pagerank(sim, personalization=personal)
        order = sorted(range(len(nodes)), key=lambda i: (-ranks[i], nodes[i].order))
        chosen: list[int] = []
        for i in order:
            if all(sim[i, j] < self.redundancy for j in chosen):
                chosen.append(i)
        return [nodes[i] for i in chosen], ranks

    def _summary(self, ranked: list[_Node]) -> str:
        top = sorted(ranked[: self.summary_sentences], key=lambda n: n.order)
        parts: list[str] = []
        for node in top:
            candidate = " ".join(parts + [normalize_ws(node.statement)])
            if len(candidate) > REPORT_LIMITS["summary"]:
                break
            parts.append(normalize_ws(node.statement))
        return " ".join(parts)

    def _title(self, community: dict[str, Any], nodes: list[_Node], ranks: np.ndarray, names: list[tuple[str, ...]]) -> str:
        limit = REPORT_LIMITS["title"]
        scored = []
        lowered = [node.statement.lower() for node in nodes]
        for forms in dict.fromkeys(names):
            name = forms[0]
            hits = [i for i, text in enumerate(lowered) if any(f in text for f in forms[1:])]
            if hits:
                scored.append((-(float(sum(ranks[i] for i in hits)) + 1e-6 * len(hits)), name))
        chosen: list[str] = []
        used_words: set[str] = set()
        for _score, name in sorted(scored):
            words = {w.lower() for w in name.split(" ") if len(w) > 2 and w.lower() not in ("the", "of")}
            if len(chosen) >= self.title_entities or words & used_words or len(_join_names(chosen + [name])) > limit:
                continue
            chosen.append(name)
            used_words |= words
        if chosen:
            return _join_names(chosen)
        child_titles = [normalize_ws(str(c.get("title") or "")) for c in community.get("children") or ()]
        joined = ""
        for title in [t for t in child_titles if t][:2]:
            candidate = f"{joined}; {title}" if joined else title
            if len(candidate) > limit:
                break
            joined = candidate
        if joined:
            return joined
        if names:
            return normalize_ws(names[0][0])[:limit].strip() or f"Community {community.get('community_id')}"[:limit]
        return f"Community {community.get('community_id', '')}".strip()[:limit]

    # ------------------------------------------------------------- map and rate
    def map_findings(self, query: str, units: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """Findings relevant to ``query``, each statement scored on its own, zero omitted (see
        :func:`~crux_nb.models.offline_map.map_output`).

        With ``map_score="idf"`` the query's terms are weighted by the idf of the ``"corpus"`` statistics the
        units carry (the first unit's: a search gives every unit the same); without them every term weighs 1.

        >>> unit = {"community_id": "c1", "level": 0, "title": "Gateway", "summary": "",
        ...         "findings": [{"id": "c1:f1", "statement": "Platform owns the Ingest Gateway."},
        ...                      {"id": "c1:f2", "statement": "Lunch is at noon."}]}
        >>> [f["finding_ids"] for f in OfflineModel().map_findings("Who owns the gateway?", [unit])["findings"]]
        [['c1:f1']]
        >>> question = "Who owns the gateway in version 3.12?"  # the finding names 2 of its 4 terms
        >>> [f["score"] for f in OfflineModel().map_findings(question, [unit])["findings"]]
        [68.75]
        >>> unit["corpus"] = {"documents": 50, "df": {"gateway": 2, "own": 40, "version": 30}}  # no "3.12"
        >>> [f["score"] for f in OfflineModel().map_findings(question, [unit])["findings"]]
        [53.23]
        """
        return map_output(query, units, self.map_score)

    def rate(self, query: str, reports: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> dict[str, Any]:
        """A rating 0..100 per report (title + summary + finding statements), input order (see ``rating``).

        >>> reports = [{"community_id": "c1", "title": "Gateway owners", "summary": "Platform owns the gateway."},
        ...            {"community_id": "c2", "title": "Lunch", "summary": "Lunch is at noon."}]
        >>> a, b = OfflineModel().rate("Who owns the gateway?", reports)["ratings"]
        >>> a["rating"] > b["rating"] == 0.0
        True
        """
        docs = []
        for report in reports:
            parts = [str(report.get("title") or ""), str(report.get("summary") or "")]
            parts += [str(f.get("statement") or "") for f in report.get("findings") or ()]
            docs.append(terms(" ".join(parts)))
        scores = calibrated_ratings(terms(query), docs) if self.rating == "calibrated" else BM25(docs).scaled(terms(query))
        return {"ratings": [{"community_id": str(r["community_id"]), "rating": s} for r, s in zip(reports, scores)]}


def _forms(entity: dict[str, Any]) -> tuple[str, ...]:
    """``(display name, lowercase search forms...)``: the name, its aliases and, for a
    person-like two- or three-word name, its last word (``Ebenezer Scrooge`` → ``scrooge``)."""
    name = normalize_ws(str(entity["name"]))
    forms = [name.lower()] + [normalize_ws(str(a)).lower() for a in entity.get("aliases") or () if str(a).strip()]
    words = name.split(" ")
    if 2 <= len(words) <= 3 and all(w[:1].isupper() and w.isalpha() for w in words) and len(words[-1]) >= 4:
        forms.append(words[-1].lower())
    return (name, *dict.fromkeys(forms))


def _join_names(names: list[str]) -> str:
    if len(names) <= 1:
        return "".join(names)
    return ", ".join(names[:-1]) + " and " + names[-1]
