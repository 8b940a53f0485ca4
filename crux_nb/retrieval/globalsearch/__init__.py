"""Global search over community reports: the step (``step``), report units and freshness (``units``),
the adaptive descent (``descent``), batch packing, map and reduce (``mapreduce``)."""

from .step import GlobalSearchStep, Preflight, global_search

__all__ = ["GlobalSearchStep", "Preflight", "global_search"]
