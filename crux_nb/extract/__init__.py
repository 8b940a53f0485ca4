"""Entity and relation extraction into the knowledge graph (``mentions`` and ``related`` edges)."""

from .entities import ExtractionResult, extract_entities, entity_id_for

__all__ = ["ExtractionResult", "extract_entities", "entity_id_for"]
