"""Chunk vectors: computed once per chunk content and embedder fingerprint, kept in the ``embeddings`` table.

:func:`embed_chunks` embeds the chunks whose content has no vector yet for the
embedder (new or changed chunks only) and commits them to the knowledge base in
one change, so they are saved with it (Parquet, checksummed like every table)
and dropped with their chunks on ``kb.remove``. A failing embedder raises before
anything is committed: the knowledge base stays as it was.

:func:`chunk_matrix` gives the L2-normalised vectors aligned with
``state.chunks`` rows for exact cosine search; chunks without a stored vector
are embedded on the fly (kept with that state in memory, not saved).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from .._hashing import text_hash
from ..errors import CruxError, ParameterError
from ..schema import coerce
from .protocol import check_embedder, embed_texts

__all__ = ["EmbeddingResult", "embed_chunks", "chunk_matrix", "entity_matrix", "DEFAULT_BATCH_SIZE"]

DEFAULT_BATCH_SIZE = 256
PROGRESS_THRESHOLD = 8  # batches


@dataclass(frozen=True)
class EmbeddingResult:
    """What one :func:`embed_chunks` run did.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.embeddings import FunctionEmbedder, embed_chunks
    >>> kb = crux_nb.knowledge_base(id="demo")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> result = embed_chunks(kb, FunctionEmbedder(lambda texts: [[len(t), 1.0] for t in texts], dim=2, name="toy"))
    >>> result.embedded, result.reused, result.dim
    (1, 0, 2)
    """

    embedder: str
    fingerprint: str
    embedded: int
    reused: int
    dim: int

    def __repr__(self) -> str:
        return (f"EmbeddingResult(embedder={self.embedder!r}, embedded={self.embedded}, reused={self.reused}, "
                f"dim={self.dim})")


def _content_hashes(state: Any) -> list[str]:
    return state.cached(("content_hashes",), lambda: [text_hash(c) for c in state.lookup.columns["content"]])


def _stored(state: Any, fingerprint: str) -> dict[str, bytes]:
    table = state.embeddings
    rows = table[table["embedder"] == fingerprint]
    return dict(zip(rows["content_hash"].tolist(), rows["vector"].tolist()))


def _missing(state: Any, fingerprint: str) -> tuple[list[str], list[str], dict[str, bytes]]:
    """(hashes, texts) of distinct chunk contents without a stored vector, in chunk order; and the stored ones."""
    stored = _stored(state, fingerprint)
    hashes, texts, seen = [], [], set()
    for h, text in zip(_content_hashes(state), state.lookup.columns["content"]):
        if h not in stored and h not in seen:
            seen.add(h)
            hashes.append(h)
            texts.append(text)
    return hashes, texts, stored


def _embed_batches(embedder: Any, texts: list[str], batch_size: int, progress: bool | None) -> np.ndarray:
    batches = [texts[i:i + batch_size] for i in range(0, len(texts), batch_size)]
    show = len(batches) >= PROGRESS_THRESHOLD if progress is None else bool(progress)
    from tqdm.auto import tqdm

    parts = []
    with tqdm(total=len(texts), desc="embedding chunks", unit="chunk", disable=not show) as bar:
        for batch in batches:
            parts.append(embed_texts(embedder, batch))
            bar.update(len(batch))
    return np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)


def embed_chunks(kb: Any, embedder: Any = None, *, batch_size: int = DEFAULT_BATCH_SIZE,
                 progress: bool | None = None) -> EmbeddingResult:
    """Embed every chunk of ``kb`` that has no vector for ``embedder`` yet, and store the vectors in ``kb``.

    Parameters
    ----------
    kb : KnowledgeBase
    embedder : Embedder, optional
        Defaults to :class:`~crux_nb.embeddings.StaticEmbedder`.
    batch_size : int
        Texts per ``embed`` call.
    progress : bool, optional
        A tqdm bar; by default shown from 8 batches on.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.embeddings import FunctionEmbedder, embed_chunks
    >>> kb = crux_nb.knowledge_base(id="demo")
    >>> kb.add_text("a.md", "Release planning starts in March.")
    >>> toy = FunctionEmbedder(lambda texts: [[len(t), 1.0] for t in texts], dim=2, name="toy")
    >>> embed_chunks(kb, toy)
    EmbeddingResult(embedder='toy', embedded=1, reused=0, dim=2)
    >>> embed_chunks(kb, toy)  # nothing changed: nothing is embedded again
    EmbeddingResult(embedder='toy', embedded=0, reused=1, dim=2)
    """
    if embedder is None:
        from .static import StaticEmbedder

        embedder = StaticEmbedder()
    check_embedder(embedder, owner="embed_chunks()")
    if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
        raise ParameterError("embed_chunks()", "batch_size", "a positive integer", batch_size)
    state = kb.state
    fingerprint = embedder.fingerprint
    hashes, texts, stored = _missing(state, fingerprint)
    reused = len(set(_content_hashes(state)) & set(stored))
    if not hashes:
        return EmbeddingResult(embedder=embedder.name, fingerprint=fingerprint, embedded=0, reused=reused,
                               dim=embedder.dim)
    vectors = _embed_batches(embedder, texts, batch_size, progress)  # raises before any commit
    rows = pd.DataFrame({"embedder": [fingerprint] * len(hashes), "content_hash": hashes,
                         "vector": pd.Series([v.astype("<f4").tobytes() for v in vectors], dtype="object")})
    kb.commit(lambda current: _apply(current, rows), expected=state)  # raises state_changed if kb moved on
    return EmbeddingResult(embedder=embedder.name, fingerprint=fingerprint, embedded=len(hashes), reused=reused,
                           dim=embedder.dim)


def _apply(current: Any, rows: pd.DataFrame) -> Any:
    table = pd.concat([current.embeddings, rows], ignore_index=True) if len(current.embeddings) else rows
    table = table.sort_values(["embedder", "content_hash"], kind="stable").reset_index(drop=True)
    # a new state object: caches (lexical index, matrices) are rebuilt lazily, version moves on
    return replace(current, embeddings=coerce(table, "embeddings"), version=current.version + 1)


def chunk_matrix(state: Any, embedder: Any) -> np.ndarray:
    """L2-normalised ``float32`` vectors, one row per ``state.chunks`` row (built once per state and embedder).

    >>> import crux_nb
    >>> from crux_nb.embeddings import FunctionEmbedder
    >>> kb = crux_nb.knowledge_base(id="m")
    >>> kb.add_text("a.md", "alpha")
    >>> chunk_matrix(kb.state, FunctionEmbedder(lambda ts: [[3.0, 4.0] for _ in ts], dim=2)).tolist()
    [[0.6000000238418579, 0.800000011920929]]
    """
    return state.cached(("dense", embedder.fingerprint), lambda: _chunk_matrix(state, embedder))


def _chunk_matrix(state: Any, embedder: Any) -> np.ndarray:
    hashes, texts, stored = _missing(state, embedder.fingerprint)
    fresh = embed_texts(embedder, texts) if texts else np.zeros((0, embedder.dim), dtype=np.float32)
    index = {h: i for i, h in enumerate(stored)}
    index.update({h: len(stored) + i for i, h in enumerate(hashes)})
    blob = b"".join(stored.values())
    known = np.frombuffer(blob, dtype="<f4").reshape(len(stored), -1) if stored else np.zeros((0, embedder.dim), "<f4")
    if known.shape[1] != embedder.dim:
        raise CruxError(f"stored vectors for embedder {embedder.name!r} have dim {known.shape[1]}, not {embedder.dim}.",
                        code="embedding_dim_mismatch", hint="give the embedder a new fingerprint when its vectors change.")
    pool = np.concatenate([known.astype(np.float32), fresh]) if len(fresh) else known.astype(np.float32)
    rows = np.array([index[h] for h in _content_hashes(state)], dtype=np.int64)
    matrix = pool[rows] if len(rows) else np.zeros((0, embedder.dim), dtype=np.float32)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    matrix = np.ascontiguousarray(matrix / np.where(norms > 0, norms, 1.0), dtype=np.float32)
    matrix.setflags(write=False)
    return matrix


def entity_matrix(state: Any, embedder: Any) -> np.ndarray:
    """L2-normalised ``float32`` vectors of the entities' canonical names, one row per ``state.entities`` row
    (embedded once per state and embedder, in memory only; what ``expand_relations(dense_entities=...)`` reads).

    >>> import crux_nb, pandas as pd
    >>> from crux_nb.embeddings import FunctionEmbedder
    >>> kb = crux_nb.knowledge_base(id="e")
    >>> kb.add_text("a.md", "Ada met Alan.")
    >>> kb.add_entities(pd.DataFrame({"entity_id": ["ada"], "canonical_name": ["Ada"]}))
    >>> entity_matrix(kb.state, FunctionEmbedder(lambda ts: [[len(t), 0.0] for t in ts], dim=2)).tolist()
    [[1.0, 0.0]]
    """
    def build() -> np.ndarray:
        names = [n if isinstance(n, str) else "" for n in state.entities["canonical_name"].tolist()]
        parts = [embed_texts(embedder, names[i:i + DEFAULT_BATCH_SIZE]) for i in range(0, len(names), DEFAULT_BATCH_SIZE)]
        matrix = np.concatenate(parts) if parts else np.zeros((0, embedder.dim), dtype=np.float32)
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        matrix = np.ascontiguousarray(matrix / np.where(norms > 0, norms, 1.0), dtype=np.float32)
        matrix.setflags(write=False)
        return matrix

    return state.cached(("entity-dense", embedder.fingerprint), build)
