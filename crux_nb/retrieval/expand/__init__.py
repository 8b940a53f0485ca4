"""The ``expand_relations`` hit step (``step``) and query-entity matching (``entity_match``)."""

from .step import Expansion, ExpandRelationsStep, expand_relations

__all__ = ["Expansion", "ExpandRelationsStep", "expand_relations"]
