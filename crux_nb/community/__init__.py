"""Communities: hierarchical Leiden over the knowledge graph, model-written reports, their lifecycle.

The surface is ``kb.communities`` (a :class:`CommunitySurface`); ``crux_nb.communities(...)`` makes
its configuration. The report model (:class:`Report`, :class:`Finding`) is the one every layer
reads: report writing, the generation frames, GraphRAG io, global search and the widgets.
Clustering alone (no reports): :func:`community_graph` builds a knowledge base's :class:`CommunityGraph`,
:func:`cluster_graph` finds its :class:`Community` tree (leaves under :data:`LEAF_BUDGET` report input
characters each); ``kb.communities.records()`` reads the built tree back.
igraph and leidenalg are imported only when clustering runs.
"""

from .cluster import LEAF_BUDGET, Community
from .clustering import cluster_graph, community_graph
from .config import CommunitiesConfig
from .graph_input import CommunityGraph
from .report import Finding, Report
from .results import PrepareResult, ReportPage
from .surface import CommunitySurface

__all__ = ["CommunitiesConfig", "CommunitySurface", "Finding", "PrepareResult", "Report", "ReportPage",
           "Community", "CommunityGraph", "LEAF_BUDGET", "community_graph", "cluster_graph"]
