""":class:`OpenAIEmbedder`: any OpenAI-compatible ``/embeddings`` endpoint (OpenAI, Azure, Ollama, vLLM, llama.cpp).

The transport is the one :class:`~crux_nb.models.ChatModel` uses
(:class:`~crux_nb.models.http.JsonEndpoint`): per-request ``timeout``, retries with
backoff on 408/409/429/5xx, timeouts and connection errors, the API key (argument,
else ``$CRUX_API_KEY``, else ``$OPENAI_API_KEY``) never shown in a repr, an error or
the fingerprint. Texts go in batches of ``batch_size``; vectors come back in input
order (by each item's ``index``), as ``float32``, L2-normalised when ``normalize``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from .._hashing import stable_hash
from ..errors import ModelError, ParameterError
from ..models.http import JsonEndpoint, Secret, check_base_url, mask_url, resolve_api_key

__all__ = ["OpenAIEmbedder"]

_PATH = "/embeddings"


class OpenAIEmbedder:
    """Embeddings from an OpenAI-compatible server.

    ``dim`` is asked of the server with one probe call when not given.

    Examples
    --------
    >>> emb = OpenAIEmbedder(base_url="http://127.0.0.1:8080/v1", model="nomic-embed", dim=768, api_key="sk-not-shown")
    >>> emb
    OpenAIEmbedder(name='openai:nomic-embed', base_url='http://127.0.0.1:8080/v1', model='nomic-embed', dim=768, api_key=set)
    >>> "sk-not-shown" in repr(emb) + emb.fingerprint
    False
    """

    def __init__(self, *, base_url: str, model: str, api_key: Secret | str | None = None, dim: int | None = None,
                 name: str | None = None, timeout: float = 60.0, max_retries: int = 3, backoff: float = 0.5,
                 max_concurrency: int = 4, batch_size: int = 64, normalize: bool = True,
                 api_key_header: str = "Authorization"):
        owner = "OpenAIEmbedder()"
        self.base_url = check_base_url(owner, base_url)
        if not isinstance(model, str) or not model.strip():
            raise ParameterError(owner, "model", "a non-empty string", model)
        self.model = model
        self.api_key = resolve_api_key(owner, api_key)
        self.name = name if name is not None else f"openai:{model}"
        if not isinstance(self.name, str) or not self.name.strip():
            raise ParameterError(owner, "name", "a non-empty string or None", name)
        if isinstance(timeout, bool) or not isinstance(timeout, (int, float)) or timeout <= 0:
            raise ParameterError(owner, "timeout", "a number > 0", timeout)
        for label, value, low in (("max_retries", max_retries, 0), ("max_concurrency", max_concurrency, 1),
                                  ("batch_size", batch_size, 1)):
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(owner, label, f"an integer >= {low}", value)
        if dim is not None and (isinstance(dim, bool) or not isinstance(dim, int) or dim < 1):
            raise ParameterError(owner, "dim", "a positive integer or None", dim)
        self.batch_size = batch_size
        self.normalize = bool(normalize)
        self.endpoint = JsonEndpoint(base_url=base_url, api_key=self.api_key, label=f"OpenAIEmbedder {self.name}",
                                     api_key_header=api_key_header, timeout=float(timeout), max_retries=max_retries,
                                     backoff=backoff, max_concurrency=max_concurrency)
        self._dim = dim

    @property
    def dim(self) -> int:
        if self._dim is None:
            self._dim = int(self._request(["dimension probe"]).shape[1])
        return self._dim

    @property
    def fingerprint(self) -> str:
        return stable_hash({"kind": "openai-embeddings", "base_url": mask_url(self.base_url), "model": self.model,
                            "normalize": self.normalize})

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        """POST ``texts`` to ``{base_url}/embeddings`` in batches; vectors in input order, normalised if asked.

        Examples
        --------
        A stand-in server on the loopback interface answers the way OpenAI's API does:

        >>> import json, threading
        >>> from http.server import BaseHTTPRequestHandler, HTTPServer
        >>> class Server(BaseHTTPRequestHandler):
        ...     def do_POST(self):
        ...         texts = json.loads(self.rfile.read(int(self.headers["Content-Length"])))["input"]
        ...         data = [{"index": i, "embedding": [len(t), 0.0]} for i, t in reversed(list(enumerate(texts)))]
        ...         self.send_response(200); self.send_header("Content-Type", "application/json"); self.end_headers()
        ...         self.wfile.write(json.dumps({"data": data}).encode())
        ...     def log_message(self, *args): pass
        >>> server = HTTPServer(("127.0.0.1", 0), Server)
        >>> threading.Thread(target=server.serve_forever, daemon=True).start()
        >>> emb = OpenAIEmbedder(base_url=f"http://127.0.0.1:{server.server_port}/v1", model="toy", api_key="sk-x",
        ...                      normalize=False, batch_size=2)
        >>> emb.embed(["a", "abc", "ab"]).tolist(), emb.dim
        ([[1.0, 0.0], [3.0, 0.0], [2.0, 0.0]], 2)
        >>> server.shutdown(); server.server_close()
        """
        texts = list(texts)
        parts = [self._request(texts[i:i + self.batch_size]) for i in range(0, len(texts), self.batch_size)]
        if not parts:
            return np.zeros((0, self.dim), dtype=np.float32)
        return np.concatenate(parts)

    def _request(self, texts: list[str]) -> np.ndarray:
        body = self.endpoint.post(_PATH, {"model": self.model, "input": texts, "encoding_format": "float"})
        vectors = self._vectors(body, len(texts))
        if self.normalize:
            norms = np.linalg.norm(vectors, axis=1, keepdims=True)
            vectors = vectors / np.where(norms > 0, norms, 1.0)
        return vectors.astype(np.float32)

    def _vectors(self, body: dict[str, Any], n: int) -> np.ndarray:
        data = body.get("data")
        if not isinstance(data, list) or len(data) != n:
            raise self._bad(f"expected {n} item(s) in data, got {len(data) if isinstance(data, list) else 'none'}")
        try:
            items = sorted(data, key=lambda item: int(item.get("index", 0)))
            rows = [item["embedding"] for item in items]
            if rows and isinstance(rows[0], list) and rows[0] and isinstance(rows[0][0], list):
                rows = [np.mean(np.asarray(row, dtype=np.float64), axis=0) for row in rows]  # unpooled: one per token
            vectors = np.asarray(rows, dtype=np.float64)
        except (AttributeError, KeyError, TypeError, ValueError):
            raise self._bad("an item has no numeric 'embedding' list") from None
        if vectors.ndim != 2 or (self._dim is not None and vectors.shape[1] != self._dim):
            raise self._bad(f"vectors have shape {vectors.shape}; dim is {self._dim}")
        return vectors

    def _bad(self, detail: str) -> ModelError:
        return self.endpoint.error("model_bad_response", detail, attempts=1, path=_PATH)

    def __repr__(self) -> str:
        dim = "?" if self._dim is None else self._dim
        return (f"OpenAIEmbedder(name={self.name!r}, base_url={mask_url(self.base_url)!r}, model={self.model!r}, "
                f"dim={dim}, api_key={'set' if self.api_key else 'unset'})")
