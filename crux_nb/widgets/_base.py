"""What every crux_nb view shares: a selection kept in step with a select widget, and a display
that works with and without a widget manager.

Displaying a view publishes two outputs: the widget (``application/vnd.jupyter.widget-view+json``
and a ``text/plain`` repr) and its static HTML (``text/html``). Why two: nbconvert's HTML exporter
renders only the widget form of an output whose widget state the notebook stored (``--execute``
stores it), and that form needs the widget manager from a CDN, so an exported page shown offline
(or in any viewer without a widget manager) would be blank. The static output is always there; a
live widget hides it with a ``<style>`` rule (in a hidden child) keyed by a hash of that HTML, so
JupyterLab and Notebook 7 show the widget once, and a page without a widget manager shows the
static view.
"""

from __future__ import annotations

import hashlib
from typing import Any

import ipywidgets as widgets

STATIC_ATTR = "data-crux-static"


def static_key(html: str) -> str:
    """A deterministic key of a static output (the same HTML gives the same key)."""
    return hashlib.sha256(html.encode("utf-8")).hexdigest()[:16]


def static_bundle(html: str) -> dict[str, str]:
    """The static output: ``html`` wrapped in a div a live widget can hide (no ``text/plain``,
    so a terminal prints the repr once, from the widget output)."""
    return {"text/html": f'<div class="crux-static-export" {STATIC_ATTR}="{static_key(html)}">{html}</div>'}


def hide_rule(keys: list[str]) -> str:
    """CSS that hides the static outputs ``keys`` (and their output-area rows) where the widget renders."""
    sel = ",".join(f'[{STATIC_ATTR}="{k}"]' for k in keys)
    rows = ",".join(f'.jp-OutputArea-child:has([{STATIC_ATTR}="{k}"])' for k in keys)
    return f"<style>{sel}{{display:none!important}}{rows}{{display:none!important}}</style>"


class SelectionView(widgets.VBox):
    """A VBox whose subclasses define ``to_html()`` and ``_render()``."""

    _syncing = False

    def _follow(self, select: Any, value: Any) -> None:
        """The selection trait changed: move ``select`` to it without echoing back, then redraw."""
        if select.value != value:
            self._syncing = True
            try:
                select.value = value
            finally:
                self._syncing = False
        self._render()

    def _repr_mimebundle_(self, **kwargs: Any) -> dict[str, Any]:
        bundle = super()._repr_mimebundle_(**kwargs) or {}
        bundle["text/plain"] = repr(self)
        bundle["text/html"] = self.to_html()
        return bundle

    def _static_hider(self, key: str) -> widgets.HTML:
        """The hidden child whose style hides every static output this view published."""
        hider = getattr(self, "_hider", None)
        if hider is None:
            hider = widgets.HTML(layout=widgets.Layout(display="none"))
            hider.add_class("crux-static-hider")
            self._hider, self._hidden_keys = hider, []
            self.children = (*self.children, hider)
        if key not in self._hidden_keys:
            self._hidden_keys.append(key)
            hider.value = hide_rule(self._hidden_keys)
        return hider

    def display_bundles(self) -> list[dict[str, Any]]:
        """The outputs ``display(view)`` publishes: the widget, then its static HTML; a closed view
        (no widget left to render) publishes one bundle, its static HTML and repr.

        Examples
        --------
        >>> import crux_nb, pandas as pd
        >>> from crux_nb.widgets import EvaluationView
        >>> kb = crux_nb.knowledge_base(id="w")
        >>> kb.add_text("a.md", "# A\\n\\nThe launch moved to May.")
        >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, pd.DataFrame({"question": ["launch"], "gold": [["a.md"]]}))
        >>> view = EvaluationView(ev)
        >>> widget, static = view.display_bundles()
        >>> sorted(widget), sorted(static)
        (['application/vnd.jupyter.widget-view+json', 'text/plain'], ['text/html'])
        >>> static["text/html"].startswith('<div class="crux-static-export" data-crux-static=')
        True
        >>> view.close(); [sorted(b) for b in view.display_bundles()]  # no widget left: one static bundle
        [['text/html', 'text/plain']]
        """
        html = self.to_html()
        if self.comm is None:
            return [{"text/plain": repr(self), "text/html": html}]
        self._static_hider(static_key(html))
        bundle = widgets.VBox._repr_mimebundle_(self) or {}
        bundle["text/plain"] = repr(self)
        return [bundle, static_bundle(html)]

    def _ipython_display_(self) -> None:
        """Publish :meth:`display_bundles` (see the module docstring for why two outputs)."""
        from IPython.display import display

        for bundle in self.display_bundles():
            display(bundle, raw=True)
