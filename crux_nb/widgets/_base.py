"""What every crux_nb view shares: a selection kept in step with a select widget, and a display
bundle carrying the widget, a deterministic ``text/plain`` and the static HTML fallback."""

from __future__ import annotations

from typing import Any

import ipywidgets as widgets


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
