"""What an OpenAI-compatible server says about itself: its context window and how many calls it serves at once.

:func:`discover` asks, in order, with short GET requests that no server charges for:

* llama.cpp's ``llama-server``: ``GET /props`` (``default_generation_settings.n_ctx``, ``total_slots``);
* vLLM: ``GET /v1/models`` (``max_model_len`` of the served model);
* Ollama: ``GET /api/version``, then ``POST /api/show`` (``num_ctx`` of the model's parameters, else
  Ollama's own default of 2,048 tokens when the model allows more: Ollama cuts longer prompts silently);
* llama-cpp-python's server (``GET /openapi.json`` lists ``/extras/tokenize``): it serves one call at a
  time and says its context only in the error to a prompt that is too long, so one oversized prompt with
  ``max_tokens=1`` is sent (refused after tokenizing, in well under a second, nothing generated).

Anything else (OpenAI, Azure, a proxy) is ``unknown``: batches then stay at the seed's 24,000
characters and a context error, if one comes, names the numbers and the knob
(:func:`context_error`). The answer is remembered per endpoint (base URL and model) for the process.
"""

from __future__ import annotations

import re
import threading
from dataclasses import dataclass
from typing import Any

__all__ = ["ServerInfo", "discover", "parse_context_error", "OLLAMA_DEFAULT_CTX"]

#: Ollama's context when the model's parameters set no ``num_ctx`` (longer prompts are cut without an error).
OLLAMA_DEFAULT_CTX = 2048
_PROBE_WORDS = 400_000  # beyond any llama-cpp-python context in use; tokenized and refused, never evaluated
_CACHE: dict[tuple[str, str], "ServerInfo"] = {}
_CACHE_LOCK = threading.Lock()
# OpenAI, vLLM and llama-cpp-python: "maximum context length is 4096 tokens. However, you requested 6491 tokens
# (6390 in the messages, 101 in the completion)"; llama.cpp's llama-server: "the request exceeds the available
# context size (4096 tokens)" / "request (6491 tokens) exceeds the available context size (4096 tokens)"
_OPENAI = re.compile(r"maximum context length is (\d+) tokens.*?requested (\d+) tokens"
                     r"(?: \((\d+) in the messages, (\d+) in the completion\))?", re.S | re.I)
_LLAMA = re.compile(r"(?:request \((\d+) tokens\) )?exceeds the available context size(?: \((\d+) tokens\))?", re.I)


@dataclass(frozen=True)
class ServerInfo:
    """The server's kind, context window (tokens, None: it does not say) and slots (calls served at once).

    >>> ServerInfo("llama.cpp", 4096, 4, "/props n_ctx")
    ServerInfo(kind='llama.cpp', context_window=4096, slots=4, source='/props n_ctx')
    """

    kind: str
    context_window: int | None
    slots: int | None
    source: str


UNKNOWN = ServerInfo("unknown", None, None, "the server does not say")


def parse_context_error(detail: str) -> dict[str, int] | None:
    """The numbers of a context-length error message (``limit``, ``requested``, ``prompt``, ``completion``).

    >>> parse_context_error("This model's maximum context length is 4096 tokens. However, you requested "
    ...                     "6491 tokens (6390 in the messages, 101 in the completion).")
    {'limit': 4096, 'requested': 6491, 'prompt': 6390, 'completion': 101}
    >>> parse_context_error("request (5000 tokens) exceeds the available context size (2048 tokens)")
    {'limit': 2048, 'requested': 5000}
    >>> parse_context_error("model not found") is None
    True
    """
    found = _OPENAI.search(detail or "")
    if found:
        out = {"limit": int(found.group(1)), "requested": int(found.group(2))}
        if found.group(3):
            out.update(prompt=int(found.group(3)), completion=int(found.group(4)))
        return out
    found = _LLAMA.search(detail or "")
    if found:
        out = {"limit": int(found.group(2))} if found.group(2) else {}
        if found.group(1):
            out["requested"] = int(found.group(1))
        return out or {"limit": 0}
    return None


def discover(endpoint: Any, model: str) -> ServerInfo:
    """The :class:`ServerInfo` of ``endpoint`` (a :class:`~crux_nb.models.http.JsonEndpoint`) for ``model``."""
    key = (endpoint.base_url, model)
    with _CACHE_LOCK:
        if key in _CACHE:
            return _CACHE[key]
    info = _ask(endpoint, model)
    with _CACHE_LOCK:
        _CACHE[key] = info
    return info


def _ask(endpoint: Any, model: str) -> ServerInfo:
    props = endpoint.get("/props", root=True)
    if isinstance(props, dict):
        settings = props.get("default_generation_settings") or {}
        n_ctx = _int(settings.get("n_ctx")) or _int(props.get("n_ctx"))
        if n_ctx:
            return ServerInfo("llama.cpp", n_ctx, _int(props.get("total_slots")), "/props n_ctx")
    listed = endpoint.get("/models")
    if isinstance(listed, dict):
        rows = [r for r in listed.get("data") or () if isinstance(r, dict)]
        row = next((r for r in rows if r.get("id") == model), rows[0] if len(rows) == 1 else None)
        if row is not None and _int(row.get("max_model_len")):
            return ServerInfo("vllm", _int(row["max_model_len"]), None, "/v1/models max_model_len")
    version = endpoint.get("/api/version", root=True)
    if isinstance(version, dict) and "version" in version:
        return _ollama(endpoint, model)
    spec = endpoint.get("/openapi.json", root=True)
    if isinstance(spec, dict) and "/extras/tokenize" in (spec.get("paths") or {}):
        return _llama_cpp_python(endpoint, model)
    return UNKNOWN


def _ollama(endpoint: Any, model: str) -> ServerInfo:
    shown = endpoint.get("/api/show", root=True, payload={"model": model})
    if not isinstance(shown, dict):
        return ServerInfo("ollama", OLLAMA_DEFAULT_CTX, None, "Ollama's default num_ctx")
    found = re.search(r"^num_ctx\s+(\d+)", str(shown.get("parameters") or ""), re.M)
    if found:
        return ServerInfo("ollama", int(found.group(1)), None, "/api/show num_ctx")
    info = shown.get("model_info") or {}
    trained = next((_int(v) for k, v in info.items() if str(k).endswith(".context_length")), None)
    ctx = min(trained, OLLAMA_DEFAULT_CTX) if trained else OLLAMA_DEFAULT_CTX
    return ServerInfo("ollama", ctx, None, "Ollama's default num_ctx (the model's parameters set none)")


def _llama_cpp_python(endpoint: Any, model: str) -> ServerInfo:
    payload = {"model": model, "max_tokens": 1, "messages": [{"role": "user", "content": "a " * _PROBE_WORDS}]}
    refused = endpoint.get("/chat/completions", payload=payload, want_error=True)
    numbers = parse_context_error(refused) if isinstance(refused, str) else None
    ctx = numbers.get("limit") if numbers else None
    # one model behind one lock: a second call waits on the server while the first generates
    return ServerInfo("llama-cpp-python", ctx or None, 1, "its context-length error" if ctx else "unknown context")


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def forget() -> None:
    """Drop every remembered answer (tests restart servers on the same port)."""
    with _CACHE_LOCK:
        _CACHE.clear()
