"""Reading and writing other systems' knowledge indexes.

* :func:`read_graphrag` — a Microsoft GraphRAG output folder (GraphRAG 0.x to 3.x
  layouts) as a :class:`~crux_nb.KnowledgeBase` whose communities are ``ready``:
  ``global_search`` maps GraphRAG's own reports, ``expand_relations`` walks its
  entity graph. Import counts and GraphRAG's ids are on ``kb.graphrag``.
* :func:`write_graphrag` — any knowledge base as GraphRAG's tables (GraphRAG 3
  column names and types), for GraphRAG-based tools.
* :func:`write_graphml` — the knowledge graph (``kb.to_networkx(...)``) as GraphML for
  Gephi, yEd or Cytoscape; :func:`edges_from_networkx` — a networkx graph's edges as the
  frame ``kb.add_edges`` takes; :func:`expansion_graph` — the subgraph behind one expansion.

::

    import crux_nb
    from crux_nb.io import read_graphrag, write_graphrag

    kb = read_graphrag("graphrag-project/output", id="carol")
    kb.graphrag.to_frame()          # what was imported, how many references resolved
    kb.graphrag.warnings            # rows left out or completed (placeholder entities…), counted
    write_graphrag(kb, "exported")  # and back
"""

from .graphrag_read import read_graphrag
from ..store.imports import GraphRAGImport, GraphRAGWarning
from .graphrag_refs import ReferenceCounts, format_references, parse_references, strip_references
from .graphrag_write import GraphRAGExport, write_graphrag
from .graph_exchange import edges_from_networkx, expansion_graph, write_graphml

__all__ = ["read_graphrag", "write_graphrag", "GraphRAGImport", "GraphRAGWarning", "GraphRAGExport", "ReferenceCounts",
           "parse_references", "strip_references", "format_references", "write_graphml", "edges_from_networkx",
           "expansion_graph"]
