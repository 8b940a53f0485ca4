"""Notebook widgets (ipywidgets) over retrieval results and traces::

    from crux_nb.widgets import ExpansionView
    view = ExpansionView(recipe.retrieve_with_trace("release planning"))
    view                    # the widget (static HTML where no widget manager runs)
    view.selected.path      # the path of the hit selected in the page
    view.to_frame()         # one row per added hit

Displaying a view publishes the widget and its static HTML, so an exported notebook shows the view too.
"""

from ._expansion_data import ExpansionData, expansion_data, path_text
from ._expansion_html import expansion_html, expansion_svg
from .expansion import ExpansionView

__all__ = ["ExpansionView", "ExpansionData", "expansion_data", "expansion_html", "expansion_svg", "path_text"]

from ._coverage_data import CoverageData, CoverageFinding
from ._coverage_read import coverage_data
from ._coverage_html import coverage_html, coverage_svg
from ._explorer_data import CommunityInfo, ExplorerData, explorer_data
from ._explorer_html import explorer_html, explorer_svg
from .coverage import CoverageView
from .explorer import CommunityExplorer

__all__ += ["CoverageView", "CoverageData", "CoverageFinding", "coverage_data", "coverage_html", "coverage_svg",
            "CommunityExplorer", "CommunityInfo", "ExplorerData", "explorer_data", "explorer_html", "explorer_svg"]

from .evaluation import EvaluationView

__all__ += ["EvaluationView"]
