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
from dataclasses import dataclass
from typing import Any

from ..store.imports import ReferenceCounts

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
    """Every reference in ``text`` in order of appearance, and the number of ``+more`` markers.

    Examples
    --------
    >>> refs, more = parse_references("Atlas is down [Data: Sources (3, 7); Reports (1, +more)]. No data here.")
    >>> [(r.kind, r.id) for r in refs], more
    ([('sources', '3'), ('sources', '7'), ('reports', '1')], 1)
    >>> parse_references(None)
    ([], 0)
    """
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
    """``text`` without its ``[Data: ...]`` blocks (and the spaces before them).

    Examples
    --------
    >>> strip_references("Atlas is down [Data: Sources (3, 7)]. Platform owns it [Data: Entities (2)].")
    'Atlas is down. Platform owns it.'
    """
    return _STRIP.sub("", text).strip()


def format_references(ids: Mapping[str, Iterable[Any]]) -> str:
    """A ``[Data: ...]`` block citing ``ids`` by kind (kinds in :data:`KINDS` order; empty kinds left out).

    Examples
    --------
    >>> format_references({"reports": [1], "sources": [3, 7], "claims": []})
    '[Data: Sources (3, 7); Reports (1)]'
    >>> parse_references(format_references({"entities": [5]}))[0]
    [Reference(kind='entities', id='5')]
    >>> format_references({})
    ''
    """
    parts = [f"{_LABELS[k]} ({', '.join(str(i) for i in ids[k])})" for k in KINDS if list(ids.get(k, ()))]
    return f"[Data: {'; '.join(parts)}]" if parts else ""


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
