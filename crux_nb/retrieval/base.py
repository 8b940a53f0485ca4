"""The step base: what every recipe step shares (id, kind, phase, ``config()``, ``to_dict()``, repr).

Each step has ``id``, ``kind``, ``phase`` (input, output), ``needs_model`` and a
public ``config()``; ``to_dict()`` is its data form and ``repr`` its factory
call. Factories (``retrieve``, ``expand_relations``, ``global_search``, ``custom_step``) are the
public constructors. The types steps exchange live in :mod:`crux_nb.retrieval.types`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from .types import StepContext, StepInput, StepOutput

__all__ = ["Step", "PRODUCER_KINDS", "RESERVED_IDS", "changed"]

PRODUCER_KINDS = ("retrieve", "global-search")
RESERVED_IDS = ("retrieve", "fusion")


class Step:
    """Shared behaviour of recipe steps (subclasses are frozen dataclasses).

    >>> import crux_nb
    >>> step = crux_nb.expand_relations(depth=2, id="hop2")
    >>> step.id, step.kind, step.phase, step.to_dict()["config"]["depth"]
    ('hop2', 'custom', ('hits', 'hits'), 2)
    """

    id: str
    kind: str
    phase: tuple[str, str]
    needs_model: bool = False
    builtin: bool = True
    factory: str = "step"

    @property
    def model(self) -> Any:
        return None

    def config(self) -> dict[str, Any]:
        raise NotImplementedError

    def to_dict(self) -> dict[str, Any]:
        """The step as data: id, kind, phase, whether it needs a model, and its ``config()``.

        >>> import crux_nb
        >>> crux_nb.retrieve(limit=5).to_dict()["config"]["limit"]
        5
        """
        return {"id": self.id, "kind": self.kind, "phase": list(self.phase), "needs_model": self.needs_model,
                "config": self.config()}

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        raise NotImplementedError

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"{self.factory}({args})"

    def _repr_html_(self) -> str:
        from ..display.html import step_html

        return step_html(self)


def changed(step: Any, defaults: Mapping[str, Any]) -> dict[str, Any]:
    """The parameters in ``defaults`` whose value on ``step`` differs from the default.

    Built-in steps put these after their core parameters in ``config()``, so a repr shows what
    was changed (as scikit-learn's) and ``to_dict()`` still rebuilds the step exactly. A new
    parameter with a default is one entry in the step's ``DEFAULTS``.

    Examples
    --------
    >>> from crux_nb.retrieval import global_search
    >>> from crux_nb.models import OfflineModel
    >>> changed(global_search(model=OfflineModel(), threshold=60), {"threshold": 50, "max_calls": 32})
    {'threshold': 60}
    """
    return {name: getattr(step, name) for name, default in defaults.items() if getattr(step, name) != default}
