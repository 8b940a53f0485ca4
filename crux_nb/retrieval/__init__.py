"""Retrieval: hit kinds, recipe steps, recipes and traces."""

from .hits import (AssertionRef, EvidenceHit, FindingCitation, FindingHit, GraphProvenance, HitParent, Lineage,
                   Provenance, RetrieverHit, Source, SourceScore, hit_key)
from .expand import ExpandRelationsStep, expand_relations
from .gs_step import GlobalSearchStep, Preflight, global_search
from .knowledge import KnowledgeTrace
from .lexical import BM25Leg, Leg
from .recipe import Recipe
from .results import HitList, RetrievalResult
from .steps import CustomStep, RetrieveStep, Step, custom_step, retrieve
from .trace import RecipeTrace, StepTrace
from .types import KnowledgeBinding, PlannedQuery, Request, StepContext, StepInput, StepOutput

__all__ = [
    "AssertionRef", "EvidenceHit", "FindingCitation", "FindingHit", "GraphProvenance", "HitParent", "Lineage",
    "Provenance", "RetrieverHit", "Source", "SourceScore", "hit_key", "BM25Leg", "Leg", "Recipe", "HitList",
    "RetrievalResult", "CustomStep", "RetrieveStep", "Step", "custom_step", "retrieve", "RecipeTrace", "StepTrace",
    "KnowledgeBinding", "ExpandRelationsStep", "expand_relations", "GlobalSearchStep", "Preflight", "global_search", "KnowledgeTrace", "PlannedQuery", "Request", "StepContext", "StepInput", "StepOutput",
]
