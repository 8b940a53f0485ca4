"""Notebook widgets (ipywidgets) over retrieval results and traces::

    from crux_nb.widgets import ExpansionView
    view = ExpansionView(recipe.retrieve_with_trace("release planning"))
    view                    # the widget (static HTML where no widget manager runs)
    view.selected.path      # the path of the hit selected in the page
    view.to_frame()         # one row per added hit
"""

from ._expansion_data import ExpansionData, expansion_data, path_text
from ._expansion_html import expansion_html, expansion_svg
from .expansion import ExpansionView

__all__ = ["ExpansionView", "ExpansionData", "expansion_data", "expansion_html", "expansion_svg", "path_text"]
