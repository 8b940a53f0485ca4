"""The ``retrieve`` producer step (``step``) and its legs (``lexical``: BM25, reciprocal-rank fusion; ``dense``: cosine)."""

from .dense import DenseLeg
from .lexical import BM25Leg, Leg
from .step import RetrieveStep, retrieve

__all__ = ["BM25Leg", "DenseLeg", "Leg", "RetrieveStep", "retrieve"]
