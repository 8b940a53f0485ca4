"""GraphRAG's data references in report text: parse, resolve to chunk refs, count, write.

GraphRAG's report prompt asks the model to ground every finding with blocks such as
``[Data: Entities (39, 399); Relationships (39, 680, 684, +more)]``. Ids are the
``human_readable_id`` of the table named: ``Entities``, ``Relationships``,
``Sources`` (text units), ``Reports`` (community reports, by community number) and
``Claims`` (covariates). ``+more`` says the model cut the list; it names nothing.

:class:`ReferenceResolver` turns the references of a text into chunk refs (an entity
or a relationship resolves to its text units, a report to its community's text
units, a claim to the text unit it was extracted from) and counts what resolved.

>>> parse_references("Scrooge [Data: Entities (39); Relationships (39, 680, +more)].")
([Reference(kind='entities', id='39'), Reference(kind='relationships', id='39'), Reference(kind='relationships', id='680')], 1)
>>> strip_references("Scrooge is alone [Data: Entities (39)]. He works.")
'Scrooge is alone. He works.'
>>> format_references({"sources": [3, 7], "entities": [1]})
'[Data: Entities (1); Sources (3, 7)]'
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Reference", "ReferenceCounts", "ReferenceResolver", "parse_references", "strip_references",
           "format_references", "KINDS"]

KINDS = ("entities", "relationships", "sources", "reports", "claims")
_LABELS = {"entities": "Entities", "relationships": "Relationships", "sources": "Sources", "reports": "Reports",
           "claims": "Claims"}
_ALIASES = {"entity": "entities", "entities": "entities", "relationship": "relationships",
            "relationships": "relationships", "source": "sources", "sources": "sources", "report": "reports",
            "reports": "reports", "claim": "claims", "claims": "claims", "covariate": "claims", "covariates": "claims"}
_BLOCK = re.compile(r"\[\s*Data\s*:(?P<body>[^\[\]]*)\]", re.IGNORECASE)
_STRIP = re.compile(r"[ \t]*\[\s*Data\s*:[^\[\]]*\]", re.IGNORECASE)
_GROUP = re.compile(r"(?P<kind>[A-Za-z][A-Za-z ]*?)\s*\((?P<ids>[^()]*)\)")
_MORE = re.compile(r"^\+?\s*more$", re.IGNORECASE)


@dataclass(frozen=True)
class Reference:
    """One cited id: ``kind`` is one of :data:`KINDS` (or the label as written when unknown)."""

    kind: str
    id: str


def parse_references(text: Any) -> tuple[list[Reference], int]:
    """Every reference in ``text`` in order of appearance, and the number of ``+more`` markers."""
    if not isinstance(text, str):
        return [], 0
    refs: list[Reference] = []
    more = 0
    for block in _BLOCK.finditer(text):
        for group in _GROUP.finditer(block.group("body")):
            label = group.group("kind").strip().lower()
            kind = _ALIASES.get(label, label)
            for item in group.group("ids").split(","):
                item = item.strip()
                if not item:
                    continue
                if _MORE.match(item):
                    more += 1
                else:
                    refs.append(Reference(kind, item))
    return refs, more


def strip_references(text: str) -> str:
    """``text`` without its ``[Data: ...]`` blocks (and the spaces before them)."""
    return _STRIP.sub("", text).strip()


def format_references(ids: Mapping[str, Iterable[Any]]) -> str:
    """A ``[Data: ...]`` block citing ``ids`` by kind (kinds in :data:`KINDS` order; empty kinds left out)."""
    parts = [f"{_LABELS[k]} ({', '.join(str(i) for i in ids[k])})" for k in KINDS if list(ids.get(k, ()))]
    return f"[Data: {'; '.join(parts)}]" if parts else ""


@dataclass
class ReferenceCounts:
    """What the references of the imported findings resolved to."""

    findings: int = 0
    findings_with_references: int = 0  # cite at least one id
    findings_resolved: int = 0  # at least one id resolved to a chunk: evidence from the references
    findings_fallback: int = 0  # nothing resolved: evidence = the community's text units
    references: int = 0  # cited ids in total ("+more" not included)
    resolved: int = 0
    unresolved: int = 0
    more_markers: int = 0  # "+more": the model cut a list
    by_kind: dict[str, dict[str, int]] = field(default_factory=dict)  # kind -> {"cited", "resolved"}

    def add(self, kind: str, resolved: bool) -> None:
        self.references += 1
        entry = self.by_kind.setdefault(kind, {"cited": 0, "resolved": 0})
        entry["cited"] += 1
        if resolved:
            self.resolved += 1
            entry["resolved"] += 1
        else:
            self.unresolved += 1

    def to_dict(self) -> dict[str, Any]:
        return {"findings": self.findings, "findings_with_references": self.findings_with_references,
                "findings_resolved": self.findings_resolved, "findings_fallback": self.findings_fallback,
                "references": self.references, "resolved": self.resolved, "unresolved": self.unresolved,
                "more_markers": self.more_markers, "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())}}

    def __repr__(self) -> str:
        return (f"ReferenceCounts(findings={self.findings}, resolved_findings={self.findings_resolved}, "
                f"fallback={self.findings_fallback}, references={self.references}, resolved={self.resolved}, "
                f"unresolved={self.unresolved}, more_markers={self.more_markers})")


class ReferenceResolver:
    """Resolves references to chunk refs through ``lookups``: kind -> {human readable id (str) -> chunk refs}."""

    def __init__(self, lookups: Mapping[str, Mapping[str, tuple[str, ...]]]):
        self.lookups = lookups
        self.counts = ReferenceCounts()

    def resolve(self, text: str) -> tuple[tuple[str, ...], bool]:
        """(chunk refs in order of first citation, whether any reference was cited); counts as it goes."""
        refs, more = parse_references(text)
        self.counts.more_markers += more
        chunks: dict[str, None] = {}
        for ref in refs:
            found = self.lookups.get(ref.kind, {}).get(_normal_id(ref.id), ())
            self.counts.add(ref.kind, bool(found))
            chunks.update(dict.fromkeys(found))
        return tuple(chunks), bool(refs)

    def finding(self, text: str, fallback: tuple[str, ...]) -> tuple[str, ...]:
        """The evidence of one finding: its resolved references, else ``fallback``."""
        evidence, cited = self.resolve(text)
        c = self.counts
        c.findings += 1
        c.findings_with_references += cited
        if evidence:
            c.findings_resolved += 1
            return evidence
        c.findings_fallback += 1
        return fallback


def _normal_id(text: str) -> str:
    """``"0039"`` and ``"39"`` cite the same id; non-numbers are kept as written."""
    text = text.strip().strip("#").strip()
    return str(int(text)) if text.isdigit() else text
