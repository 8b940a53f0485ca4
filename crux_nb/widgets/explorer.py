"""``CommunityExplorer``: an ipywidgets view of a community hierarchy and its reports.

It draws the tree (an SVG generated in Python) with each community's size, lists the
communities, and shows the selected community's report: title, summary and findings, each
with the chunks it cites (texts through the knowledge base's reader). ``view.selected`` is the
selected :class:`CommunityInfo` (``view.selected_id`` its community id, an observable trait).
Reading never builds communities. Without a widget manager the same view shows as static HTML.
"""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets
import pandas as pd
import traitlets

from ._base import SelectionView
from ..errors import ParameterError
from ._explorer_data import CommunityInfo, ExplorerData, explorer_data
from ._explorer_html import detail_html, header_html, static_html, table_html, tree_html

__all__ = ["CommunityExplorer"]


class CommunityExplorer(SelectionView):
    """An interactive view of ``surface`` (``kb.communities`` or ``view.communities``).

    ``kb`` (optional) reads chunk texts from another knowledge base than the surface's own.

    Children (for tests and layout): ``header``; ``community_select`` (Select, tree order) beside
    ``detail`` (HTML, the selected report); ``tree`` (HTML with the SVG); ``table`` (HTML, one row per
    community).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import CommunityExplorer
    >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
    >>> view = CommunityExplorer(kb.communities)
    >>> view
    CommunityExplorer(scope='corpus', status='ready', communities=3, levels=2)
    >>> view.selected.kind, view.selected.title  # the root comes first
    ('root', 'Platform and Atlas; Beacon and Priya Raman')
    >>> [c.title for c in view.communities[1:]]
    ['Platform and Atlas', 'Beacon and Priya Raman']
    """

    selected_id = traitlets.Unicode(None, allow_none=True, help="community id of the selected community")

    def __init__(self, surface: Any, *, kb: Any = None, **kwargs: Any):
        data = explorer_data(surface, kb=kb)
        self._data: ExplorerData = data
        self._order = data.order()
        self._syncing = False
        self.header = widgets.HTML()
        self.community_select = widgets.Select(
            options=[(self._option_label(c), c.community_id) for c in self._order], value=None,
            rows=max(3, min(len(self._order), 14)), description="community", disabled=not self._order,
            style={"description_width": "initial"}, layout=widgets.Layout(width="380px"))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0", margin="0 0 0 16px"))
        self.tree = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.table = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        for w, cls in ((self.header, "crux-explorer-header"), (self.community_select, "crux-community-select"),
                       (self.detail, "crux-detail-widget"), (self.tree, "crux-graph"),
                       (self.table, "crux-table-widget")):
            w.add_class(cls)
        upper = widgets.HBox([self.community_select, self.detail], layout=widgets.Layout(align_items="flex-start"))
        super().__init__(children=[self.header, upper, self.tree, self.table], **kwargs)
        self.add_class("crux-explorer")
        self.header.value = header_html(data)
        self.community_select.observe(self._on_pick, names="value")
        if self._order:
            self.selected_id = self._order[0].community_id  # renders through _on_id
        else:
            self._render()

    # ------------------------------------------------------------------ state
    @property
    def data(self) -> ExplorerData:
        """The surface's current generation as plain data (communities, reports, chunk texts)."""
        return self._data

    @property
    def communities(self) -> tuple[CommunityInfo, ...]:
        """Every community, in tree order."""
        return self._order

    @property
    def selected(self) -> CommunityInfo | None:
        """The selected community (with its report), or None."""
        return self._data.find(self.selected_id)

    @selected.setter
    def selected(self, value: str | CommunityInfo | None) -> None:
        self.selected_id = value.community_id if isinstance(value, CommunityInfo) else value

    @traitlets.validate("selected_id")
    def _check_id(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is None:
            return None
        if self._data.find(value) is None:
            known = [c.community_id for c in self._order]
            raise ParameterError("CommunityExplorer", "selected", f"a community id (one of {known})", value,
                                 hint=None if known else "the surface has no communities yet: call prepare().")
        return value

    def to_frame(self) -> pd.DataFrame:
        """One row per community in tree order: id, level, kind, parent, children, sizes, title, findings,
        and the chunk refs its findings cite.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import CommunityExplorer
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> CommunityExplorer(kb.communities).to_frame()[["level", "kind", "n_chunks", "findings", "title"]]
           level  kind  n_chunks  findings                                       title
        0      1  root         3         4  Platform and Atlas; Beacon and Priya Raman
        1      0  leaf         2         2                          Platform and Atlas
        2      0  leaf         1         2                      Beacon and Priya Raman
        """
        return self._data.to_frame()

    # ---------------------------------------------------------------- updates
    def _option_label(self, c: CommunityInfo) -> str:
        indent = "\u00a0\u00a0\u00a0" * self._data.depth(c.community_id)
        title = " ".join((c.title or c.community_id).split())
        return f"{indent}{title[:48]}{'…' if len(title) > 48 else ''}  ({c.n_chunks})"

    def _on_pick(self, change: dict) -> None:
        if not self._syncing:
            self.selected_id = change["new"]

    @traitlets.observe("selected_id")
    def _on_id(self, change: dict) -> None:
        self._follow(self.community_select, change["new"])

    def _render(self) -> None:
        selected = self.selected
        self.tree.value = tree_html(self._data, selected)
        self.table.value = table_html(self._data, selected)
        self.detail.value = detail_html(self._data, selected)

    # ------------------------------------------------------------------ reprs
    def to_html(self) -> str:
        """The current view (with the selection) as static HTML.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import CommunityExplorer
        >>> kb = crux_nb.datasets.load_tiny(communities=True)  # offline: entities, clusters, reports
        >>> view = CommunityExplorer(kb.communities)
        >>> view.selected = view.communities[1]
        >>> html = view.to_html()
        >>> html.count("<svg"), "Priya Raman leads the Platform team." in html
        (1, True)
        """
        return static_html(self._data, selected=self.selected)

    def __repr__(self) -> str:
        d = self._data
        return (f"CommunityExplorer(scope={d.scope!r}, status={d.status!r}, communities={len(d.communities)}, "
                f"levels={len(d.levels)})")

    def _repr_html_(self) -> str:
        return self.to_html()

