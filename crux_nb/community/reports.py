"""Writing community reports bottom-up through the model port, reusing unchanged ones.

A leaf's report is written from its entities and evidence chunks; a parent's
from its children's findings only (each child contributes at most 2,000
characters). A report is reused without a model call when a community with the
same member hash was reported under the same strategy before: an identical
rebuild makes zero calls, and one changed leaf rewrites only that leaf and its
ancestors.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from .._hashing import stable_hash
from .cluster import Community
from .config import CHILD_CONTRIBUTION
from .report import Finding, Report


def member_hashes(communities: list[Community], chunk_text: dict[str, str], entity_names: dict[str, str]) -> dict[str, str]:
    """Leaf: its chunks' texts and its entities' names; parent: its children's hashes."""
    by_id = {c.community_id: c for c in communities}
    out: dict[str, str] = {}

    def walk(cid: str) -> str:
        if cid in out:
            return out[cid]
        c = by_id[cid]
        if c.child_ids:
            value = stable_hash({"children": sorted(walk(k) for k in c.child_ids)})
        else:
            value = stable_hash({"chunks": [(r, chunk_text.get(r, "")) for r in c.chunk_refs],
                                 "entities": [(e, entity_names.get(e, e)) for e in c.entity_refs]})
        out[cid] = value
        return value

    for c in communities:
        walk(c.community_id)
    return out


def leaf_input(c: Community, chunk_text: dict[str, str], entities: dict[str, tuple[str, Any]]) -> dict[str, Any]:
    ents = []
    for ref in c.entity_refs:
        name, description = entities.get(ref, (ref.split(":", 1)[1], None))
        ents.append({"name": name, **({"description": description} if isinstance(description, str) else {})})
    return {"community_id": c.community_id, "level": c.level, "entities": ents,
            "chunks": [{"ref": r, "text": chunk_text[r]} for r in c.chunk_refs], "children": []}


def parent_input(c: Community, children: list[Report]) -> dict[str, Any]:
    kids = []
    for child in children:
        budget = CHILD_CONTRIBUTION - len(child.title) - min(len(child.summary), 500)
        findings = []
        for f in child.findings:
            if len(f.statement) > budget:
                break
            budget -= len(f.statement)
            findings.append({"id": f.id, "statement": f.statement, "evidence": list(f.evidence)})
        kids.append({"community_id": child.community_id, "title": child.title, "summary": child.summary[:500],
                     "findings": findings})
    return {"community_id": c.community_id, "level": c.level, "entities": [], "chunks": [], "children": kids}


def to_report(c: Community, output: dict[str, Any], member_hash: str) -> Report:
    findings = []
    used: set[str] = set()
    for k, f in enumerate(output.get("findings", [])):
        fid = f.get("id") or f"f{k + 1}"
        if fid in used:  # the model repeated an id: keep findings distinct
            fid = f"{fid}-{k + 1}"
        used.add(fid)
        findings.append(Finding(fid, f["statement"], tuple(f["evidence"]),
                                tuple(a["assertion_id"] if isinstance(a, dict) else a for a in f.get("assertion_refs", ())),
                                community_id=c.community_id))
    return Report(community_id=c.community_id, level=c.level, parent_id=c.parent_id, title=output["title"],
                  summary=output.get("summary", ""), findings=tuple(findings), member_hash=member_hash,
                  n_entities=len(c.entity_refs), n_chunks=len(c.chunk_refs))


def write_reports(communities: list[Community], *, model: Any, chunk_text: dict[str, str],
                  entities: dict[str, tuple[str, Any]], reusable: dict[str, Report], log: Any,
                  executor: Any = None, progress: bool | None = None) -> tuple[dict[str, Report], int]:
    """All reports, leaves first, one level at a time; returns (reports by id, number written)."""
    from ..models.remote import run_calls

    hashes = member_hashes(communities, chunk_text, {r: n for r, (n, _) in entities.items()})
    reports: dict[str, Report] = {}
    due = [c for c in communities if hashes[c.community_id] not in reusable]
    bar = _bar(len(due), progress)
    written = 0
    try:
        for level in sorted({c.level for c in communities}):
            todo = []
            for c in sorted((c for c in communities if c.level == level), key=lambda c: c.community_id):
                old = reusable.get(hashes[c.community_id])
                if old is not None:
                    reports[c.community_id] = replace(old, community_id=c.community_id, parent_id=c.parent_id,
                                                      level=c.level, findings=tuple(replace(f, community_id=c.community_id)
                                                                                    for f in old.findings))
                    continue
                payload = (parent_input(c, [reports[k] for k in c.child_ids]) if c.child_ids
                           else leaf_input(c, chunk_text, entities))
                todo.append((c, payload))

            outputs = run_calls([(model, "write_report", (payload,), {"prompt_id": f"community:{c.community_id}"})
                                 for c, payload in todo], log=log, executor=executor if len(todo) > 1 else None)
            for (c, _), output in zip(todo, outputs):
                reports[c.community_id] = to_report(c, output, hashes[c.community_id])
                written += 1
                bar.update(1)
    finally:
        bar.close()
    return reports, written


def _bar(total: int, progress: bool | None):
    from tqdm.auto import tqdm

    show = total >= 10 if progress is None else progress
    return tqdm(total=total, desc="writing reports", unit="report", disable=not show)
