"""Prompts and JSON schemas :class:`~crux_nb.models.ChatModel` sends for each task.

Prompts follow upstream's wording where it exists (community reports, global
search map, entity extraction). Schemas mirror :mod:`crux_nb.models.validation`
and, where possible, restrict cited ids to the ones issued with ``enum`` (chunk
ids, evidence refs, finding ids, community ids), and bound array sizes so that a
grammar-constrained small model cannot loop until ``max_tokens``.

A repair prompt is the base prompt plus ``"\\n\\nFix these validation errors:\\n"``
and one ``<path>: <code>`` line per issue (content-free, see
:func:`crux_nb.models.validation.repair_lines`).
"""

from __future__ import annotations

import json
from typing import Any

from .validation import REPORT_LIMITS, issued_ids_for, repair_lines

__all__ = ["SYSTEM", "REPAIR_SYSTEM", "build_messages", "build_prompt", "build_schema", "EVIDENCE_CHARS"]

#: Characters of each chunk shown in extraction and report prompts (as upstream).
EVIDENCE_CHARS = 1200
_MAX_ENUM = 500  # larger id sets are described in the prompt instead of enumerated

SYSTEM = {
    "extract": "Return only entity mentions and entity relationships that match the requested schema.",
    "write_report": "Return a community report that matches the requested schema.",
    "map_findings": "Return relevant connected-knowledge findings matching the schema.",
    "rate": "Return relevance ratings of community reports matching the schema.",
}
REPAIR_SYSTEM = {
    "extract": "Return corrected entity mentions and entity relationships that match the requested schema.",
    "write_report": "Return a corrected community report that matches the requested schema.",
    "map_findings": "Return corrected relevant connected-knowledge findings matching the schema.",
    "rate": "Return corrected relevance ratings of community reports matching the schema.",
}


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def _ids(values: frozenset[str] | set[str] | list[str]) -> dict[str, Any]:
    ordered = sorted(values)
    if 0 < len(ordered) <= _MAX_ENUM:
        return {"type": "string", "enum": ordered}
    return {"type": "string", "minLength": 1}


def _extract_prompt(chunks: list[dict[str, Any]]) -> str:
    lines = [
        "Extract canonical entity names mentioned in each chunk and concise relationships between entities.",
        "Use chunk ids exactly as shown.",
        'Answer with JSON: {"entities": [{"name", "type", "aliases"}], "mentions": [{"chunk_id", "name"}], '
        '"related": [{"from", "to", "description", "chunk_ids"}]}.',
        "",
    ]
    lines += [f"[{ch['id']}] {str(ch.get('text') or '')[:EVIDENCE_CHARS]}" for ch in chunks]
    return "\n".join(lines)


def _report_prompt(community: dict[str, Any]) -> str:
    blocks = [f"Community: {community.get('community_id', '')}"]
    shape = (
        'Answer with JSON: {"title": "<= 120 characters", "summary": "<= 2000 characters", '
        '"findings": [{"id", "statement": "<= 500 characters", "evidence": ["<ref>", ...]}]}.'
    )
    chunks = community.get("chunks") or []
    if chunks:
        blocks.append("Write findings supported only by the listed evidence refs. Cite refs exactly as shown.\n" + shape)
        entities = [
            f"{e['name']}: {e.get('description') or ''}".rstrip(": ").rstrip()
            for e in community.get("entities") or ()
        ]
        if entities:
            blocks.append("Entities:\n" + "\n".join(entities))
        blocks.append(
            "Evidence:\n" + "\n".join(f"[{c['ref']}] {str(c.get('text') or '')[:EVIDENCE_CHARS]}" for c in chunks)
        )
    else:
        blocks.append("Use only these child findings as evidence. Cite their evidence refs exactly as shown.\n" + shape)
        lines = []
        for child in community.get("children") or ():
            for f in child.get("findings") or ():
                lines.append(f"- {f.get('statement', '')}")
                lines.append(f"  evidence: {', '.join(str(r) for r in f.get('evidence') or ())}")
        if lines:
            blocks.append("\n".join(lines))
    return "\n\n".join(b for b in blocks if b)


def _map_prompt(query: str, units: list[dict[str, Any]]) -> str:
    communities = [
        {
            "community_id": u.get("community_id"),
            "level": u.get("level"),
            "title": u.get("title"),
            "summary": u.get("summary"),
            "findings": [{"id": f["id"], "statement": f.get("statement")} for f in u.get("findings") or ()],
        }
        for u in units
    ]
    return (
        "List the findings relevant to the query. Each cites the ids of the findings it uses (finding_ids, "
        "exactly as given) and has a relevance score from 0 to 100. Omit irrelevant findings.\n"
        'Answer with JSON: {"findings": [{"statement", "finding_ids": [...], "score"}]}.\n\n'
        + _compact({"query": query, "communities": communities})
    )


def _rate_prompt(query: str, reports: list[dict[str, Any]]) -> str:
    shown = [
        {
            "community_id": r.get("community_id"),
            "title": r.get("title"),
            "summary": r.get("summary"),
            "findings": [{"id": f.get("id"), "statement": f.get("statement")} for f in r.get("findings") or ()],
        }
        for r in reports
    ]
    return (
        "Rate how relevant each community report is to the query, from 0 (unrelated) to 100 (answers it). "
        "Give one rating per community_id, exactly as given.\n"
        'Answer with JSON: {"ratings": [{"community_id", "rating"}]}.\n\n'
        + _compact({"query": query, "reports": shown})
    )


def build_prompt(task: str, args: tuple) -> str:
    """The user prompt for one task call (without repair lines)."""
    if task == "extract":
        return _extract_prompt(*args)
    if task == "write_report":
        return _report_prompt(*args)
    if task == "map_findings":
        return _map_prompt(*args)
    if task == "rate":
        return _rate_prompt(*args)
    raise ValueError(f"unknown task {task!r}")


def build_messages(task: str, args: tuple, repair: list[dict[str, str]] | None) -> list[dict[str, str]]:
    """System and user messages, with the repair system and lines on a repair call."""
    prompt = build_prompt(task, args)
    if repair is None:
        return [{"role": "system", "content": SYSTEM[task]}, {"role": "user", "content": prompt}]
    prompt += "\n\nFix these validation errors:\n" + repair_lines(repair)
    return [{"role": "system", "content": REPAIR_SYSTEM[task]}, {"role": "user", "content": prompt}]


def _obj(properties: dict[str, Any], required: list[str]) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": required, "additionalProperties": False}


def build_schema(task: str, args: tuple) -> dict[str, Any]:
    """The JSON schema of the task output, with issued ids as enums."""
    issued = issued_ids_for(task, args)
    text = {"type": "string", "minLength": 1}
    if task == "extract":
        chunk_id = _ids(issued)
        entity = _obj({"name": text, "type": {"type": "string"}, "aliases": {"type": "array", "items": text, "maxItems": 5}}, ["name"])
        mention = _obj({"chunk_id": chunk_id, "name": text}, ["chunk_id", "name"])
        relation = _obj(
            {
                "from": text,
                "to": text,
                "description": {"type": "string", "maxLength": REPORT_LIMITS["relation_description"]},
                "chunk_ids": {"type": "array", "items": chunk_id, "maxItems": max(1, len(issued))},
            },
            ["from", "to"],
        )
        return _obj(
            {
                "entities": {"type": "array", "items": entity, "maxItems": 40},
                "mentions": {"type": "array", "items": mention, "maxItems": 120},
                "related": {"type": "array", "items": relation, "maxItems": 60},
            },
            ["entities", "mentions", "related"],
        )
    if task == "write_report":
        finding = _obj(
            {
                "id": text,
                "statement": {"type": "string", "minLength": 1, "maxLength": REPORT_LIMITS["statement"]},
                "evidence": {"type": "array", "items": _ids(issued), "minItems": 1, "maxItems": 8},
            },
            ["statement", "evidence"],
        )
        return _obj(
            {
                "title": {"type": "string", "minLength": 1, "maxLength": REPORT_LIMITS["title"]},
                "summary": {"type": "string", "maxLength": REPORT_LIMITS["summary"]},
                "findings": {"type": "array", "items": finding, "maxItems": 8},
            },
            ["title", "summary", "findings"],
        )
    if task == "map_findings":
        finding = _obj(
            {
                "statement": text,
                "finding_ids": {"type": "array", "items": _ids(issued), "minItems": 1, "maxItems": 8},
                "score": {"type": "integer", "minimum": 0, "maximum": 100},
            },
            ["statement", "finding_ids", "score"],
        )
        return _obj({"findings": {"type": "array", "items": finding, "maxItems": max(1, min(len(issued), 20))}}, ["findings"])
    if task == "rate":
        rating = _obj({"community_id": _ids(issued), "rating": {"type": "integer", "minimum": 0, "maximum": 100}}, ["community_id", "rating"])
        count = len(issued)
        return _obj({"ratings": {"type": "array", "items": rating, "minItems": count, "maxItems": max(1, count)}}, ["ratings"])
    raise ValueError(f"unknown task {task!r}")
