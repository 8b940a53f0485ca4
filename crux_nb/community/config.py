"""``crux_nb.communities(model=...)``: the communities configuration and its strategy fingerprint."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .._hashing import stable_hash
from ..errors import ParameterError
from ..validation import MODEL_TASKS, check_choice, check_model, check_positive
from .cluster import LEAF_BUDGET, MAX_CHILDREN

# v2: two Leiden iterations per call (igraph default), not to convergence;
# v3: the groups of an over-budget split are packed back together up to the leaf budget
# v4: leaves on numpy + igraph's C Leiden, a top-down balanced tree (2..max_children children), incremental
# v5: the tree groups its leaves with one Leiden iteration per round (the leaves are unchanged)
ALGORITHM = "hierarchical-leiden-v5"
PARENT_BUDGET = 96_000
CHILD_CONTRIBUTION = 2_000
#: The least leaf budget: a chunk of the default size (1,200 characters) with its entities fits one leaf.
MIN_LEAF_BUDGET = 2_000
MODEL_METHODS = MODEL_TASKS  # the one task list (crux_nb.validation)
INCREMENTAL_ENGINE = "leidenalg"
INCREMENTAL_ENGINES = ("leidenalg", "igraph")


@dataclass(frozen=True)
class CommunitiesConfig:
    """How communities are built: the report model, Leiden's resolution and seed, the budgets.

    Made by :func:`crux_nb.communities`; its ``strategy_fingerprint`` decides which stored reports are reused.
    ``incremental_engine`` only decides how an incremental ``prepare()`` updates a previous tree (a
    from-scratch build is the same with either engine), so it is not part of the fingerprint.

    >>> import crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> config = crux_nb.communities(model=OfflineModel(), seed=3)
    >>> config.seed, config.strategy_fingerprint == crux_nb.communities(model=OfflineModel(), seed=3).strategy_fingerprint
    (3, True)
    """

    model: Any
    id: str = "communities"
    resolution: float = 1.0
    seed: int = 0
    max_children: int = MAX_CHILDREN
    incremental_engine: str = INCREMENTAL_ENGINE

    def __post_init__(self) -> None:
        owner = "communities()"
        check_model(owner, self.model, hint="Communities require a knowledge model.")
        if not isinstance(self.id, str) or not self.id.strip() or ":" in self.id:
            raise ParameterError(owner, "id", "a non-empty string without ':'", self.id)
        resolution = check_positive(owner, "resolution", self.resolution)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ParameterError(owner, "seed", "a non-negative integer", self.seed)
        if isinstance(self.max_children, bool) or not isinstance(self.max_children, int) or self.max_children < 2:
            raise ParameterError(owner, "max_children", "an integer >= 2", self.max_children)
        check_choice(owner, "incremental_engine", self.incremental_engine, INCREMENTAL_ENGINES)
        object.__setattr__(self, "resolution", resolution)

    @property
    def leaf_budget(self) -> int:
        """Report input characters per leaf: the model's budget for ``write_report`` (a chat model's follows
        its context window), else :data:`LEAF_BUDGET`; never below one chunk (:data:`MIN_LEAF_BUDGET`)."""
        from ..models.budget import input_budget

        return max(MIN_LEAF_BUDGET, min(LEAF_BUDGET, input_budget(self.model, "write_report", LEAF_BUDGET)))

    @property
    def strategy_fingerprint(self) -> str:
        """Changes whenever reports could change: model, algorithm, resolution, seed, budgets (not the id)."""
        return stable_hash({"version": 1, "algorithm": ALGORITHM,
                            "model": {"name": self.model.name, "fingerprint": self.model.fingerprint},
                            "resolution": self.resolution, "seed": self.seed, "max_children": self.max_children,
                            "budgets": {"leaf": self.leaf_budget, "parent": PARENT_BUDGET,
                                        "child_contribution": CHILD_CONTRIBUTION}})

    def __repr__(self) -> str:
        engine = self.incremental_engine
        engine = "" if engine == INCREMENTAL_ENGINE else f", incremental_engine={engine!r}"
        return (f"communities(model={self.model.name!r}, id={self.id!r}, resolution={self.resolution}, "
                f"seed={self.seed}{engine})")


def communities(*, model: Any, id: str = "communities", resolution: float = 1.0, seed: int = 0,
                max_children: int = MAX_CHILDREN, incremental_engine: str = INCREMENTAL_ENGINE) -> CommunitiesConfig:
    """Configure communities for ``crux_nb.knowledge_base(..., communities=...)``.

    Parameters
    ----------
    model : KnowledgeModel
        Writes the community reports (and extracts entities first if the graph has none).
    id : str
        The configuration's name (not part of the strategy fingerprint).
    resolution : float
        Leiden's resolution (higher: smaller communities).
    seed : int
        Leiden's seed: the same input and seed give the same communities.
    max_children : int
        Children per parent in the tree (at least 2).
    incremental_engine : {"leidenalg", "igraph"}
        How an incremental ``prepare()`` updates the previous tree: ``"leidenalg"`` (default) keeps every
        node of an untouched leaf fixed; ``"igraph"`` only starts igraph's Leiden from the previous
        membership (faster, any node may move, so more reports are rewritten). Not part of the fingerprint.

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> communities(model=OfflineModel())
    communities(model='offline', id='communities', resolution=1.0, seed=0)
    >>> communities(model=OfflineModel(), incremental_engine="igraph")
    communities(model='offline', id='communities', resolution=1.0, seed=0, incremental_engine='igraph')
    """
    return CommunitiesConfig(model=model, id=id, resolution=resolution, seed=seed, max_children=max_children,
                             incremental_engine=incremental_engine)
