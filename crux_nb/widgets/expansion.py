"""``ExpansionView``: an ipywidgets view of what ``expand_relations`` added to a result.

For each added hit it shows the seed, the path with edge types, the distance and score,
and draws the expansion subgraph (an SVG generated in Python). Selecting a hit highlights
its path; edge-type and max-distance filters narrow what is shown. ``view.selected`` is
the selected :class:`~crux_nb.retrieval.expand.Expansion` (``view.selected_id`` its hit key,
an observable trait). Without a widget manager the same view shows as static HTML.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any, Iterable

import ipywidgets as widgets
import pandas as pd
import traitlets

from ._base import SelectionView
from ..errors import ParameterError
from ..graph.expansion_export import expansion_graph
from ..retrieval.expand import Expansion
from ._expansion_data import ExpansionData, expansion_data
from ._expansion_html import detail_html, graph_html, header_html, paths_html, static_html

__all__ = ["ExpansionView"]


class ExpansionView(SelectionView):
    """An interactive view of the ``expand_relations`` step of a retrieval result.

    ``result`` is a :class:`~crux_nb.retrieval.RetrievalResult` (or a saved
    :class:`~crux_nb.retrieval.RecipeTrace`); ``step`` picks a step id when a recipe expands
    more than once; ``kb`` (optional) adds entity names and texts the result does not carry.

    Children (for tests and layout): ``header``; then the controls ``type_filter`` (SelectMultiple),
    ``distance_slider`` (IntSlider) and ``hit_select`` (Select) beside ``detail`` (HTML, the selected
    hit); ``graph`` (HTML with the SVG); ``paths`` (HTML table, one row per shown hit).

    Examples
    --------
    >>> import crux_nb; from crux_nb.widgets import ExpansionView
    >>> kb = crux_nb.datasets.load_tiny(entities=True)
    >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
    >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
    >>> view = ExpansionView(result, kb=kb)
    >>> view
    ExpansionView(step='expand-relations', added=2, seeds=2)
    >>> view.selected.ref, view.selected.distance  # the best added hit is selected first
    ('chunk:team.md:c0000', 1)
    >>> view.selected_id = "docs:ops.md:c0000"
    >>> view.selected.path
    ('chunk:plan.md:c0000', 'entity:priya-raman', 'chunk:team.md:c0000', 'entity:platform', 'chunk:ops.md:c0000')
    """

    selected_id = traitlets.Unicode(None, allow_none=True, help="hit key of the selected added hit")

    def __init__(self, result: Any, *, step: str | None = None, kb: Any = None, **kwargs: Any):
        data = expansion_data(result, step=step, kb=kb)
        types = data.edge_types
        top = data.max_distance
        self._data: ExpansionData = data
        self._syncing = False
        self.header = widgets.HTML()
        self.type_filter = widgets.SelectMultiple(options=types, value=types, rows=max(1, min(len(types), 5)),
                                                  description="edge types", style={"description_width": "initial"},
                                                  layout=widgets.Layout(width="320px"))
        self.distance_slider = widgets.IntSlider(value=top, min=0, max=top, step=1, description="max distance",
                                                 disabled=top == 0, continuous_update=False,
                                                 style={"description_width": "initial"},
                                                 layout=widgets.Layout(width="320px"))
        self.hit_select = widgets.Select(options=[], rows=max(3, min(len(data.expansions), 10)),
                                         description="added hit", style={"description_width": "initial"},
                                         layout=widgets.Layout(width="320px"))
        self.graph = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.paths = widgets.HTML(layout=widgets.Layout(width="100%", min_width="0"))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0", margin="0 0 0 16px"))
        for w, cls in ((self.header, "crux-expansion-header"), (self.type_filter, "crux-filter-types"),
                       (self.distance_slider, "crux-filter-distance"), (self.hit_select, "crux-hit-select"),
                       (self.graph, "crux-graph"), (self.paths, "crux-paths-widget"),
                       (self.detail, "crux-detail-widget")):
            w.add_class(cls)
        controls = widgets.VBox([self.type_filter, self.distance_slider, self.hit_select],
                                layout=widgets.Layout(flex="0 0 auto"))
        upper = widgets.HBox([controls, self.detail], layout=widgets.Layout(align_items="flex-start"))
        super().__init__(children=[self.header, upper, self.graph, self.paths], **kwargs)
        self.add_class("crux-expansion")
        self.type_filter.observe(self._on_filter, names="value")
        self.distance_slider.observe(self._on_filter, names="value")
        self.hit_select.observe(self._on_pick, names="value")
        self._refresh()

    # ------------------------------------------------------------------ state
    @property
    def data(self) -> ExpansionData:
        """The expansion step as plain data (seeds, expansions, texts)."""
        return self._data

    @property
    def step_id(self) -> str:
        return self._data.step_id

    @property
    def seeds(self) -> tuple[str, ...]:
        return self._data.seeds

    @property
    def expansions(self) -> tuple[Expansion, ...]:
        """Every added hit, in step order."""
        return self._data.expansions

    @property
    def visible(self) -> tuple[Expansion, ...]:
        """The added hits the filters let through."""
        return self._data.visible(self.type_filter.value, self.distance_slider.value)

    @property
    def selected(self) -> Expansion | None:
        """The selected added hit (an ``Expansion`` record), or None."""
        return self._data.find(self.selected_id)

    @selected.setter
    def selected(self, value: str | Expansion | None) -> None:
        self.selected_id = value.key if isinstance(value, Expansion) else value

    @traitlets.validate("selected_id")
    def _check_key(self, proposal: dict) -> str | None:
        key = proposal["value"]
        if key is None:
            return None
        if self._data.find(key) is None:
            known = [x.key for x in self._data.expansions]
            raise ParameterError("ExpansionView", "selected", f"the key of an added hit (one of {known})", key)
        if key not in {x.key for x in self.visible}:
            raise ParameterError("ExpansionView", "selected", "the key of a hit the filters show", key,
                                 hint="widen view.type_filter / view.distance_slider, or call view.filter().")
        return key

    def filter(self, *, types: Iterable[str] | None = None, max_distance: int | None = None) -> ExpansionView:
        """Set the filters (None leaves one unchanged); returns the view.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import ExpansionView
        >>> kb = crux_nb.datasets.load_tiny(entities=True)
        >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
        >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
        >>> view = ExpansionView(result).filter(max_distance=1)
        >>> view, [x.ref for x in view.visible]
        (ExpansionView(step='expand-relations', added=2, seeds=2, shown=1), ['chunk:team.md:c0000'])
        >>> view.filter(types=["mentions"], max_distance=5).distance_slider.value  # capped at the deepest hit
        2
        """
        if types is not None:
            if isinstance(types, str):
                types = [types]
            types = tuple(types)
            unknown = [t for t in types if t not in self._data.edge_types]
            if unknown:
                raise ParameterError("ExpansionView.filter()", "types",
                                     f"edge types drawn from {list(self._data.edge_types)}", list(types))
            self.type_filter.value = tuple(t for t in self._data.edge_types if t in types)
        if max_distance is not None:
            if isinstance(max_distance, bool) or not isinstance(max_distance, int) or max_distance < 0:
                raise ParameterError("ExpansionView.filter()", "max_distance", "an int >= 0", max_distance)
            self.distance_slider.value = min(max_distance, self.distance_slider.max)
        return self

    def to_frame(self, *, shown_only: bool = False) -> pd.DataFrame:
        """One row per added hit: position, key, ref, seed, path (with edge types), edges, hops,
        distance, score, supports, content. ``shown_only=True`` keeps only what the filters show.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import ExpansionView
        >>> kb = crux_nb.datasets.load_tiny(entities=True)
        >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
        >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
        >>> ExpansionView(result).to_frame()[["ref", "seed", "hops", "distance", "score"]]
                           ref                 seed  hops  distance     score
        0  chunk:team.md:c0000  chunk:plan.md:c0000     2         1  0.710634
        1   chunk:ops.md:c0000  chunk:plan.md:c0000     4         2  0.050000
        >>> ExpansionView(result).filter(max_distance=1).to_frame(shown_only=True)["path"].tolist()
        ['chunk:plan.md:c0000 —mentions→ entity:priya-raman —mentions→ chunk:team.md:c0000']
        """
        return self._data.to_frame(self.visible if shown_only else None)

    def to_networkx(self, *, shown_only: bool = False):
        """The expansion subgraph as a ``networkx.MultiDiGraph`` (see ``crux_nb.io.expansion_graph``):
        seeds, the paths' nodes and edges, the added hits. ``shown_only=True`` keeps what the filters show.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import ExpansionView
        >>> kb = crux_nb.datasets.load_tiny(entities=True)
        >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
        >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
        >>> view = ExpansionView(result)
        >>> graph = view.to_networkx()
        >>> graph.number_of_nodes(), graph.number_of_edges(), "entity:platform" in graph
        (6, 4, True)
        >>> sorted(view.filter(max_distance=1).to_networkx(shown_only=True).nodes)
        ['chunk:plan.md:c0000', 'chunk:team.md:c0000', 'entity:beacon', 'entity:priya-raman']
        """
        data = replace(self._data, expansions=self.visible) if shown_only else self._data
        return expansion_graph(data)

    # ---------------------------------------------------------------- updates
    def _option_label(self, x: Expansion) -> str:
        return f"{self._data.rank(x)}. {x.ref}  (d={x.distance})"

    def _refresh(self) -> None:
        """Filters changed: rebuild the hit options, keep the selection when still shown."""
        shown = self.visible
        keys = [x.key for x in shown]
        keep = self.selected_id if self.selected_id in keys else (keys[0] if keys else None)
        self._syncing = True
        try:
            self.hit_select.options = [(self._option_label(x), x.key) for x in shown]
            self.hit_select.value = keep
        finally:
            self._syncing = False
        if keep == self.selected_id:
            self._render()
        else:
            self.selected_id = keep  # renders through _on_key

    def _on_filter(self, change: dict) -> None:
        self._refresh()

    def _on_pick(self, change: dict) -> None:
        if not self._syncing:
            self.selected_id = change["new"]

    @traitlets.observe("selected_id")
    def _on_key(self, change: dict) -> None:
        self._follow(self.hit_select, change["new"])

    def _render(self) -> None:
        shown, selected = self.visible, self.selected
        self.header.value = header_html(self._data, shown)
        self.graph.value = graph_html(self._data, shown, selected)
        self.paths.value = paths_html(self._data, shown, selected)
        self.detail.value = detail_html(self._data, selected)

    # ------------------------------------------------------------------ reprs
    def to_html(self) -> str:
        """The current view (filters and selection applied) as static HTML.

        Examples
        --------
        >>> import crux_nb; from crux_nb.widgets import ExpansionView
        >>> kb = crux_nb.datasets.load_tiny(entities=True)
        >>> steps = [crux_nb.retrieve(limit=1), crux_nb.expand_relations(types=["mentions"], depth=2)]
        >>> result = kb.recipe(steps=steps).retrieve_with_trace("When does Beacon launch?")
        >>> html = ExpansionView(result).filter(max_distance=1).to_html()
        >>> html.count("<svg"), "chunk:team.md:c0000" in html, "chunk:ops.md:c0000" in html
        (1, True, False)
        """
        return static_html(self._data, shown=self.visible, selected=self.selected)

    def __repr__(self) -> str:
        text = f"ExpansionView(step={self.step_id!r}, added={len(self.expansions)}, seeds={len(self.seeds)}"
        shown = len(self.visible)
        if shown != len(self.expansions):
            text += f", shown={shown}"
        return text + ")"

    def _repr_html_(self) -> str:
        return self.to_html()

