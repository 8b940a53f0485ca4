"""The ``retrieve`` producer step (``step``) and its legs (``lexical``: BM25, reciprocal-rank fusion)."""

from .lexical import BM25Leg, Leg
from .step import RetrieveStep, retrieve

__all__ = ["BM25Leg", "Leg", "RetrieveStep", "retrieve"]
