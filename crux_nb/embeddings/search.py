"""Exact cosine scores of one query against a chunk matrix: one matrix-vector product on one BLAS thread.

The matrix (:func:`~crux_nb.embeddings.chunk_matrix`) is L2-normalised ``float32``, contiguous, built
once per knowledge-base state and embedder fingerprint, so a query costs one normalisation and one
``sgemv``. That product reads the whole matrix (100 MB at 100k chunks x 256 dims) and is bound by
memory bandwidth: a second BLAS thread gains little on two cores and, when the other core is busy,
its spin-waiting makes the call several times slower (see ``bench/dense.py``). So the product runs
with BLAS limited to one thread (``threadpoolctl``; without it, numpy's own single-threaded
``einsum`` loop, which gives the same scores to float rounding).
"""

from __future__ import annotations

import threading
from typing import Any

import numpy as np

__all__ = ["query_vector", "cosine_scores", "SINGLE_THREAD_MIN"]

#: below this many matrix entries BLAS runs on one thread anyway (OpenBLAS' own cut-off is far lower)
SINGLE_THREAD_MIN = 1 << 16

_BLAS: list[Any] = []  # [controller or None], filled on first use
_LOCK = threading.Lock()
_LIMIT: dict[str, Any] = {"depth": 0, "limiter": None}  # concurrent products share one limit, restored by the last


def _blas():
    if not _BLAS:
        with _LOCK:
            if not _BLAS:
                try:
                    from threadpoolctl import ThreadpoolController

                    controller = ThreadpoolController().select(user_api="blas")
                    _BLAS.append(controller if len(controller.lib_controllers) else None)
                except Exception:  # noqa: BLE001 - not installed or no BLAS found: numpy's own loop
                    _BLAS.append(None)
    return _BLAS[0]


def query_vector(embedder: Any, query: str) -> np.ndarray | None:
    """The query's unit ``float32`` vector, or ``None`` for a zero vector (it matches nothing).

    Examples
    --------
    >>> from crux_nb.embeddings import FunctionEmbedder
    >>> toy = FunctionEmbedder(lambda ts: [[t.count("a"), t.count("b")] for t in ts], dim=2)
    >>> [round(float(x), 3) for x in query_vector(toy, "aab")], query_vector(toy, "xyz")
    ([0.894, 0.447], None)
    """
    vector = np.asarray(embedder.embed([query]), dtype=np.float32).reshape(-1)
    norm = float(np.sqrt(np.dot(vector, vector)))
    if not norm > 0.0 or not np.isfinite(norm):
        return None
    return vector / np.float32(norm)


def cosine_scores(matrix: np.ndarray, unit: np.ndarray) -> np.ndarray:
    """``matrix @ unit`` as ``float32`` (cosines, since both sides are normalised), on one BLAS thread.

    >>> m = np.array([[1.0, 0.0], [0.6, 0.8]], dtype=np.float32)
    >>> [round(float(x), 3) for x in cosine_scores(m, np.array([0.0, 1.0], dtype=np.float32))]
    [0.0, 0.8]
    """
    if matrix.size < SINGLE_THREAD_MIN:
        return np.dot(matrix, unit)
    blas = _blas()
    if blas is None:
        return np.einsum("ij,j->i", matrix, unit)
    with _LOCK:
        if _LIMIT["depth"] == 0:
            _LIMIT["limiter"] = blas.limit(limits=1)
        _LIMIT["depth"] += 1
    try:
        return np.dot(matrix, unit)
    finally:
        with _LOCK:
            _LIMIT["depth"] -= 1
            if _LIMIT["depth"] == 0:
                _LIMIT["limiter"].restore_original_limits()
                _LIMIT["limiter"] = None
