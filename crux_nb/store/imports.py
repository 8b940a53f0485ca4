"""Details of a knowledge base imported from another system, saved with it.

A knowledge base read by :func:`crux_nb.io.read_graphrag` carries a :class:`GraphRAGImport` on
``kb.graphrag``: what was imported, how GraphRAG's ``[Data: ...]`` references resolved, the rows left
out or completed, and GraphRAG's own ids by crux id. ``kb.save()`` writes it into the generation
(JSON in the manifest, the id maps as checksummed Parquet) and ``crux_nb.open()`` reads it back.
The classes live here, below the io package, because the store saves them; ``crux_nb.io`` exports them.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable

import pandas as pd

__all__ = ["GraphRAGImport", "GraphRAGWarning", "ReferenceCounts", "save_import", "read_import"]

FRAMES = ("documents", "text_units", "entities", "relationships", "communities", "covariates")


@dataclass
class ReferenceCounts:
    """What the references of the imported findings resolved to.

    Examples
    --------
    >>> from crux_nb.io import ReferenceCounts
    >>> counts = ReferenceCounts(findings=1, findings_with_references=1, findings_resolved=1)
    >>> counts.add("sources", True); counts.add("entities", False)
    >>> counts
    ReferenceCounts(findings=1, resolved_findings=1, fallback=0, references=2, resolved=1, unresolved=1, more_markers=0)
    """

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
        """Count one cited id of ``kind``, resolved to chunks or not.

        Examples
        --------
        >>> counts = ReferenceCounts()
        >>> counts.add("sources", True); counts.add("sources", False); counts.add("reports", True)
        >>> counts.resolved, counts.unresolved, counts.by_kind["sources"]
        (2, 1, {'cited': 2, 'resolved': 1})
        """
        self.references += 1
        entry = self.by_kind.setdefault(kind, {"cited": 0, "resolved": 0})
        entry["cited"] += 1
        if resolved:
            self.resolved += 1
            entry["resolved"] += 1
        else:
            self.unresolved += 1

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> ReferenceCounts:
        """The counts back from :meth:`to_dict` (how they are saved with the knowledge base)."""
        return cls(**{**data, "by_kind": {k: dict(v) for k, v in data.get("by_kind", {}).items()}})

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON data (kinds sorted); :meth:`from_dict` reads it back.

        Examples
        --------
        >>> counts = ReferenceCounts(findings=2)
        >>> counts.add("sources", True)
        >>> data = counts.to_dict()
        >>> data["references"], data["by_kind"], ReferenceCounts.from_dict(data) == counts
        (1, {'sources': {'cited': 1, 'resolved': 1}}, True)
        """
        return {"findings": self.findings, "findings_with_references": self.findings_with_references,
                "findings_resolved": self.findings_resolved, "findings_fallback": self.findings_fallback,
                "references": self.references, "resolved": self.resolved, "unresolved": self.unresolved,
                "more_markers": self.more_markers, "by_kind": {k: dict(v) for k, v in sorted(self.by_kind.items())}}

    def __repr__(self) -> str:
        return (f"ReferenceCounts(findings={self.findings}, resolved_findings={self.findings_resolved}, "
                f"fallback={self.findings_fallback}, references={self.references}, resolved={self.resolved}, "
                f"unresolved={self.unresolved}, more_markers={self.more_markers})")



@dataclass(frozen=True)
class GraphRAGWarning:
    """Rows the import left out or completed, counted: ``code``, where (``table``, ``column``), how many rows,
    the first few row numbers and what was done.

    Examples
    --------
    >>> from crux_nb.io import GraphRAGWarning
    >>> w = GraphRAGWarning("placeholder_entity", "relationships", "source", 7, (0, 4, 9), "added as placeholders")
    >>> print(w)
    relationships.source: 7 row(s) (0, 4, 9 …): added as placeholders
    """

    code: str
    table: str
    column: str
    count: int
    rows: tuple[int, ...]
    message: str

    def __str__(self) -> str:
        shown = ", ".join(map(str, self.rows)) + (" …" if self.count > len(self.rows) else "")
        return f"{self.table}.{self.column}: {self.count} row(s) ({shown}): {self.message}"


@dataclass(frozen=True)
class GraphRAGImport:
    """How a GraphRAG folder was imported: counts, reference resolution, and GraphRAG's ids by crux id.

    ``read_graphrag()`` puts one on ``kb.graphrag``; here one is made by hand.

    Examples
    --------
    >>> from crux_nb.io import GraphRAGImport, ReferenceCounts
    >>> details = GraphRAGImport(folder="output", layout="graphrag-3", counts={"chunks": 4, "entities": 2},
    ...                          references=ReferenceCounts(references=3, resolved=2, unresolved=1))
    >>> details
    GraphRAGImport(chunks=4, entities=2, mentions=None, related=None, communities=None, references_resolved=2/3)
    """

    folder: str
    layout: str
    counts: dict[str, int]
    references: ReferenceCounts
    notes: tuple[str, ...] = ()
    warnings: tuple[GraphRAGWarning, ...] = ()
    documents: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    text_units: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    entities: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    relationships: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    communities: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)
    covariates: pd.DataFrame = field(default_factory=pd.DataFrame, repr=False)

    def to_record(self) -> tuple[dict[str, Any], dict[str, pd.DataFrame]]:
        """Plain JSON data and the id-mapping frames: how the import is saved with the knowledge base.

        Examples
        --------
        >>> details = GraphRAGImport(folder="output", layout="graphrag-3", counts={"chunks": 4},
        ...                          references=ReferenceCounts())
        >>> record, frames = details.to_record()
        >>> record["counts"], sorted(frames), GraphRAGImport.from_record(record, frames).counts
        ([['chunks', 4]], ['communities', 'covariates', 'documents', 'entities', 'relationships', 'text_units'], {'chunks': 4})
        """
        # counts as pairs: the manifest's JSON sorts keys, and their order is the order to_frame() shows
        record = {"folder": self.folder, "layout": self.layout, "counts": [[k, v] for k, v in self.counts.items()],
                  "references": self.references.to_dict(), "notes": list(self.notes),
                  "warnings": [{**asdict(w), "rows": list(w.rows)} for w in self.warnings]}
        return record, {name: getattr(self, name) for name in FRAMES}

    @classmethod
    def from_record(cls, record: dict[str, Any], frames: dict[str, pd.DataFrame]) -> GraphRAGImport:
        """The import back from :meth:`to_record`."""
        warnings = tuple(GraphRAGWarning(**{**w, "rows": tuple(w["rows"])}) for w in record.get("warnings", ()))
        return cls(folder=record["folder"], layout=record["layout"], counts={k: v for k, v in record["counts"]},
                   references=ReferenceCounts.from_dict(record["references"]), notes=tuple(record.get("notes", ())),
                   warnings=warnings, **{name: frames[name] for name in FRAMES if name in frames})

    def to_frame(self) -> pd.DataFrame:
        """The counts and the reference resolution as one two-column frame.

        Examples
        --------
        >>> details = GraphRAGImport(folder="output", layout="graphrag-3", counts={"chunks": 4, "entities": 2},
        ...                          references=ReferenceCounts(findings=3, findings_resolved=2, findings_fallback=1))
        >>> details.to_frame().head(5)
                                                  what  count
        0                                       chunks      4
        1                                     entities      2
        2                                     findings      3
        3            findings with resolved references      2
        4  findings on community text units (fallback)      1
        """
        refs = self.references
        rows = list(self.counts.items()) + [
            ("findings", refs.findings), ("findings with resolved references", refs.findings_resolved),
            ("findings on community text units (fallback)", refs.findings_fallback),
            ("references cited", refs.references), ("references resolved", refs.resolved),
            ("references unresolved", refs.unresolved), ("'+more' markers", refs.more_markers)]
        return pd.DataFrame(rows, columns=["what", "count"])

    def __repr__(self) -> str:
        c = self.counts
        return (f"GraphRAGImport(chunks={c.get('chunks')}, entities={c.get('entities')}, "
                f"mentions={c.get('mentions')}, related={c.get('related')}, communities={c.get('communities')}, "
                f"references_resolved={self.references.resolved}/{self.references.references})")


def save_import(details: GraphRAGImport, folder: Path, write_table: Callable[[Path, pd.DataFrame], dict]) -> dict:
    """Write ``details`` under ``folder`` (one Parquet dataset per id map); returns its manifest entry."""
    record, frames = details.to_record()
    folder.mkdir()
    return {"kind": "graphrag", "record": record,
            "tables": {name: write_table(folder / name, frame) for name, frame in frames.items()}}


def read_import(entry: Any, read_table: Callable[[str, Any], pd.DataFrame]) -> GraphRAGImport | None:
    """The details saved by :func:`save_import` (None when the generation holds none)."""
    if not isinstance(entry, dict) or entry.get("kind") != "graphrag":
        return None
    frames = {name: read_table(name, table) for name, table in entry.get("tables", {}).items() if name in FRAMES}
    return GraphRAGImport.from_record(entry["record"], frames)
