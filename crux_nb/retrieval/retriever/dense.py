"""The dense retrieval leg: exact cosine search over chunk vectors in numpy.

``DenseLeg(embedder)`` plugs into ``retrieve(legs=...)`` beside ``BM25Leg()``;
the step applies request filters and fuses the legs by reciprocal rank (each
leg's ``weight`` scales its RRF term). Chunk vectors come from the knowledge
base's ``embeddings`` table (:func:`crux_nb.embeddings.embed_chunks`); chunks
without one are embedded on first use and kept with that state in memory.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ...embeddings import check_embedder, chunk_matrix, cosine_scores, query_vector
from ...errors import ParameterError

__all__ = ["DenseLeg"]


class DenseLeg:
    """Cosine similarity of the query's vector to every chunk's vector (negative similarities score 0).

    Parameters
    ----------
    embedder : Embedder, optional
        Defaults to :class:`~crux_nb.embeddings.StaticEmbedder` (the ``embed`` extra).
    id : str
        The leg's id in provenance (``ranks``, ``per_source``).
    weight : float
        This leg's weight in reciprocal-rank fusion (BM25's is 1.0).

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.embeddings import FunctionEmbedder
    >>> from crux_nb.retrieval import BM25Leg, DenseLeg, retrieve
    >>> kb = crux_nb.knowledge_base(id="dense")
    >>> kb.add_text("a.md", "alpha alpha")
    >>> kb.add_text("b.md", "beta")
    >>> toy = FunctionEmbedder(lambda ts: [[t.count("alpha"), t.count("beta")] for t in ts], dim=2, name="toy")
    >>> hits = kb.recipe(steps=[retrieve(limit=2, legs=(BM25Leg(), DenseLeg(toy)))]).retrieve("beta")
    >>> [h.source.id for h in hits]
    ['b.md']
    """

    def __init__(self, embedder: Any = None, *, id: str = "dense", weight: float = 1.0):
        if embedder is None:
            from ...embeddings import StaticEmbedder

            embedder = StaticEmbedder()
        self.embedder = check_embedder(embedder, owner="DenseLeg()")
        if not isinstance(id, str) or not id.strip():
            raise ParameterError("DenseLeg()", "id", "a non-empty string", id)
        if isinstance(weight, bool) or not isinstance(weight, (int, float)) or not weight > 0:
            raise ParameterError("DenseLeg()", "weight", "a positive number", weight)
        self.id = id
        self.weight = float(weight)
        self._last: tuple[str, np.ndarray | None] | None = None  # (query, unit vector): embedded once per query

    def query_unit(self, query: str) -> np.ndarray | None:
        """The query's unit vector under this leg's embedder (``None`` for a zero vector); the last one is kept.

        Examples
        --------
        >>> from crux_nb.embeddings import FunctionEmbedder
        >>> from crux_nb.retrieval import DenseLeg
        >>> leg = DenseLeg(FunctionEmbedder(lambda ts: [[t.count("Beacon"), t.count("Platform")] for t in ts], dim=2))
        >>> [round(float(x), 4) for x in leg.query_unit("Beacon Platform")], leg.query_unit("nothing")
        ([0.7071, 0.7071], None)
        """
        last = self._last
        if last is not None and last[0] == query:
            return last[1]
        unit = query_vector(self.embedder, query)
        self._last = (query, unit)
        return unit

    def scores(self, state: Any, query: str) -> np.ndarray:
        """Cosine of the query to every chunk (``float32``, negatives as 0), aligned with ``state.chunks`` rows.

        Examples
        --------
        >>> import crux_nb
        >>> from crux_nb.embeddings import FunctionEmbedder
        >>> from crux_nb.retrieval import DenseLeg
        >>> leg = DenseLeg(FunctionEmbedder(lambda ts: [[t.count("Beacon"), t.count("Platform")] for t in ts], dim=2))
        >>> kb = crux_nb.datasets.load_tiny()
        >>> kb.state.chunks["source_id"].tolist(), leg.scores(kb.state, "the Platform").tolist()
        (['ops.md', 'plan.md', 'team.md'], [1.0, 0.0, 1.0])
        """
        matrix = chunk_matrix(state, self.embedder)  # normalised once per state and embedder fingerprint
        if not len(matrix):
            return np.zeros(0, dtype=np.float32)
        unit = self.query_unit(query)
        if unit is None:
            return np.zeros(len(matrix), dtype=np.float32)
        cosine = cosine_scores(matrix, unit)
        return np.maximum(cosine, 0.0, out=cosine)

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, DenseLeg) and other.id == self.id and other.weight == self.weight
                and other.embedder.fingerprint == self.embedder.fingerprint)

    def __hash__(self) -> int:
        return hash((self.id, self.weight, self.embedder.fingerprint))

    def __repr__(self) -> str:
        weight = "" if self.weight == 1.0 else f", weight={self.weight:g}"
        return f"DenseLeg({self.embedder.name!r}, id={self.id!r}{weight})"
