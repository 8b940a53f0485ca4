"""Global search: map-call outputs to candidates, and the deterministic reduce into finding hits."""

from __future__ import annotations

from typing import Any

from ..._hashing import stable_hash
from ...hits import AssertionRef, FindingCitation, FindingHit, Lineage
from ...community import Report

MIN_SCORE = 0.000001


def candidates(output: dict[str, Any]) -> list[dict[str, Any]]:
    """The candidate findings of one ``map_findings`` output: statement, sorted cited ids, score, community.

    >>> candidates({"findings": [{"statement": "Ada leads.", "finding_ids": ["c1:f2", "c1:f1"], "score": 80}]})
    [{'statement': 'Ada leads.', 'finding_ids': ('c1:f1', 'c1:f2'), 'score': 80.0, 'community_id': 'c1'}]
    """
    out = []
    for f in output.get("findings", []):
        ids = [str(i) for i in f["finding_ids"]]
        out.append({"statement": f["statement"], "finding_ids": tuple(sorted(ids)), "score": float(f["score"]),
                    "community_id": ids[0].split(":", 1)[0]})
    return out


def reduce(cands: list[dict[str, Any]], units: list[Report], *, namespace: str, limit: int,
           cited: dict[str, tuple[str, ...]] | None = None) -> list[FindingHit]:
    """The finding hits of a search: candidates merged by cited id set (max score, ties to the smaller
    community id), sorted by (score, community, ids), cut to ``limit``, cited from ``units``.

    Parameters
    ----------
    cands : list of dict
        From :func:`candidates`, over every map output of the search.
    units : list of Report
        The units the findings were mapped from (their evidence and lineage become the citations).
    namespace : str
        The hits' namespace.
    limit : int
        Hits kept.
    cited : dict, optional
        Receives each hit's finding target → the unit finding ids it cites.

    Examples
    --------
    >>> from crux_nb.community import Finding, Report
    >>> unit = Report("c1", 0, None, "T", "S", (Finding("c1:f1", "Ada leads.", ("chunk:a.md:c0000",)),))
    >>> out = {"findings": [{"statement": "Ada leads.", "finding_ids": ["c1:f1"], "score": 80}]}
    >>> [(h.content, h.score) for h in reduce(candidates(out) * 2, [unit], namespace="docs", limit=5)]
    [('Ada leads.', 0.8)]
    """
    merged: dict[str, dict[str, Any]] = {}
    for c in cands:
        key = "|".join(c["finding_ids"])
        have = merged.get(key)
        if have is None or c["score"] > have["score"] or (c["score"] == have["score"] and c["community_id"] < have["community_id"]):
            merged[key] = c
    ordered = sorted(merged.items(), key=lambda kv: (-kv[1]["score"], kv[1]["community_id"], kv[0]))[:limit]
    findings = {f.id: (f, u) for u in units for f in u.findings}
    hits = []
    for _, c in ordered:
        supports, assertions, lineage = [], [], None
        for fid in c["finding_ids"]:
            if fid not in findings:
                continue
            finding, unit = findings[fid]
            supports += [s for s in finding.evidence if s not in supports]
            assertions += [a for a in finding.assertion_refs if a not in assertions]
            lineage = lineage or unit.lineage

        citation = FindingCitation(
            finding_target="finding:" + stable_hash({"statement": c["statement"], "ids": list(c["finding_ids"])}),
            supports=tuple(supports), assertion_refs=tuple(AssertionRef(a) for a in assertions),
            lineage=lineage or Lineage(None, "unknown", c["community_id"]))
        if cited is not None:
            cited[citation.finding_target] = c["finding_ids"]
        hits.append(FindingHit(namespace=namespace, content=c["statement"],
                               score=min(1.0, max(MIN_SCORE, c["score"] / 100)), citation=citation))
    return hits
