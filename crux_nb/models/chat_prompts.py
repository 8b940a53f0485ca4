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

from ..schema import ENTITY_TYPES
from .budget import ITEM_CHARS
from .validation import REPORT_LIMITS, issued_ids_for, repair_lines

__all__ = ["SYSTEM", "REPAIR_SYSTEM", "build_messages", "build_prompt", "build_schema", "EVIDENCE_CHARS",
           "ITEM_CHARS", "number_chunks", "fit_community"]

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
    # chunks are numbered, never shown by id: a small model copies "c0001" into its entity names
    lines = [
        "Extract canonical entity names mentioned in each text and concise relationships between entities.",
        "The texts are numbered [1], [2], ...; the numbers are not names: cite a text by its number in chunk_id.",
        f"Entity types: {', '.join(ENTITY_TYPES)}.",
        'Answer with JSON: {"entities": [{"name", "type", "aliases"}], "mentions": [{"chunk_id", "name"}], '
        '"related": [{"from", "to", "description", "chunk_ids"}]}.',
        "",
    ]
    lines += [f"[{n}] {str(ch.get('text') or '')[:EVIDENCE_CHARS]}" for n, ch in enumerate(chunks, 1)]
    return "\n".join(lines)


def number_chunks(output: Any, chunks: list[dict[str, Any]]) -> Any:
    """A chat model's extraction output with chunk numbers (1, 2, ...) replaced by the chunks' ids.

    A number that names no chunk becomes ``"#<n>"``, which validation reports as an unknown chunk id.

    >>> number_chunks({"entities": [], "mentions": [{"chunk_id": 2, "name": "Ada"}],
    ...                "related": [{"from": "Ada", "to": "Bo", "chunk_ids": [1, 9]}]},
    ...               [{"id": "chunk:a:c0"}, {"id": "chunk:a:c1"}])["related"][0]["chunk_ids"]
    ['chunk:a:c0', '#9']
    """
    if not isinstance(output, dict):
        return output

    def ref(value: Any) -> Any:
        number = value if isinstance(value, int) else int(value) if isinstance(value, str) and value.isdigit() else None
        if number is None:
            return value
        return chunks[number - 1]["id"] if 1 <= number <= len(chunks) else f"#{number}"

    out = dict(output)
    if isinstance(out.get("mentions"), list):
        out["mentions"] = [{**m, "chunk_id": ref(m.get("chunk_id"))} if isinstance(m, dict) else m
                           for m in out["mentions"]]
    if isinstance(out.get("related"), list):
        out["related"] = [{**r, "chunk_ids": [ref(c) for c in r["chunk_ids"]]}
                          if isinstance(r, dict) and isinstance(r.get("chunk_ids"), list) else r
                          for r in out["related"]]
    return out


def fit_community(community: dict[str, Any], budget: int) -> dict[str, Any]:
    """``community`` cut to ``budget`` characters of report input: evidence chunks (as shown, at most
    :data:`EVIDENCE_CHARS` each) or child findings are kept in order while they fit, at least one.

    >>> leaf = {"community_id": "c1", "entities": [], "children": [],
    ...         "chunks": [{"ref": f"r{i}", "text": "x" * 1000} for i in range(5)]}
    >>> len(fit_community(leaf, 2500)["chunks"])
    2
    """
    used = sum(len(str(e.get("name", ""))) + len(str(e.get("description") or "")) + ITEM_CHARS
               for e in community.get("entities") or ())
    kept = []
    for chunk in community.get("chunks") or ():
        size = min(len(str(chunk.get("text") or "")), EVIDENCE_CHARS) + len(str(chunk.get("ref", ""))) + ITEM_CHARS
        if kept and used + size > budget:
            break
        kept.append(chunk)
        used += size
    children = []
    for child in community.get("children") or ():
        findings = []
        for f in child.get("findings") or ():
            size = len(str(f.get("statement", ""))) + sum(len(str(r)) + 2 for r in f.get("evidence") or ()) + ITEM_CHARS
            if (children or findings) and used + size > budget:
                break
            findings.append(f)
            used += size
        children.append({**child, "findings": findings})
    return {**community, "chunks": kept, "children": children}


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


#: Tokens one output item takes at most in practice (an entity, a mention and a relation together; a
#: finding with its evidence; a map finding), and a report's title and summary: the answer's lists are
#: bounded so that the whole answer fits ``max_tokens`` (an unbounded list lets a small model repeat items
#: until the limit cuts its JSON).
ITEM_TOKENS = {"extract": 100, "write_report": 80, "map_findings": 60}
HEAD_TOKENS = {"write_report": 150}


def output_items(task: str, max_tokens: int | None) -> int | None:
    """The most items each list of the answer may hold under ``max_tokens`` (None: no limit set).

    >>> output_items("extract", 400), output_items("write_report", 400), output_items("rate", 400)
    (4, 3, None)
    """
    if max_tokens is None or task not in ITEM_TOKENS:
        return None
    return max(1, (max_tokens - HEAD_TOKENS.get(task, 0)) // ITEM_TOKENS[task])


def build_schema(task: str, args: tuple, *, max_items: int | None = None) -> dict[str, Any]:
    """The JSON schema of the task output, with issued ids as enums; ``max_items`` bounds the answer's lists."""
    schema = _schema(task, args)
    return schema if max_items is None else _cap(schema, max_items)


def _cap(schema: Any, limit: int) -> Any:
    if isinstance(schema, dict):
        out = {k: _cap(v, limit) for k, v in schema.items()}
        if out.get("type") == "array" and "minItems" not in out:  # rate's one-per-report list keeps its length
            out["maxItems"] = min(out.get("maxItems", limit), limit)
        return out
    return schema


def _schema(task: str, args: tuple) -> dict[str, Any]:
    issued = issued_ids_for(task, args)
    text = {"type": "string", "minLength": 1}
    if task == "extract":
        chunk_id = {"type": "integer", "enum": list(range(1, len(args[0]) + 1))}  # numbers, see _extract_prompt
        kind = {"type": "string", "enum": list(ENTITY_TYPES)}
        entity = _obj({"name": text, "type": kind, "aliases": {"type": "array", "items": text, "maxItems": 5}}, ["name", "type"])
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
