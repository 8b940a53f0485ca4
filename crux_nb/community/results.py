"""What the communities surface returns: the result of a build and a page of reports."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterator

import pandas as pd

from .report import Report

__all__ = ["PrepareResult", "ReportPage"]


@dataclass(frozen=True)
class PrepareResult:
    """What ``kb.communities.prepare()`` did: the generation, communities, reports written and reused, calls.

    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> again = kb.communities.prepare(force=True, progress=False)
    >>> again.reports_written, again.reports_reused, again.calls
    (0, 3, 0)
    """

    generation_id: str
    status: str
    communities: int
    reports_written: int
    reports_reused: int
    calls: int
    call_log: Any = None

    def __repr__(self) -> str:
        return (f"PrepareResult(generation_id={self.generation_id!r}, communities={self.communities}, "
                f"reports_written={self.reports_written}, reports_reused={self.reports_reused}, calls={self.calls})")


@dataclass(frozen=True)
class ReportPage:
    """One page of reports: iterate it (``for report in page``), ``len(page)``, ``page[0]``; ``cursor`` continues.

    >>> import crux_nb
    >>> kb = crux_nb.datasets.load_tiny(communities=True)
    >>> page = kb.communities.reports(limit=10)
    >>> len(page), [r.level for r in page], page.cursor
    (3, [0, 0, 1], None)
    """

    reports: tuple[Report, ...]
    cursor: str | None = None

    def __iter__(self) -> Iterator[Report]:
        return iter(self.reports)

    def __len__(self) -> int:
        return len(self.reports)

    def __getitem__(self, index: int) -> Report:
        return self.reports[index]

    def _repr_html_(self) -> str:
        from ..display.html import report_page_html

        return report_page_html(self)

    def to_frame(self) -> pd.DataFrame:
        """One row per report: id, level, parent, title, findings, chunks.

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> list(kb.communities.reports().to_frame().columns)
        ['community_id', 'level', 'parent_id', 'title', 'findings', 'n_chunks']
        """
        return pd.DataFrame([{"community_id": r.community_id, "level": r.level, "parent_id": r.parent_id,
                              "title": r.title, "findings": len(r.findings), "n_chunks": r.n_chunks}
                             for r in self.reports],
                            columns=["community_id", "level", "parent_id", "title", "findings", "n_chunks"])
