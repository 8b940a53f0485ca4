"""The ``expand_relations`` hit step (``step``), its joint candidate pool (``joint``), its records (``records``),
query-entity matching (``entity_match``) and the source-name match (``titles``)."""

from .joint import DOCUMENT_GRAPH_WEIGHT, PASSAGE_GRAPH_WEIGHT, default_graph_weight
from .records import Expansion, ExpansionReason
from .step import ExpandRelationsStep, expand_relations

__all__ = ["Expansion", "ExpansionReason", "ExpandRelationsStep", "expand_relations", "DOCUMENT_GRAPH_WEIGHT", "PASSAGE_GRAPH_WEIGHT",
           "default_graph_weight"]
