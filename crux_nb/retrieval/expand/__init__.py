"""The ``expand_relations`` hit step (``step``), its joint candidate pool (``joint``), its records (``records``) and
query-entity matching (``entity_match``)."""

from .joint import GRAPH_WEIGHT
from .records import Expansion, ExpansionReason
from .step import ExpandRelationsStep, expand_relations

__all__ = ["Expansion", "ExpansionReason", "ExpandRelationsStep", "expand_relations", "GRAPH_WEIGHT"]
