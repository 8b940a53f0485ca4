"""Communities: hierarchical Leiden over the knowledge graph, model-written reports, their lifecycle.

The surface is ``kb.communities`` (a :class:`CommunitySurface`); ``crux_nb.communities(...)`` makes
its configuration. The report model (:class:`Report`, :class:`Finding`) is the one every layer
reads: report writing, the generation frames, GraphRAG io, global search and the widgets.
igraph and leidenalg are imported only when clustering runs.
"""

from .config import CommunitiesConfig
from .report import Finding, Report
from .results import PrepareResult, ReportPage
from .surface import CommunitySurface

__all__ = ["CommunitiesConfig", "CommunitySurface", "Finding", "PrepareResult", "Report", "ReportPage"]
