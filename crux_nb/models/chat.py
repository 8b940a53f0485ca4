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
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field
from http.client import HTTPException
from typing import Any

from .._hashing import stable_hash
from ..errors import ModelError, ParameterError, ValidationExhaustedError
from .calllog import report_usage
from .chat_prompts import build_messages, build_schema

__all__ = ["ChatModel", "Secret", "CHAT_MODEL_VERSION", "API_KEY_ENV_VARS"]

CHAT_MODEL_VERSION = "1"
API_KEY_ENV_VARS = ("CRUX_API_KEY", "OPENAI_API_KEY")
_RETRY_AFTER_CAP = 60.0
_RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_KEYLIKE = re.compile(r"\b(sk|pk|key|token)[-_][A-Za-z0-9_\-]{6,}", re.I)
_FENCE = re.compile(r"^\s*```(?:json)?\s*(.*?)\s*```\s*$", re.S)


class Secret:
    """Holds a secret string; ``repr``/``str`` never show it. Call :meth:`reveal` to use it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


def _mask_url(url: str) -> str:
    """``base_url`` for display: user info and query values replaced by ``***``."""
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{k}=***" for k, _v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


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
        if not isinstance(self.base_url, str) or not urllib.parse.urlsplit(self.base_url).scheme in ("http", "https"):
            raise ParameterError(owner, "base_url", "an http(s) URL", _mask_url(str(self.base_url)))
        if not isinstance(self.model, str) or not self.model.strip():
            raise ParameterError(owner, "model", "a non-empty string", self.model)
        key = self.api_key
        if key is None:
            key = next((os.environ[v] for v in API_KEY_ENV_VARS if os.environ.get(v)), None)
        if isinstance(key, str):
            key = Secret(key) if key else None
        elif key is not None and not isinstance(key, Secret):
            raise ParameterError(owner, "api_key", "a string, a Secret or None", type(key).__name__)
        object.__setattr__(self, "api_key", key)
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
        state = {"semaphore": threading.BoundedSemaphore(self.max_concurrency), "format": None, "lock": threading.Lock()}
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
        """Entities, mentions and relations, by prompting the endpoint."""
        return self._task("extract", (chunks,), repair)

    def write_report(self, community: dict[str, Any], *, repair: list[dict[str, str]] | None = None) -> Any:
        """A community report, by prompting the endpoint."""
        return self._task("write_report", (community,), repair)

    def map_findings(self, query: str, units: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Relevant findings with scores, by prompting the endpoint."""
        return self._task("map_findings", (query, units), repair)

    def rate(self, query: str, reports: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Report ratings, by prompting the endpoint."""
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
    def _url(self, path: str) -> str:
        parts = urllib.parse.urlsplit(self.base_url)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, parts.path.rstrip("/") + path, parts.query, ""))

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "crux_nb"}
        if self.api_key is not None:
            key = self.api_key.reveal()  # type: ignore[union-attr]
            headers[self.api_key_header] = f"Bearer {key}" if self.api_key_header.lower() == "authorization" else key
        return headers

    def _redact(self, text: str) -> str:
        if self.api_key is not None:
            text = text.replace(self.api_key.reveal(), "***")  # type: ignore[union-attr]
        return _KEYLIKE.sub("***", text)

    def _error(self, code: str, detail: str, *, attempts: int, status: int | None = None) -> ModelError:
        where = f"POST {_mask_url(self._url('/chat/completions'))}"
        shown = f"HTTP {status}: " if status is not None else ""
        hints = {
            "model_http_error": "check the base URL, the model name and the API key (CRUX_API_KEY / OPENAI_API_KEY).",
            "model_timeout": "the server did not answer in time; raise timeout= or check that the server is up.",
            "model_connection_error": "check that the server is running and reachable at base_url.",
            "model_bad_response": "the endpoint is not OpenAI-compatible, or a proxy rewrote the response.",
        }
        err = ModelError(
            self._redact(f"ChatModel {self.name}: {where} failed after {attempts} attempt(s): {shown}{detail}."),
            code=code,
            hint=hints.get(code),
        )
        err.status = status  # type: ignore[attr-defined]
        err.attempts = attempts  # type: ignore[attr-defined]
        return err

    def _post(self, path: str, payload: dict[str, Any]) -> dict[str, Any]:
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        attempts = self.max_retries + 1
        last: tuple[str, str, int | None] = ("model_connection_error", "no attempt made", None)
        for attempt in range(1, attempts + 1):
            retry_after = 0.0
            try:
                request = urllib.request.Request(self._url(path), data=data, headers=self._headers(), method="POST")
                with self._state["semaphore"]:
                    with urllib.request.urlopen(request, timeout=self.timeout) as response:
                        raw = response.read()
                try:
                    body = json.loads(raw.decode("utf-8"))
                except (UnicodeDecodeError, ValueError):
                    raise self._error("model_bad_response", "the response body is not valid JSON", attempts=attempt) from None
                if not isinstance(body, dict):
                    raise self._error("model_bad_response", "the response body is not a JSON object", attempts=attempt)
                return body
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = self._redact(_error_detail(exc))  # redacted at once: tracebacks may show locals
                if (status in (400, 422, 500) and self._state["format"] is None
                        and (payload.get("response_format") or {}).get("type") == "json_schema"
                        and re.search(r"response_format|json_schema", detail)):
                    raise _FormatRejected() from None  # e.g. llama-cpp-python answers 500 "Input should be 'text' or 'json_object'"
                if status not in _RETRY_STATUS and status < 500:
                    raise self._error("model_http_error", self._redact(detail) or "request rejected", attempts=attempt, status=status) from None
                last = ("model_http_error", "server error" if status >= 500 else "rate limited or busy", status)
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            except TimeoutError:
                last = ("model_timeout", f"no response within {self.timeout:g} s", None)
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    last = ("model_timeout", f"no response within {self.timeout:g} s", None)
                else:
                    last = ("model_connection_error", f"connection failed ({type(exc.reason).__name__})", None)
            except (ConnectionError, HTTPException, OSError) as exc:
                last = ("model_connection_error", f"connection failed ({type(exc).__name__})", None)
            if attempt < attempts:
                time.sleep(max(self.backoff * (2 ** (attempt - 1)), min(retry_after, _RETRY_AFTER_CAP)))
        code, detail, status = last
        raise self._error(code, detail, attempts=attempts, status=status)


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


def _error_detail(exc: urllib.error.HTTPError) -> str:
    try:
        raw = exc.read(4096).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the body is only a hint
        return ""
    try:
        body = json.loads(raw)
        message = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(message, dict):
            message = message.get("message") or message.get("detail") or json.dumps(message)[:300]
        return str(message)[:300]
    except ValueError:
        return raw[:300]


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0
