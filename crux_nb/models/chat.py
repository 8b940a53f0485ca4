""":class:`ChatModel`: any OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI, Azure OpenAI (``api_key_header="api-key"`` and the
``?api-version=...`` query in ``base_url``), Ollama, vLLM and the llama.cpp
servers. Only the standard library is used (``urllib.request``).

* JSON output: ``response_format`` ``json_schema`` (OpenAI style) when
  ``json_schema=True``; if the server rejects that (HTTP 400/422 naming
  ``response_format``/``json_schema``), ``{"type": "json_object", "schema": ...}``
  (llama.cpp style) is used from then on. ``json_schema=False`` sends plain
  ``{"type": "json_object"}``. Schemas restrict cited ids to the issued ones.
  (llama-cpp-python rejects ``json_schema`` with HTTP 500; that counts too.)
* Reliability: a per-request ``timeout``; up to ``max_retries`` retries with
  exponential backoff (``backoff · 2**n`` seconds, or ``Retry-After`` when larger,
  capped at 60 s) on HTTP 408, 409, 429, 5xx, timeouts and connection errors; then a
  :class:`~crux_nb.errors.ModelError` naming the status and attempts
  (codes ``model_http_error``, ``model_timeout``, ``model_connection_error``,
  ``model_bad_response``). At most ``max_concurrency`` requests run at once.
* Output that is not JSON raises :class:`~crux_nb.errors.ValidationExhaustedError`
  with the issue ``{"path": "", "code": "invalid_json"}`` so that
  :func:`~crux_nb.models.call_task` makes its one repair call.
* Secrets: the API key (argument, else ``$CRUX_API_KEY``, else
  ``$OPENAI_API_KEY``) is held in a :class:`Secret` and never appears in a repr,
  a str, an error, a log record or the fingerprint; user info and query values of
  ``base_url`` are masked wherever the URL is shown.
* Tokens: the response's ``usage`` is reported with
  :func:`~crux_nb.models.report_usage` (seen by the call log).
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

from .._hashing import stable_hash
from ..errors import ModelError, ParameterError, ValidationExhaustedError
from .calllog import report_usage
from .chat_prompts import build_messages, build_schema
from .http import API_KEY_ENV_VARS, JsonEndpoint, Secret, check_base_url, mask_url, resolve_api_key

__all__ = ["ChatModel", "Secret", "CHAT_MODEL_VERSION", "API_KEY_ENV_VARS"]

CHAT_MODEL_VERSION = "1"
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)
_mask_url = mask_url  # the name older callers used


@dataclass(frozen=True, kw_only=True)
class ChatModel:
    """A :class:`~crux_nb.models.KnowledgeModel` backed by an OpenAI-compatible chat endpoint.

    >>> m = ChatModel(base_url="http://127.0.0.1:8080/v1", model="smollm2", api_key="sk-not-shown")
    >>> "sk-not-shown" in repr(m)
    False
    """

    base_url: str
    model: str
    api_key: Secret | str | None = field(default=None, repr=False, compare=False)
    name: str | None = None
    timeout: float = 60.0
    max_retries: int = 3
    backoff: float = 0.5
    max_concurrency: int = 4
    temperature: float = 0.0
    json_schema: bool = True
    max_tokens: int | None = None
    api_key_header: str = "Authorization"
    fingerprint: str = field(init=False)
    _state: dict = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        owner = "ChatModel"
        check_base_url(owner, self.base_url)
        if not isinstance(self.model, str) or not self.model.strip():
            raise ParameterError(owner, "model", "a non-empty string", self.model)
        object.__setattr__(self, "api_key", resolve_api_key(owner, self.api_key))
        if self.name is None:
            object.__setattr__(self, "name", f"chat:{self.model}")
        elif not isinstance(self.name, str) or not self.name.strip():
            raise ParameterError(owner, "name", "a non-empty string or None", self.name)
        for attr, low in (("timeout", 0.0), ("backoff", 0.0), ("temperature", 0.0)):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, (int, float)) or value < low or (attr == "timeout" and value == 0):
                raise ParameterError(owner, attr, f"a number >= {low}" + (" (not 0)" if attr == "timeout" else ""), value)
        for attr, low in (("max_retries", 0), ("max_concurrency", 1)):
            value = getattr(self, attr)
            if isinstance(value, bool) or not isinstance(value, int) or value < low:
                raise ParameterError(owner, attr, f"an integer >= {low}", value)
        if self.max_tokens is not None and (isinstance(self.max_tokens, bool) or not isinstance(self.max_tokens, int) or self.max_tokens < 1):
            raise ParameterError(owner, "max_tokens", "a positive integer or None", self.max_tokens)
        if not isinstance(self.json_schema, bool):
            raise ParameterError(owner, "json_schema", "a bool", self.json_schema)
        spec = {
            "kind": "chat",
            "version": CHAT_MODEL_VERSION,
            "name": self.name,
            "base_url": _mask_url(self.base_url),
            "model": self.model,
            "temperature": self.temperature,
            "json_schema": self.json_schema,
            "max_tokens": self.max_tokens,
        }
        object.__setattr__(self, "fingerprint", stable_hash(spec))
        endpoint = JsonEndpoint(base_url=self.base_url, api_key=self.api_key, label=f"ChatModel {self.name}",
                                api_key_header=self.api_key_header, timeout=self.timeout, max_retries=self.max_retries,
                                backoff=self.backoff, max_concurrency=self.max_concurrency)
        state = {"endpoint": endpoint, "format": None, "lock": threading.Lock()}
        object.__setattr__(self, "_state", state)

    def __repr__(self) -> str:
        return (
            f"ChatModel(name={self.name!r}, base_url={_mask_url(self.base_url)!r}, model={self.model!r}, "
            f"api_key={'set' if self.api_key else 'unset'}, fingerprint={self.fingerprint!r})"
        )

    __str__ = __repr__

    def __reduce__(self):
        """Pickle (for example to Dask workers) by re-running the constructor; locks are rebuilt."""
        kwargs = {
            "base_url": self.base_url, "model": self.model, "api_key": self.api_key, "name": self.name,
            "timeout": self.timeout, "max_retries": self.max_retries, "backoff": self.backoff,
            "max_concurrency": self.max_concurrency, "temperature": self.temperature,
            "json_schema": self.json_schema, "max_tokens": self.max_tokens, "api_key_header": self.api_key_header,
        }
        return (_rebuild, (kwargs,))

    # ------------------------------------------------------------------ tasks
    def extract(self, chunks: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Entities, mentions and relations, by prompting the endpoint.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> answer = {"entities": [{"name": "Priya Raman", "aliases": []}],
        ...           "mentions": [{"chunk_id": "c1", "name": "Priya Raman"}], "related": []}
        >>> with stand_in_chat(answer) as server:
        ...     out = ChatModel(base_url=server.base_url, model="toy").extract([{"id": "c1", "text": "Priya Raman leads."}])
        >>> out["mentions"], server.requests[0]["response_format"]["json_schema"]["name"]
        ([{'chunk_id': 'c1', 'name': 'Priya Raman'}], 'crux_extract')
        """
        return self._task("extract", (chunks,), repair)

    def write_report(self, community: dict[str, Any], *, repair: list[dict[str, str]] | None = None) -> Any:
        """A community report, by prompting the endpoint.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> leaf = {"community_id": "c1", "level": 0, "entities": [{"name": "Platform"}], "children": [],
        ...         "chunks": [{"ref": "chunk:team.md:c0000", "text": "Priya Raman leads the Platform team."}]}
        >>> answer = {"title": "Platform", "summary": "Priya Raman leads it.",
        ...           "findings": [{"statement": "Priya Raman leads the Platform team.", "evidence": ["chunk:team.md:c0000"]}]}
        >>> with stand_in_chat(answer) as server:
        ...     report = ChatModel(base_url=server.base_url, model="toy").write_report(leaf)
        >>> report["title"], server.requests[0]["response_format"]["json_schema"]["name"]
        ('Platform', 'crux_write_report')
        """
        return self._task("write_report", (community,), repair)

    def map_findings(self, query: str, units: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Relevant findings with scores, by prompting the endpoint; the schema allows only the issued finding ids.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> units = [{"community_id": "c1", "level": 0, "title": "Platform", "summary": "",
        ...           "findings": [{"id": "f1", "statement": "Priya Raman leads the Platform team."}]}]
        >>> with stand_in_chat({"findings": [{"statement": "Priya leads it.", "finding_ids": ["f1"], "score": 90}]}) as server:
        ...     out = ChatModel(base_url=server.base_url, model="toy").map_findings("Who leads Platform?", units)
        >>> schema = server.requests[0]["response_format"]["json_schema"]["schema"]
        >>> out["findings"][0]["score"], schema["properties"]["findings"]["items"]["properties"]["finding_ids"]["items"]
        (90, {'type': 'string', 'enum': ['f1']})
        """
        return self._task("map_findings", (query, units), repair)

    def rate(self, query: str, reports: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Report ratings, by prompting the endpoint.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> reports = [{"community_id": "c1", "title": "Platform", "summary": "Priya Raman leads it.", "findings": []}]
        >>> with stand_in_chat({"ratings": [{"community_id": "c1", "rating": 80}]}) as server:
        ...     out = ChatModel(base_url=server.base_url, model="toy").rate("Who leads Platform?", reports)
        >>> out, [m["role"] for m in server.requests[0]["messages"]]
        ({'ratings': [{'community_id': 'c1', 'rating': 80}]}, ['system', 'user'])
        """
        return self._task("rate", (query, reports), repair)

    def _task(self, task: str, args: tuple, repair: list[dict[str, str]] | None) -> Any:
        messages = build_messages(task, args, repair)
        return self.generate_object(messages=messages, schema=build_schema(task, args), schema_name=f"crux_{task}", prompt_id=f"chat:{task}")

    # ---------------------------------------------------------------- generic
    def generate_object(self, *, messages: list[dict[str, str]], schema: dict[str, Any] | None = None,
                        schema_name: str = "crux_object", prompt_id: str = "chat:object") -> Any:
        """Send ``messages`` and return the reply parsed as JSON.

        Raises :class:`ValidationExhaustedError` (issue code ``invalid_json``) when the
        reply is not JSON, and :class:`ModelError` on transport failures.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> with stand_in_chat('```json\\n{"answer": 42}\\n```', "not JSON") as server:
        ...     model = ChatModel(base_url=server.base_url, model="toy")
        ...     first = model.generate_object(messages=[{"role": "user", "content": "The answer?"}])
        ...     try:
        ...         model.generate_object(messages=[{"role": "user", "content": "Again?"}], prompt_id="demo")
        ...     except ValidationExhaustedError as exc:
        ...         second = exc.issues
        >>> first, second  # a fenced reply is unwrapped; prose is a content-free issue
        ({'answer': 42}, ({'path': '', 'code': 'invalid_json'},))
        """
        payload: dict[str, Any] = {"model": self.model, "messages": messages, "temperature": self.temperature}
        if self.max_tokens is not None:
            payload["max_tokens"] = self.max_tokens
        mode = self._state["format"] or ("json_schema" if self.json_schema and schema else "json_object")
        payload["response_format"] = self._response_format(mode, schema, schema_name)
        try:
            body = self._post("/chat/completions", payload)
        except _FormatRejected:
            with self._state["lock"]:
                self._state["format"] = "json_object"
            payload["response_format"] = self._response_format("json_object", schema, schema_name)
            body = self._post("/chat/completions", payload)
        return self._parse(body, prompt_id)

    @staticmethod
    def _response_format(mode: str, schema: dict[str, Any] | None, schema_name: str) -> dict[str, Any]:
        if mode == "json_schema" and schema:
            return {"type": "json_schema", "json_schema": {"name": schema_name, "schema": schema, "strict": False}}
        if schema:
            return {"type": "json_object", "schema": _grammar_safe(schema)}
        return {"type": "json_object"}

    def _parse(self, body: dict[str, Any], prompt_id: str) -> Any:
        usage = body.get("usage") if isinstance(body, dict) else None
        if isinstance(usage, dict):
            tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
            report_usage(
                tokens_in=tokens_in if isinstance(tokens_in, int) else None,
                tokens_out=tokens_out if isinstance(tokens_out, int) else None,
            )
        try:
            choice = body["choices"][0]
            content = choice["message"]["content"]
        except (KeyError, IndexError, TypeError):
            raise self._error("model_bad_response", "the response has no choices[0].message.content", attempts=1) from None
        if not isinstance(content, str):
            raise self._error("model_bad_response", "the message content is not a string", attempts=1)
        fenced = _FENCE.match(content)
        try:
            return json.loads(fenced.group(1) if fenced else content)
        except ValueError:
            code = "truncated_output" if choice.get("finish_reason") == "length" else "invalid_json"
            raise ValidationExhaustedError(prompt_id, [{"path": "", "code": code}], attempts=1, max_attempts=1) from None

    # -------------------------------------------------------------- transport
    def _error(self, code: str, detail: str, *, attempts: int, status: int | None = None) -> ModelError:
        return self._state["endpoint"].error(code, detail, attempts=attempts, status=status, path="/chat/completions")

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        def format_rejected(status: int, detail: str) -> None:
            if (status in (400, 422, 500) and self._state["format"] is None
                    and (payload.get("response_format") or {}).get("type") == "json_schema"
                    and re.search(r"response_format|json_schema", detail)):
                raise _FormatRejected()  # e.g. llama-cpp-python answers 500 "Input should be 'text' or 'json_object'"

        return self._state["endpoint"].post(path, payload, on_http_error=format_rejected)


_GRAMMAR_DROP = frozenset({"maxLength", "minLength", "additionalProperties", "minimum", "maximum"})


def _grammar_safe(schema: Any) -> Any:
    """The schema without the keywords llama.cpp's grammar builder expands badly.

    llama-cpp-python unrolls ``maxLength: 2000`` into 2000 nested optional rules and its
    server process dies on the result; long ``maxItems`` do the same, and
    ``additionalProperties: false`` or number bounds make sampling 10x slower (measured:
    25 s instead of 1.6 s for 31 tokens). :func:`~crux_nb.models.validate_output` checks
    all of these anyway, so they are dropped here (``maxItems`` above 16 becomes unbounded);
    ``enum``, ``required`` and ``minItems`` stay.
    """
    if isinstance(schema, dict):
        out = {}
        for key, value in schema.items():
            if key in _GRAMMAR_DROP or (key == "maxItems" and isinstance(value, int) and value > 16):
                continue
            out[key] = _grammar_safe(value)
        return out
    if isinstance(schema, list):
        return [_grammar_safe(v) for v in schema]
    return schema


def _rebuild(kwargs: dict[str, Any]) -> ChatModel:
    return ChatModel(**kwargs)


class _FormatRejected(Exception):
    """The server does not accept ``response_format.type == "json_schema"``."""
