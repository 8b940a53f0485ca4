"""A paired comparison of two recipes over the same questions, with a seeded bootstrap interval."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from ..errors import ParameterError

__all__ = ["Comparison", "paired_comparison"]


@dataclass(frozen=True)
class Comparison:
    """Recipe ``b`` against recipe ``a`` on one metric, question by question.

    ``wins``/``losses``/``ties`` count questions where ``b`` scores higher/lower/the same;
    ``mean_diff`` is the mean of ``b - a`` with a percentile-bootstrap interval
    ``(ci_low, ci_high)`` over questions (resampled ``n_boot`` times with ``seed``).

    Examples
    --------
    >>> import numpy as np
    >>> from crux_nb.evaluation import paired_comparison
    >>> c = paired_comparison("bm25", "hybrid", "recall@5", np.array([0.0, 0.5, 1.0]), np.array([1.0, 1.0, 1.0]),
    ...                       question_ids=["q1", "q2", "q3"])
    >>> c
    Comparison('hybrid' vs 'bm25' on recall@5: wins=2, losses=0, ties=1, mean_diff=+0.500, 95% CI [+0.000, +1.000])
    >>> c.significant
    False
    """

    a: str
    b: str
    metric: str
    wins: int
    losses: int
    ties: int
    mean_a: float
    mean_b: float
    mean_diff: float
    ci_low: float
    ci_high: float
    confidence: float
    n_boot: int
    seed: int
    per_question: tuple[tuple[str, float, float], ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """The summary fields as plain data (no per-question scores).

        Examples
        --------
        >>> import numpy as np
        >>> from crux_nb.evaluation import paired_comparison
        >>> c = paired_comparison("a", "b", "mrr", np.array([0.5, 1.0]), np.array([1.0, 1.0]), n_boot=100)
        >>> {k: v for k, v in c.to_dict().items() if k in ("wins", "ties", "mean_a", "mean_b", "n_boot")}
        {'wins': 1, 'ties': 1, 'mean_a': 0.75, 'mean_b': 1.0, 'n_boot': 100}
        """
        return {k: getattr(self, k) for k in ("a", "b", "metric", "wins", "losses", "ties", "mean_a", "mean_b",
                                              "mean_diff", "ci_low", "ci_high", "confidence", "n_boot", "seed")}

    def to_frame(self) -> pd.DataFrame:
        """One row per question: ``question_id``, the two scores and their difference.

        Examples
        --------
        >>> import numpy as np
        >>> from crux_nb.evaluation import paired_comparison
        >>> c = paired_comparison("a", "b", "mrr", np.array([0.5, 1.0]), np.array([1.0, 1.0]), question_ids=["q1", "q2"])
        >>> c.to_frame()
          question_id    a    b  diff
        0          q1  0.5  1.0   0.5
        1          q2  1.0  1.0   0.0
        """
        frame = pd.DataFrame(list(self.per_question), columns=["question_id", self.a, self.b])
        frame["question_id"] = frame["question_id"].astype("str")
        frame["diff"] = frame[self.b] - frame[self.a]
        return frame

    @property
    def significant(self) -> bool:
        """True when the bootstrap interval excludes 0."""
        return self.ci_low > 0 or self.ci_high < 0

    def __repr__(self) -> str:
        return (f"Comparison({self.b!r} vs {self.a!r} on {self.metric}: wins={self.wins}, losses={self.losses}, "
                f"ties={self.ties}, mean_diff={self.mean_diff:+.3f}, "
                f"{self.confidence:.0%} CI [{self.ci_low:+.3f}, {self.ci_high:+.3f}])")

    def _repr_html_(self) -> str:
        from html import escape

        return ("<div class='crux-comparison' style='font-family:sans-serif;font-size:13px'>"
                f"<b>{escape(self.b)}</b> vs <b>{escape(self.a)}</b> on <code>{escape(self.metric)}</code>: "
                f"{self.wins} wins, {self.losses} losses, {self.ties} ties; mean difference "
                f"<b>{self.mean_diff:+.3f}</b> ({self.confidence:.0%} CI {self.ci_low:+.3f} … {self.ci_high:+.3f})</div>")


def paired_comparison(a: str, b: str, metric: str, left: np.ndarray, right: np.ndarray, *, question_ids=(),
                      n_boot: int = 2000, seed: int = 0, confidence: float = 0.95) -> Comparison:
    """Wins/losses/ties and a bootstrap CI of the mean of ``right - left``.

    >>> c = paired_comparison("a", "b", "recall@5", np.array([0.0, 0.5, 1.0, 1.0]), np.array([1.0, 0.5, 1.0, 0.0]))
    >>> (c.wins, c.losses, c.ties, c.mean_diff)
    (1, 1, 2, 0.0)
    """
    if isinstance(n_boot, bool) or not isinstance(n_boot, int) or n_boot < 1:
        raise ParameterError("compare()", "n_boot", "a positive integer", n_boot)
    if not isinstance(confidence, float) or not 0 < confidence < 1:
        raise ParameterError("compare()", "confidence", "a float between 0 and 1", confidence)
    diff = right - left
    rng = np.random.default_rng(seed)
    samples = rng.integers(0, len(diff), size=(n_boot, len(diff)))
    means = diff[samples].mean(axis=1)
    tail = (1 - confidence) / 2
    low, high = (float(np.quantile(means, tail)), float(np.quantile(means, 1 - tail)))
    return Comparison(a=a, b=b, metric=metric, wins=int((diff > 0).sum()), losses=int((diff < 0).sum()),
                      ties=int((diff == 0).sum()), mean_a=float(left.mean()), mean_b=float(right.mean()),
                      mean_diff=float(diff.mean()), ci_low=low, ci_high=high, confidence=confidence, n_boot=n_boot,
                      seed=seed, per_question=tuple(zip(map(str, question_ids), left.tolist(), right.tolist())))
