"""What ``expand_relations`` records per added hit (the expansion view, the workbench and exports read them)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

__all__ = ["Expansion", "ExpansionReason"]


@dataclass(frozen=True)
class ExpansionReason:
    """Why the relevance ranking placed a hit: the waypoints on its path with their specificity
    (``1/|chunks adjacent|``) and the parts of its score (``score = graph * (1 + relevance)``)."""

    entities: tuple[tuple[str, float], ...]
    graph: float
    relevance: float
    score: float

    def to_dict(self) -> dict[str, Any]:
        return {"entities": [[r, w] for r, w in self.entities], "graph": self.graph, "relevance": self.relevance,
                "score": self.score}


@dataclass(frozen=True)
class Expansion:
    """One added hit and how it was reached (what the expansion view shows)."""

    key: str
    ref: str
    seed: str
    path: tuple[str, ...]
    edges: tuple[str, ...]
    distance: int
    score: float
    position: int
    supports: tuple[str, ...]
    reason: ExpansionReason | None = None  # the relevance ranking's reason; None under "upstream"
    via: str = "graph"  # "retrieve": the retrieve step's next candidate, which outranked the graph's (no route)
