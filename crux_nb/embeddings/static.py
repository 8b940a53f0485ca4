""":class:`StaticEmbedder`: WordLlama's static token embeddings, whose weights ship in the ``wordllama`` wheel.

No torch and no download: the 16 MB weight file lies inside the installed
package (``pip install "crux_nb[embed]"``). A text's vector is the average of
its tokens' vectors, L2-normalised; the same text always gets the same vector.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._hashing import stable_hash
from ..errors import CruxError, ParameterError

__all__ = ["StaticEmbedder"]

_MODELS: dict[tuple[str, int], object] = {}
_LOCK = threading.Lock()
_DIMS = (64, 128, 256)


def _load(config: str, dim: int):
    """The WordLlama model from the package's own folder (its default looks elsewhere and tries a download)."""
    with _LOCK:
        model = _MODELS.get((config, dim))
        if model is None:
            try:
                wordllama = _import_quietly()
            except ImportError:
                raise CruxError("StaticEmbedder needs the wordllama package.", code="missing_dependency",
                                hint='pip install "crux_nb[embed]" (wordllama ships its weights; no torch).') from None
            folder = Path(wordllama.__file__).parent
            model = wordllama.WordLlama.load(config=config, cache_dir=folder, disable_download=True,
                                             dim=256, trunc_dim=None if dim == 256 else dim)
            _MODELS[(config, dim)] = model
        return model


class StaticEmbedder:
    """Static embeddings from WordLlama (``l2_supercat``), ``dim`` 64, 128 or 256 (Matryoshka truncation).

    Examples
    --------
    >>> emb = StaticEmbedder()
    >>> emb.name, emb.dim
    ('wordllama:l2_supercat', 256)
    >>> vectors = emb.embed(["release planning", "launch plan"])
    >>> vectors.shape, vectors.dtype.name
    ((2, 256), 'float32')
    >>> bool(abs(float((vectors[0] ** 2).sum()) - 1.0) < 1e-5)
    True
    """

    def __init__(self, *, dim: int = 256, batch_size: int = 256):
        if dim not in _DIMS:
            raise ParameterError("StaticEmbedder()", "dim", f"one of {list(_DIMS)}", dim)
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError("StaticEmbedder()", "batch_size", "a positive integer", batch_size)
        self.config = "l2_supercat"
        self.dim = dim
        self.batch_size = batch_size
        self.name = f"wordllama:{self.config}" + ("" if dim == 256 else f":{dim}")
        self.fingerprint = stable_hash({"kind": "wordllama", "config": self.config, "dim": dim,
                                        "version": _version()})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised ``float32`` vectors, one row per text; the same texts give the same vectors.

        Examples
        --------
        >>> emb = StaticEmbedder(dim=64)
        >>> a, b, c = emb.embed(["release planning", "planning the release", "lunch menu"])
        >>> a.shape, bool(a @ b > a @ c)  # cosine: related texts score higher
        ((64,), True)
        >>> emb.embed([]).shape
        (0, 64)
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        vectors = _load(self.config, self.dim).embed(texts, norm=True, batch_size=self.batch_size)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"StaticEmbedder(name={self.name!r}, dim={self.dim}, fingerprint={self.fingerprint!r})"


def _import_quietly():
    """``import wordllama`` without the root-logger setup it does on import (``logging.basicConfig(INFO)``),
    which would make every library's log records print in the user's notebook."""
    import logging

    root = logging.getLogger()
    handlers, level = list(root.handlers), root.level
    import wordllama

    for handler in root.handlers[:]:
        if handler not in handlers:
            root.removeHandler(handler)
    root.setLevel(level)
    return wordllama


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("wordllama")
    except Exception:  # noqa: BLE001 - not installed: embed() says so
        return "missing"
