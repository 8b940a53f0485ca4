"""What ``read_graphrag`` returns about an import: counts, reference resolution, warnings, GraphRAG's ids."""

from __future__ import annotations

from dataclasses import dataclass, field

import pandas as pd

from .graphrag_refs import ReferenceCounts

__all__ = ["GraphRAGImport", "GraphRAGWarning"]


@dataclass(frozen=True)
class GraphRAGWarning:
    """Rows the import left out or completed, counted: ``code``, where (``table``, ``column``), how many rows,
    the first few row numbers and what was done."""

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
    """How a GraphRAG folder was imported: counts, reference resolution, and GraphRAG's ids by crux id."""

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

    def to_frame(self) -> pd.DataFrame:
        """The counts and the reference resolution as one two-column frame."""
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
