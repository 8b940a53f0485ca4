"""The :class:`Embedder` port, its checks, and :class:`FunctionEmbedder` (any callable as an embedder)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import numpy as np

from .._hashing import stable_hash
from ..errors import ModelError, ParameterError

__all__ = ["Embedder", "FunctionEmbedder", "check_embedder", "embed_texts"]


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors.

    ``name`` is for people; ``fingerprint`` changes whenever the vectors would
    (model, weights, dimension), and keys the vectors cached per chunk; ``dim``
    is the vector length; ``embed(texts)`` returns a ``float32`` array of shape
    ``(len(texts), dim)``, the same vectors for the same texts.

    Examples
    --------
    Any object with these four members is an embedder (no base class needed):

    >>> import numpy as np
    >>> from crux_nb.embeddings import Embedder, check_embedder
    >>> class Lengths:
    ...     name, fingerprint, dim = "lengths", "lengths-v1", 2
    ...     def embed(self, texts):
    ...         return np.array([[len(t), 1.0] for t in texts], dtype=np.float32)
    >>> isinstance(Lengths(), Embedder), check_embedder(Lengths()).dim
    (True, 2)
    """

    name: str
    fingerprint: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """One ``float32`` vector per text, in order: shape ``(len(texts), dim)``.

        Examples
        --------
        >>> from crux_nb.embeddings import FunctionEmbedder
        >>> emb = FunctionEmbedder(lambda texts: [[t.count("a"), 1.0] for t in texts], dim=2)
        >>> emb.embed(["plan", "banana"]).tolist()
        [[1.0, 1.0], [3.0, 1.0]]
        """
        ...


def check_embedder(embedder: Any, *, owner: str = "embedder") -> Any:
    """``embedder`` when it has ``name``, ``fingerprint``, ``dim`` and ``embed``; else a :class:`ParameterError`.

    >>> check_embedder(FunctionEmbedder(lambda texts: [[1.0, 0.0] for _ in texts], dim=2, name="toy")).name
    'toy'
    """
    ok = (isinstance(embedder, Embedder) and isinstance(embedder.name, str) and isinstance(embedder.fingerprint, str)
          and isinstance(embedder.dim, int) and not isinstance(embedder.dim, bool) and embedder.dim >= 1)
    if not ok:
        raise ParameterError(owner, "embedder", "an Embedder (name, fingerprint, dim >= 1, embed(texts))",
                             type(embedder).__name__)
    return embedder


def embed_texts(embedder: Any, texts: Sequence[str]) -> np.ndarray:
    """``embedder.embed(texts)`` checked: a finite ``float32`` array of shape ``(len(texts), dim)``.

    A wrong shape or a non-finite value raises :class:`~crux_nb.errors.ModelError`
    (code ``embedding_bad_output``), so a broken embedder never stores garbage.

    >>> embed_texts(FunctionEmbedder(lambda texts: [[len(t), 1.0] for t in texts], dim=2), ["ab"]).tolist()
    [[2.0, 1.0]]
    """
    texts = list(texts)
    if not texts:
        return np.zeros((0, embedder.dim), dtype=np.float32)
    try:
        vectors = np.asarray(embedder.embed(texts), dtype=np.float32)
    except (TypeError, ValueError) as exc:
        raise _bad(embedder, f"its output is not a numeric array ({type(exc).__name__})") from None
    if vectors.shape != (len(texts), embedder.dim):
        raise _bad(embedder, f"it returned shape {vectors.shape} for {len(texts)} text(s) of dim {embedder.dim}")
    if not np.isfinite(vectors).all():
        raise _bad(embedder, "it returned NaN or infinite values")
    return vectors


def _bad(embedder: Any, detail: str) -> ModelError:
    return ModelError(f"embedder {embedder.name!r}: {detail}.", code="embedding_bad_output",
                      hint="embed(texts) must return one finite vector of length dim per text.")


class FunctionEmbedder:
    """Any callable ``texts -> vectors`` as an :class:`Embedder`.

    ``fingerprint`` defaults to a hash of ``name`` and ``dim``: give a ``version``
    (or your own ``fingerprint``) whenever the function's vectors change, so
    cached vectors are recomputed.

    Examples
    --------
    >>> import numpy as np
    >>> def letters(texts):
    ...     return np.array([[t.count("a"), t.count("e"), 1.0] for t in texts])
    >>> emb = FunctionEmbedder(letters, dim=3, name="letters", version="1")
    >>> emb.name, emb.dim, len(emb.fingerprint)
    ('letters', 3, 16)
    >>> emb.embed(["release plan"]).tolist()
    [[2.0, 3.0, 1.0]]
    """

    def __init__(self, fn: Callable[[list[str]], Any], *, dim: int, name: str | None = None,
                 version: str = "1", fingerprint: str | None = None):
        if not callable(fn):
            raise ParameterError("FunctionEmbedder()", "fn", "a callable texts -> vectors", fn)
        if isinstance(dim, bool) or not isinstance(dim, int) or dim < 1:
            raise ParameterError("FunctionEmbedder()", "dim", "a positive integer", dim)
        self.fn = fn
        self.dim = dim
        self.name = name or getattr(fn, "__name__", "function")
        self.fingerprint = fingerprint or stable_hash({"kind": "function", "name": self.name, "dim": dim,
                                                       "version": version})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """``fn(texts)`` as a ``float32`` array (use :func:`embed_texts` to check its shape too).

        Examples
        --------
        >>> emb = FunctionEmbedder(lambda texts: [[len(t)] for t in texts], dim=1, name="length")
        >>> vectors = emb.embed(["ab", "abcd"])
        >>> vectors.tolist(), vectors.dtype.name
        ([[2.0], [4.0]], 'float32')
        """
        return np.asarray(self.fn(list(texts)), dtype=np.float32)

    def __repr__(self) -> str:
        return f"FunctionEmbedder(name={self.name!r}, dim={self.dim}, fingerprint={self.fingerprint!r})"
