"""Community generations as frames: building the rows of one generation and reading them back."""

from __future__ import annotations

import hashlib
from dataclasses import replace
from typing import Any

import pandas as pd

from .._hashing import canonical_json
from ..refs import decode_ref, encode_ref, is_ref
from ..schema import coerce, empty_frame
from .cluster import Community
from .report import Finding, Report

COMMUNITY_TABLES = ("community_generations", "communities", "community_members", "reports", "report_findings")


def input_fingerprint(state: Any, visible_sources: set[str] | None) -> str:
    """A hash of everything clustering and reports read: visible chunks, entities, edges and evidence."""
    chunks = state.chunks if visible_sources is None else state.chunks[state.chunks["source_id"].isin(visible_sources)]
    parts = [chunks[["ref", "content"]], state.entities[["ref", "canonical_name", "description"]],
             state.edges[["edge_id", "type", "from_ref", "to_ref"]], state.edge_evidence[["edge_id", "chunk_ref"]]]
    digest = hashlib.sha256()
    for frame in parts:
        digest.update(pd.util.hash_pandas_object(frame.astype(str), index=False).to_numpy().tobytes())
        digest.update(b"|")
    return digest.hexdigest()[:16]


def generation_frames(scope: str, generation_id: str, communities: list[Community], reports: dict[str, Report], *,
                      input_fp: str, strategy_fp: str, view: tuple[str | None, str | None], sequence: int,
                      source_hashes: dict[str, str]) -> dict:
    pointer = pd.DataFrame([{"scope": scope, "generation_id": generation_id, "input_fingerprint": input_fp,
                             "strategy_fingerprint": strategy_fp, "view_id": view[0], "view_revision": view[1],
                             "sequence": sequence, "source_hashes": canonical_json(source_hashes)}])
    comm_rows, member_rows, report_rows, finding_rows = [], [], [], []
    for c in communities:
        r = reports[c.community_id]
        comm_rows.append({"scope": scope, "generation_id": generation_id, "community_id": c.community_id,
                          "level": c.level, "kind": c.kind, "parent_id": c.parent_id, "child_ids": c.child_ids,
                          "n_chunks": len(c.chunk_refs), "n_entities": len(c.entity_refs),
                          "estimated_chars": c.estimated_chars, "member_hash": r.member_hash})
        if not c.child_ids:
            member_rows += [{"scope": scope, "generation_id": generation_id, "community_id": c.community_id,
                             "member_ref": m, "member_kind": m.split(":", 1)[0]} for m in c.chunk_refs + c.entity_refs]
        report_rows.append({"scope": scope, "generation_id": generation_id, "community_id": c.community_id,
                            "level": c.level, "parent_id": c.parent_id, "title": r.title, "summary": r.summary,
                            "view_revision": view[1], "graph_generation": input_fp, "strategy_fingerprint": strategy_fp,
                            "member_hash": r.member_hash, "n_entities": r.n_entities, "n_chunks": r.n_chunks,
                            "n_assertions": 0})
        finding_rows += [{"scope": scope, "generation_id": generation_id, "community_id": c.community_id,
                          "finding_id": f.id, "ordinal": k, "statement": f.statement,
                          "evidence": _encoded(f.evidence), "assertion_refs": tuple(f.assertion_refs)}
                         for k, f in enumerate(r.findings)]
    return {"community_generations": pointer, "communities": pd.DataFrame(comm_rows),
            "community_members": pd.DataFrame(member_rows), "reports": pd.DataFrame(report_rows),
            "report_findings": pd.DataFrame(finding_rows)}


def with_generation(state: Any, scope: str, frames: dict) -> Any:
    """Replace ``scope``'s community generation in ``state`` (the previous one is dropped)."""
    changes = {}
    for table in COMMUNITY_TABLES:
        old = state.frame(table)
        kept = old[old["scope"] != scope]
        new = frames[table]
        parts = [f for f in (kept, new) if len(f)]
        merged = pd.concat(parts, ignore_index=True) if parts else empty_frame(table)
        changes[table] = coerce(merged, table)
    return replace(state, **changes, version=state.version + 1)


def _encoded(evidence: tuple) -> tuple[str, ...]:
    return tuple(encode_ref(e) if is_ref(e) else str(e) for e in evidence)


def read_reports(state: Any, scope: str) -> list[Report]:
    """The persisted reports of ``scope``, with their generation (refs decoded)."""
    reports = state.reports[state.reports["scope"] == scope]
    findings = state.report_findings[state.report_findings["scope"] == scope]
    by_community: dict[str, list[Finding]] = {}
    for row in findings.sort_values(["community_id", "ordinal"]).itertuples(index=False):
        by_community.setdefault(row.community_id, []).append(
            Finding(row.finding_id, row.statement, tuple(decode_ref(e) for e in row.evidence), tuple(row.assertion_refs),
                    community_id=row.community_id))
    out = []
    for row in reports.sort_values(["level", "community_id"]).itertuples(index=False):
        out.append(Report(
            community_id=row.community_id, generation_id=row.generation_id, level=int(row.level),
            parent_id=row.parent_id if isinstance(row.parent_id, str) else None, title=row.title, summary=row.summary,
            findings=tuple(by_community.get(row.community_id, ())),
            view_revision=row.view_revision if isinstance(row.view_revision, str) else None,
            graph_generation=row.graph_generation, strategy_fingerprint=row.strategy_fingerprint,
            member_hash=row.member_hash, n_entities=int(row.n_entities), n_chunks=int(row.n_chunks)))
    return out


def read_communities(state: Any, scope: str) -> list[Community]:
    """The stored tree of ``scope`` (leaves with their members; parents with their children only)."""
    comms = state.communities[state.communities["scope"] == scope]
    members = state.community_members[state.community_members["scope"] == scope]
    by_leaf: dict[str, list[str]] = {}
    for cid, ref in zip(members["community_id"].tolist(), members["member_ref"].tolist()):
        by_leaf.setdefault(cid, []).append(ref)
    out = []
    for row in comms.sort_values(["level", "community_id"]).itertuples(index=False):
        refs = sorted(by_leaf.get(row.community_id, ()))
        out.append(Community(community_id=row.community_id, level=int(row.level), kind=row.kind,
                             parent_id=row.parent_id if isinstance(row.parent_id, str) else None,
                             child_ids=tuple(row.child_ids), chunk_refs=tuple(r for r in refs if r.startswith("chunk:")),
                             entity_refs=tuple(r for r in refs if not r.startswith("chunk:")),
                             estimated_chars=int(row.estimated_chars)))
    return out


def reusable_reports(state: Any, strategy_fp: str) -> dict[str, Report]:
    """Reports of every stored generation written under ``strategy_fp``, by member hash."""
    out: dict[str, Report] = {}
    for scope in sorted(set(state.reports["scope"])):
        for r in read_reports(state, scope):
            if r.strategy_fingerprint != strategy_fp or r.member_hash in out:
                continue
            # as written: no generation, evidence as the encoded refs a model reads and writes
            out[r.member_hash] = replace(r, findings=tuple(replace(f, evidence=_encoded(f.evidence)) for f in r.findings),
                                         generation_id=None, view_revision=None, graph_generation=None,
                                         strategy_fingerprint=None)
    return out
