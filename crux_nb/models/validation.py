"""Per-task output schemas and content-free validation issues.

:func:`validate_output` checks what a :class:`~crux_nb.models.KnowledgeModel`
returned for one task and gives back ``(cleaned, issues)``. ``cleaned`` is the
output with defaults filled in and ignored extra keys dropped (``None`` when
there are issues); ``issues`` is a list of ``{"path", "code"}`` dicts.

Issues are *content-free*, so they can be shown to a model in a repair prompt,
logged, or raised without leaking text: a path is built from numeric indexes
(``[0]``), identifier-like keys (kept) and any other key (``*``), joined with
``.`` (``findings.[0].score``; the root is ``""``). Codes are fixed strings:

``invalid_type``, ``required``, ``too_small``, ``too_big``, ``not_finite``,
``unrecognized_keys`` (schema), and the task checks ``unknown_finding_id``
(``findings.finding_ids``), ``unknown_community_id`` (``ratings.community_id``),
``unknown_chunk_id`` (``mentions.chunk_id`` / ``related.chunk_ids``),
``unknown_evidence_ref`` (``findings.evidence``) and ``duplicate_finding_id``
(``findings.id``). Task checks run only when the schema passes, as upstream.

Schemas (lengths in code points):

* ``write_report`` (strict, no extra keys): ``title`` 1..120, ``summary`` ≤2000,
  ``findings`` (default ``[]``) of ``{id? non-empty, statement 1..500,
  evidence: ≥1 non-empty ref strings}``.
* ``map_findings`` (extra keys ignored): ``findings`` of ``{statement non-empty,
  finding_ids: non-empty list of non-empty strings, score finite 0..100}``.
* ``rate`` (extra keys ignored): ``ratings`` of ``{community_id non-empty,
  rating finite 0..100}``.
* ``extract`` (extra keys ignored): ``entities`` of ``{name non-empty, type?,
  aliases? [str], description? ≤2000}``, ``mentions`` of ``{chunk_id, name}``,
  ``related`` of ``{from, to, description? ≤500, chunk_ids? [str]}``.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import Any, Literal

from ..validation import MODEL_TASKS

__all__ = [
    "Task",
    "TASKS",
    "Issue",
    "format_path",
    "validate_output",
    "issued_ids_for",
    "repair_lines",
    "REPORT_LIMITS",
]

Task = Literal["extract", "write_report", "map_findings", "rate"]
TASKS: tuple[str, ...] = MODEL_TASKS  # the one task list (crux_nb.validation)
Issue = dict[str, str]

REPORT_LIMITS = {"title": 120, "summary": 2000, "statement": 500, "relation_description": 500, "description": 2000}
MAX_ISSUES = 50
_IDENT = re.compile(r"^[A-Za-z_][A-Za-z0-9_]{0,63}$")


def format_path(segments: Iterable[int | str]) -> str:
    """Content-free path: ``[i]`` for indexes, identifier keys kept, other keys ``*``."""
    parts = []
    for seg in segments:
        if isinstance(seg, bool):
            parts.append("*")
        elif isinstance(seg, int):
            parts.append(f"[{seg}]")
        elif isinstance(seg, str) and _IDENT.match(seg):
            parts.append(seg)
        else:
            parts.append("*")
    return ".".join(parts)


def repair_lines(issues: Iterable[Issue]) -> str:
    """The issues as prompt lines ``<path>: <code>`` (root shown as ``(root)``)."""
    lines = [f"{issue.get('path') or '(root)'}: {issue.get('code') or 'invalid'}" for issue in issues]
    return "\n".join(lines) if lines else "(root): invalid"


class _Checker:
    """Collects issues while walking one output object."""

    def __init__(self) -> None:
        self.issues: list[Issue] = []

    def add(self, path: tuple, code: str) -> None:
        issue = {"path": format_path(path), "code": code}
        if issue not in self.issues and len(self.issues) < MAX_ISSUES:
            self.issues.append(issue)

    def obj(self, value: Any, path: tuple) -> dict | None:
        if not isinstance(value, dict):
            self.add(path, "invalid_type")
            return None
        return value

    def strict_keys(self, value: dict, allowed: set[str], path: tuple) -> None:
        for key in value:
            if key not in allowed:
                self.add(path + (key if isinstance(key, str) else "*",), "unrecognized_keys")

    def lst(self, parent: dict, key: str, path: tuple, *, required: bool = True, min_items: int = 0) -> list | None:
        if key not in parent:
            if required:
                self.add(path + (key,), "required")
            return None
        value = parent[key]
        if not isinstance(value, list):
            self.add(path + (key,), "invalid_type")
            return None
        if len(value) < min_items:
            self.add(path + (key,), "too_small")
        return value

    def text(self, parent: dict, key: str, path: tuple, *, required: bool = True, min_len: int = 1, max_len: int | None = None) -> str | None:
        if key not in parent:
            if required:
                self.add(path + (key,), "required")
            return None
        return self.text_value(parent[key], path + (key,), min_len=min_len, max_len=max_len)

    def text_value(self, value: Any, path: tuple, *, min_len: int = 1, max_len: int | None = None) -> str | None:
        if not isinstance(value, str):
            self.add(path, "invalid_type")
            return None
        if len(value.strip()) < min_len:
            self.add(path, "too_small")
        elif max_len is not None and len(value) > max_len:
            self.add(path, "too_big")
        return value

    def text_list(self, parent: dict, key: str, path: tuple, *, required: bool, min_items: int = 0) -> list[str] | None:
        items = self.lst(parent, key, path, required=required, min_items=min_items)
        if items is None:
            return None
        for j, item in enumerate(items):
            self.text_value(item, path + (key, j))
        return items

    def number(self, parent: dict, key: str, path: tuple, *, low: float, high: float) -> None:
        if key not in parent:
            self.add(path + (key,), "required")
            return
        value = parent[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            self.add(path + (key,), "invalid_type")
        elif not math.isfinite(value):
            self.add(path + (key,), "not_finite")
        elif value < low:
            self.add(path + (key,), "too_small")
        elif value > high:
            self.add(path + (key,), "too_big")


def _schema_report(c: _Checker, out: dict) -> None:
    c.strict_keys(out, {"title", "summary", "findings"}, ())
    c.text(out, "title", (), max_len=REPORT_LIMITS["title"])
    c.text(out, "summary", (), min_len=0, max_len=REPORT_LIMITS["summary"])
    findings = c.lst(out, "findings", (), required=False) or []
    for i, f in enumerate(findings):
        path = ("findings", i)
        f = c.obj(f, path)
        if f is None:
            continue
        c.strict_keys(f, {"id", "statement", "evidence"}, path)
        c.text(f, "id", path, required=False)
        c.text(f, "statement", path, max_len=REPORT_LIMITS["statement"])
        c.text_list(f, "evidence", path, required=True, min_items=1)


def _schema_map(c: _Checker, out: dict) -> None:
    for i, f in enumerate(c.lst(out, "findings", ()) or []):
        path = ("findings", i)
        f = c.obj(f, path)
        if f is None:
            continue
        c.text(f, "statement", path)
        c.text_list(f, "finding_ids", path, required=True, min_items=1)
        c.number(f, "score", path, low=0, high=100)


def _schema_rate(c: _Checker, out: dict) -> None:
    for i, r in enumerate(c.lst(out, "ratings", ()) or []):
        path = ("ratings", i)
        r = c.obj(r, path)
        if r is None:
            continue
        c.text(r, "community_id", path)
        c.number(r, "rating", path, low=0, high=100)


def _schema_extract(c: _Checker, out: dict) -> None:
    for i, e in enumerate(c.lst(out, "entities", ()) or []):
        path = ("entities", i)
        e = c.obj(e, path)
        if e is None:
            continue
        c.text(e, "name", path)
        c.text(e, "type", path, required=False)
        c.text_list(e, "aliases", path, required=False)
        c.text(e, "description", path, required=False, min_len=0, max_len=REPORT_LIMITS["description"])
    for i, m in enumerate(c.lst(out, "mentions", ()) or []):
        path = ("mentions", i)
        m = c.obj(m, path)
        if m is None:
            continue
        c.text(m, "chunk_id", path)
        c.text(m, "name", path)
    for i, r in enumerate(c.lst(out, "related", ()) or []):
        path = ("related", i)
        r = c.obj(r, path)
        if r is None:
            continue
        c.text(r, "from", path)
        c.text(r, "to", path)
        c.text(r, "description", path, required=False, min_len=0, max_len=REPORT_LIMITS["relation_description"])
        c.text_list(r, "chunk_ids", path, required=False)


_SCHEMAS = {
    "write_report": _schema_report,
    "map_findings": _schema_map,
    "rate": _schema_rate,
    "extract": _schema_extract,
}


def issued_ids_for(task: str, args: tuple) -> frozenset[str]:
    """The ids a task's output may cite, derived from its input.

    ``extract``: the chunk ids; ``write_report``: the leaf chunk refs plus every
    child finding's evidence; ``map_findings``: the units' finding ids; ``rate``:
    the reports' community ids.
    """
    if task == "extract":
        (chunks,) = args
        return frozenset(str(ch["id"]) for ch in chunks)
    if task == "write_report":
        (community,) = args
        refs = {str(ch["ref"]) for ch in community.get("chunks") or ()}
        for child in community.get("children") or ():
            for finding in child.get("findings") or ():
                refs.update(str(r) for r in finding.get("evidence") or ())
        return frozenset(refs)
    if task == "map_findings":
        _query, units = args
        return frozenset(str(f["id"]) for u in units for f in u.get("findings") or ())
    if task == "rate":
        _query, reports = args
        return frozenset(str(r["community_id"]) for r in reports)
    raise ValueError(f"unknown task {task!r}")


def _task_checks(c: _Checker, task: str, out: dict, issued: frozenset[str] | None) -> None:
    if task == "write_report":
        seen: set[str] = set()
        for f in out.get("findings") or ():
            if "id" in f:
                if f["id"] in seen:
                    c.add(("findings", "id"), "duplicate_finding_id")
                seen.add(f["id"])
            if issued is not None and any(ref not in issued for ref in f["evidence"]):
                c.add(("findings", "evidence"), "unknown_evidence_ref")
    elif issued is None:
        return
    elif task == "map_findings":
        if any(fid not in issued for f in out["findings"] for fid in f["finding_ids"]):
            c.add(("findings", "finding_ids"), "unknown_finding_id")
    elif task == "rate":
        if any(r["community_id"] not in issued for r in out["ratings"]):
            c.add(("ratings", "community_id"), "unknown_community_id")
    elif task == "extract":
        if any(m["chunk_id"] not in issued for m in out["mentions"]):
            c.add(("mentions", "chunk_id"), "unknown_chunk_id")
        if any(cid not in issued for r in out["related"] for cid in r.get("chunk_ids") or ()):
            c.add(("related", "chunk_ids"), "unknown_chunk_id")


def _clean(task: str, out: dict) -> dict:
    """Fill defaults and drop ignored extra keys (called only on valid output)."""
    if task == "write_report":
        findings = []
        for f in out.get("findings") or ():
            item = {"statement": f["statement"], "evidence": list(f["evidence"])}
            if "id" in f:
                item["id"] = f["id"]
            findings.append(item)
        return {"title": out["title"], "summary": out["summary"], "findings": findings}
    if task == "map_findings":
        return {
            "findings": [
                {"statement": f["statement"], "finding_ids": list(f["finding_ids"]), "score": f["score"]}
                for f in out["findings"]
            ]
        }
    if task == "rate":
        return {"ratings": [{"community_id": r["community_id"], "rating": r["rating"]} for r in out["ratings"]]}
    entities = []
    for e in out["entities"]:
        item = {"name": e["name"], "aliases": list(e.get("aliases") or ())}
        for key in ("type", "description"):
            if e.get(key):
                item[key] = e[key]
        entities.append(item)
    related = []
    for r in out["related"]:
        item = {"from": r["from"], "to": r["to"], "chunk_ids": list(r.get("chunk_ids") or ())}
        if r.get("description"):
            item["description"] = r["description"]
        related.append(item)
    mentions = [{"chunk_id": m["chunk_id"], "name": m["name"]} for m in out["mentions"]]
    return {"entities": entities, "mentions": mentions, "related": related}


def validate_output(task: str, output: Any, *, issued_ids: Iterable[str] | None = None) -> tuple[dict | None, list[Issue]]:
    """Check one task output; returns ``(cleaned, [])`` or ``(None, issues)``.

    ``issued_ids`` are the ids the output may cite (see :func:`issued_ids_for`);
    ``None`` skips the membership checks.
    """
    if task not in _SCHEMAS:
        raise ValueError(f"unknown task {task!r}; expected one of {', '.join(TASKS)}")
    c = _Checker()
    out = c.obj(output, ())
    if out is None:
        return None, c.issues
    _SCHEMAS[task](c, out)
    if c.issues:
        return None, c.issues
    issued = frozenset(issued_ids) if issued_ids is not None else None
    _task_checks(c, task, out, issued)
    if c.issues:
        return None, c.issues
    return _clean(task, out), []
