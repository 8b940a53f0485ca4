"""User steps: ``custom_step(fn, id=...)`` wraps a function ``fn(input, context)`` as a recipe step."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ParameterError
from .base import Step
from .types import PHASES, StepContext, StepInput, StepOutput

__all__ = ["CustomStep", "custom_step"]


@dataclass(frozen=True, repr=False)
class CustomStep(Step):
    """A user step: ``fn(input, context)`` returns a ``StepOutput`` or a list of hits."""

    id: str
    fn: Callable[[StepInput, StepContext], Any]
    phase: tuple[str, str] = ("hits", "hits")
    kind: str = "custom"
    needs_model: bool = False
    step_model: Any = None
    builtin: bool = False
    factory = "custom_step"

    def __post_init__(self) -> None:
        owner = "custom_step()"
        if not isinstance(self.id, str) or not self.id.strip():
            raise ParameterError(owner, "id", "a non-empty string", self.id)
        if not callable(self.fn):
            raise ParameterError(owner, "fn", "a callable (input, context) -> hits", self.fn)
        phase = tuple(self.phase)
        if len(phase) != 2 or not all(p in PHASES for p in phase):
            raise ParameterError(owner, "phase", "a pair of 'queries'/'hits'", self.phase)
        object.__setattr__(self, "phase", phase)

    @property
    def model(self) -> Any:
        return self.step_model

    def config(self) -> dict[str, Any]:
        return {"id": self.id, "phase": self.phase, "fn": getattr(self.fn, "__name__", "fn")}

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        result = self.fn(input, context)
        if isinstance(result, StepOutput):
            return result
        if self.phase[1] == "queries":
            return StepOutput(queries=tuple(result))
        return StepOutput(hits=tuple(result))


def custom_step(fn: Callable[[StepInput, StepContext], Any], *, id: str, phase: tuple[str, str] = ("hits", "hits"),
                needs_model: bool = False, model: Any = None) -> CustomStep:
    """Wrap a function as a recipe step (kind ``custom``).

    ``fn(input, context)`` returns the step's output hits (phase ``("hits", "hits")``: it receives the
    previous step's hits in ``input.hits``).

    >>> import crux_nb
    >>> kb = crux_nb.knowledge_base(id="docs")
    >>> kb.add_text("a.md", "Launch in May."); kb.add_text("b.md", "Launch in June.")
    >>> only_a = crux_nb.custom_step(lambda inp, ctx: [h for h in inp.hits if h.ref.source_id == "a.md"], id="only-a")
    >>> [str(h.ref) for h in kb.recipe(steps=[crux_nb.retrieve(), only_a]).retrieve("launch")]
    ['chunk:a.md:c0000']
    """
    return CustomStep(id=id, fn=fn, phase=phase, needs_model=needs_model, step_model=model)
