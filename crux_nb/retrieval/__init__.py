"""Retrieval: hit kinds, recipe steps, recipes and traces.

Layout by family: ``base`` (the step base) and ``types`` (what steps exchange), ``retriever/`` (the ``retrieve``
producer step and its legs), ``expand/`` (``expand_relations``), ``globalsearch/`` (``global_search``: step, units,
descent, map/reduce), ``custom`` (``custom_step``), ``recipe``, ``results`` and ``trace``. Hit types
live in :mod:`crux_nb.hits` (below the graph layer) and are re-exported here.
"""

from ..hits import (AssertionRef, EvidenceHit, FindingCitation, FindingHit, GraphProvenance, HitParent, Lineage,
                   Provenance, RetrieverHit, Source, SourceScore, hit_key)
from .base import Step
from .custom import CustomStep, custom_step
from .expand import ExpandRelationsStep, expand_relations
from .globalsearch import GlobalSearchStep, Preflight, global_search
from .recipe import Recipe
from .results import HitList, RetrievalResult
from .retriever import BM25Leg, Leg, RetrieveStep, retrieve
from .trace import KnowledgeTrace, RecipeTrace, StepTrace
from .types import KnowledgeBinding, PlannedQuery, Request, StepContext, StepInput, StepOutput

# user-facing names (the verbs, results, hits and traces, and what a custom step receives and returns);
# the rest above stays importable for step authors
__all__ = [
    "retrieve", "expand_relations", "global_search", "custom_step", "Recipe", "HitList", "RetrievalResult",
    "EvidenceHit", "FindingHit", "FindingCitation", "RetrieverHit", "RecipeTrace", "StepTrace", "KnowledgeTrace",
    "Preflight", "BM25Leg", "Leg", "StepInput", "StepOutput", "StepContext",
]
