"""The knowledge base store: frames, ingestion, persistence."""

from .knowledge_base import KnowledgeBase, knowledge_base

__all__ = ["KnowledgeBase", "knowledge_base"]
