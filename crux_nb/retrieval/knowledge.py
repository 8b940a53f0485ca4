"""The knowledge trace payload a connected-knowledge step records on its step trace."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, Mapping

Coverage = Literal["exact", "compensated", "raw-fallback", "materialization-wait"]


@dataclass(frozen=True)
class KnowledgeTrace:
    """What a step read and how completely: upstream's ``KnowledgeStepTrace``, in snake_case."""

    contributor: str
    coverage: Coverage
    coverage_basis: str
    generations: tuple[str, ...] = ()
    view: Mapping[str, Any] | None = None
    scan: str | None = None
    detail: str | None = None
    available: Mapping[str, int] = field(default_factory=dict)
    processed: Mapping[str, int] = field(default_factory=dict)
    adaptive: Any = None
    preflight: Mapping[str, int] | None = None
    truncations: tuple[Any, ...] = ()
    calls: Any = None

    def __repr__(self) -> str:
        return (f"KnowledgeTrace(contributor={self.contributor!r}, coverage={self.coverage!r}, "
                f"available={dict(self.available)}, processed={dict(self.processed)})")
