"""The ``expand_relations`` hit step (``step``) and query-entity matching (``entity_match``)."""

from .step import Expansion, ExpansionReason, ExpandRelationsStep, expand_relations

__all__ = ["Expansion", "ExpansionReason", "ExpandRelationsStep", "expand_relations"]
