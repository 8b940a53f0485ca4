"""``CoverageView``: an ipywidgets view of how completely a ``global_search`` run read the communities.

It shows the coverage and its basis, the generations read, available versus processed reports and
findings, the preflight against the calls actually made, the community hierarchy coloured by what
happened to each report (mapped, visited, skipped, truncated, excluded), the map batches and any
truncation. Selecting a finding hit shows its citation resolved to the report findings it cites and
to the chunks behind them. ``view.selected`` is the selected :class:`CoverageFinding`
(``view.selected_id`` its finding target, an observable trait). Without a widget manager the
same view shows as static HTML.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd
import traitlets

from ._base import SelectionView
from ..errors import ParameterError
from ._coverage_data import CoverageData, CoverageFinding
from ._coverage_read import coverage_data
from ._coverage_html import (batches_html, detail_html, findings_html, graph_html, header_html, overview_html,
                             static_html)

__all__ = ["CoverageView"]


class CoverageView(SelectionView):
    """An interactive view of the ``global_search`` step of a retrieval result.

    ``result`` is a :class:`~crux_nb.retrieval.RetrievalResult` (or a saved
    :class:`~crux_nb.retrieval.RecipeTrace`, or its ``to_dict()`` data: coverage only, no findings);
    ``kb`` (optional) adds the text of the cited chunks.

    Children (for tests and layout): ``header``; ``overview`` (available vs processed, preflight vs
    actual, adaptive descent, truncations); ``finding_select`` (Select) beside ``detail`` (HTML, the
    selected finding); ``graph`` (HTML with the hierarchy SVG); ``batch_table`` (HTML, one row per
    map batch); ``finding_table`` (HTML, one row per finding).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import CoverageView
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
    >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
    >>> view = CoverageView(result, kb=kb)
    >>> view
    CoverageView(step='global-search', coverage='exact', findings=2, reports=1/1, batches=1, calls=1)
    >>> view.selected.statement, view.selected.supports, view.selected.resolution
    ('Priya Raman leads the Platform team.', ('chunk:team.md:c0000',), 'verified')
    """

    selected_id = traitlets.Unicode(None, allow_none=True, help="finding target of the selected finding hit")

    def __init__(self, result: Any, *, kb: Any = None, **kwargs: Any):
        data = coverage_data(result, kb=kb)
        self._data: CoverageData = data
        self._syncing = False
        self.header = widgets.HTML()
        self.overview = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.finding_select = widgets.Select(
            options=[(self._option_label(f), f.target) for f in data.findings], value=None,
            rows=max(3, min(len(data.findings), 12)), description="finding", disabled=not data.findings,
            style={"description_width": "initial"}, layout=widgets.Layout(width="420px"))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0", margin="0 0 0 16px"))
        self.graph = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.batch_table = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.finding_table = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        for w, cls in ((self.header, "crux-coverage-header"), (self.overview, "crux-overview-widget"),
                       (self.finding_select, "crux-finding-select"), (self.detail, "crux-detail-widget"),
                       (self.graph, "crux-graph"), (self.batch_table, "crux-batches-widget"),
                       (self.finding_table, "crux-findings-widget")):
            w.add_class(cls)
        upper = widgets.HBox([self.finding_select, self.detail], layout=widgets.Layout(align_items="flex-start"))
        super().__init__(children=[self.header, self.overview, upper, self.graph, self.batch_table,
                                   self.finding_table],
                         **kwargs)
        self.add_class("crux-coverage")
        # the parts that never change with the selection
        self.header.value = header_html(data)
        self.overview.value = overview_html(data)
        self.batch_table.value = batches_html(data)
        self.finding_select.observe(self._on_pick, names="value")
        if data.findings:
            self.selected_id = data.findings[0].target  # renders through _on_target
        else:
            self._render()

    # ------------------------------------------------------------------ state
    @property
    def data(self) -> CoverageData:
        """The global-search step as plain data (coverage, units, batches, findings, texts)."""
        return self._data

    @property
    def step_id(self) -> str:
        return self._data.step_id

    @property
    def coverage(self) -> str:
        return self._data.coverage

    @property
    def coverage_basis(self) -> str:
        return self._data.coverage_basis

    @property
    def findings(self) -> tuple[CoverageFinding, ...]:
        """Every finding hit, in result order, with its resolved citation."""
        return self._data.findings

    @property
    def selected(self) -> CoverageFinding | None:
        """The selected finding (a ``CoverageFinding``: statement, cited report findings, supports), or None."""
        return self._data.find(self.selected_id)

    @selected.setter
    def selected(self, value: Any) -> None:
        if isinstance(value, CoverageFinding):
            value = value.target
        elif value is not None and not isinstance(value, str) and hasattr(value, "citation"):
            value = value.citation.finding_target  # a FindingHit
        self.selected_id = value

    @traitlets.validate("selected_id")
    def _check_target(self, proposal: dict) -> str | None:
        target = proposal["value"]
        if target is None:
            return None
        if self._data.find(target) is None:
            known = [f.target for f in self._data.findings]
            hint = None if self._data.has_hits else "a trace holds no hits: pass the RetrievalResult instead."
            raise ParameterError("CoverageView", "selected", f"the finding target of a finding hit (one of {known})",
                                 target, hint=hint)
        return target

    def to_frame(self, by: str = "finding") -> pd.DataFrame:
        """``by="finding"`` (default): one row per finding hit with its supports and the report findings it
        cites; ``"support"``: one row per (finding, cited chunk) with the chunk text (kb given);
        ``"community"``: one row per community with its status and rating; ``"batch"``: one row per batch.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import CoverageView
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> view = CoverageView(result, kb=kb)
        >>> view.to_frame()[["rank", "score", "statement", "resolution"]]
           rank  score                             statement resolution
        0     1    1.0  Priya Raman leads the Platform team.   verified
        1     2    1.0         The Platform team runs Atlas.   verified
        >>> view.to_frame("community")[["level", "title", "status", "findings"]]
           level                                       title  status  findings
        0      1  Platform and Atlas; Beacon and Priya Raman  mapped         4
        1      0                          Platform and Atlas  unread         2
        2      0                      Beacon and Priya Raman  unread         2
        >>> view.to_frame("support")["text"].tolist()
        ['Priya Raman leads the Platform team.', 'The Platform team runs Atlas.']
        """
        return self._data.to_frame(by)

    # ---------------------------------------------------------------- updates
    def _option_label(self, f: CoverageFinding) -> str:
        text = " ".join(f.statement.split())
        return f"{f.rank}. {f.score:.3f}  {text[:60]}{'…' if len(text) > 60 else ''}"

    def _on_pick(self, change: dict) -> None:
        if not self._syncing:
            self.selected_id = change["new"]

    @traitlets.observe("selected_id")
    def _on_target(self, change: dict) -> None:
        self._follow(self.finding_select, change["new"])

    def _render(self) -> None:
        selected = self.selected
        self.graph.value = graph_html(self._data, selected)
        self.finding_table.value = findings_html(self._data, selected)
        self.detail.value = detail_html(self._data, selected)

    # ------------------------------------------------------------------ reprs
    def to_html(self) -> str:
        """The current view (with the selection) as static HTML.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import CoverageView
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> search = crux_nb.global_search(model=crux_nb.models.OfflineModel(), detail="overview")
        >>> result = kb.recipe(steps=[search]).retrieve_with_trace("What does the Platform team do?")
        >>> view = CoverageView(result, kb=kb)
        >>> view.selected = view.findings[1]
        >>> html = view.to_html()
        >>> html.count("<svg"), "Priya Raman leads the Platform team." in html, "exact" in html
        (1, True, True)
        """
        return static_html(self._data, selected=self.selected)

    def __repr__(self) -> str:
        d = self._data
        text = (f"CoverageView(step={d.step_id!r}, coverage={d.coverage!r}, "
                f"findings={len(d.findings) if d.has_hits else 'trace only'}, "
                f"reports={d.processed.get('reports', 0)}/{d.available.get('reports', 0)}, batches={len(d.batches)}")
        if d.calls is not None:
            text += f", calls={len(d.calls)}"
        if d.truncations:
            text += f", truncations={len(d.truncations)}"
        return text + ")"

    def _repr_html_(self) -> str:
        return self.to_html()

