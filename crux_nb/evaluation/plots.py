"""matplotlib plots of an evaluation: Recall@k curves and a per-question scatter of two recipes."""

from __future__ import annotations

from typing import Any

import pandas as pd

__all__ = ["recall_curves", "paired_scatter"]


def _axes(ax: Any, size: tuple[float, float]):
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _fig, ax = plt.subplots(figsize=size)
    return ax


def recall_curves(curve: pd.DataFrame, *, ax: Any = None):
    """One line per column of ``curve`` (index k, values mean Recall@k)."""
    ax = _axes(ax, (6, 3.6))
    for name in curve.columns:
        ax.plot(curve.index, curve[name], marker="o", markersize=3, label=name)
    ax.set_xlabel("k")
    ax.set_ylabel("mean Recall@k")
    ax.set_ylim(0, 1.02)
    ax.set_xticks(list(curve.index))
    ax.grid(alpha=0.3)
    ax.legend(loc="lower right")
    return ax


def paired_scatter(comparison: Any, *, ax: Any = None):
    """Each question's score under ``comparison.a`` (x) and ``comparison.b`` (y), jittered apart where they overlap."""
    import numpy as np

    ax = _axes(ax, (4.2, 4.2))
    frame = comparison.to_frame()
    rng = np.random.default_rng(0)  # fixed jitter: the same picture every run
    jitter = rng.uniform(-0.02, 0.02, size=(len(frame), 2))
    colors = np.where(frame["diff"] > 0, "tab:green", np.where(frame["diff"] < 0, "tab:red", "tab:gray"))
    ax.scatter(frame[comparison.a] + jitter[:, 0], frame[comparison.b] + jitter[:, 1], c=colors, s=22, alpha=0.8)
    ax.plot([0, 1], [0, 1], color="black", lw=0.8, ls="--")
    ax.set_xlim(-0.05, 1.05)
    ax.set_ylim(-0.05, 1.05)
    ax.set_xlabel(f"{comparison.a} {comparison.metric}")
    ax.set_ylabel(f"{comparison.b} {comparison.metric}")
    ax.set_title(f"{comparison.wins} wins / {comparison.losses} losses / {comparison.ties} ties")
    return ax
