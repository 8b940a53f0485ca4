""":class:`ChatModel`: any OpenAI-compatible ``/chat/completions`` endpoint.

Works with OpenAI, Azure OpenAI (``api_key_header="api-key"`` and the
``?api-version=...`` query in ``base_url``), Ollama, vLLM and the llama.cpp
servers. Only the standard library is used (``urllib.request``).

* JSON output: each task's JSON schema in the first form the endpoint accepts, tried in
  :data:`FORMATS` order: ``response_format`` ``json_schema`` (OpenAI, vLLM, llama.cpp's
  llama-server, Ollama's recent versions); ``{"type": "json_object", "schema": ...}``
  (llama-cpp-python's server, which refuses ``json_schema`` with HTTP 500); Ollama's own
  ``format`` field; then plain (the prompt alone asks for JSON). A refusal naming
  ``response_format``, ``json_schema``, ``schema`` or ``format`` moves to the next form, and the
  accepted form is remembered per endpoint (base URL and model) for the process.
  ``json_schema=False`` starts at plain ``{"type": "json_object"}``. Schemas restrict cited ids to
  the issued ones.
* Context: ``context_window`` (tokens) is what the user says, else what the server says
  (:func:`~crux_nb.models.server.discover`: llama.cpp's ``/props``, vLLM's ``max_model_len``,
  Ollama's ``/api/show``, llama-cpp-python's context error), else unknown; :meth:`input_budget`
  turns it into the characters one call of a task may carry (:mod:`crux_nb.models.budget`), and
  every caller packs its calls under it. A server that still refuses a prompt as too long raises
  a :class:`~crux_nb.errors.ModelError` (code ``context_exceeded``) with the numbers and the knob.
* Truncated output (``finish_reason == "length"`` before the JSON was complete) raises
  a :class:`~crux_nb.errors.ModelError` (code ``output_truncated``, hint "raise max_tokens
  (now N)") at once: a repair call under the same ``max_tokens`` would be cut again.
* Concurrency: at most ``max_concurrency`` calls in flight, and never more than the server's
  slots where it says them (llama-cpp-python's server: one); a call that times out while
  others were in flight halves the limit and is retried without counting as an attempt (it
  waited on the server's queue). A call waiting in this client's queue is not timed out.
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
from .budget import context_budget
from .calllog import report_usage
from .chat_formats import FORMATS, accepted_form, context_error, remember_form, refuses_form, truncated_error, with_format
from .chat_prompts import EVIDENCE_CHARS, build_messages, build_schema, fit_community, number_chunks, output_items
from .http import API_KEY_ENV_VARS, JsonEndpoint, Secret, check_base_url, mask_url, resolve_api_key
from .server import ServerInfo, discover, parse_context_error

__all__ = ["ChatModel", "Secret", "CHAT_MODEL_VERSION", "API_KEY_ENV_VARS", "FORMATS"]

# v2: extraction shows chunks by number (never by id) and asks for one of the schema's entity types
CHAT_MODEL_VERSION = "2"
# a query, a community id: what a call's fixed prompt holds beside its template (counted in every budget)
_PROMPT_SLACK = 400
_EMPTY_ARGS = {"extract": ([],), "write_report": ({"community_id": "", "entities": [], "chunks": [], "children": []},),
               "map_findings": ("", []), "rate": ("", [])}
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
    context_window: int | None = None
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
        if self.context_window is not None and (isinstance(self.context_window, bool)
                                                or not isinstance(self.context_window, int) or self.context_window < 256):
            raise ParameterError(owner, "context_window", "an integer >= 256 (tokens) or None (ask the server)",
                                 self.context_window)
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
        state = {"endpoint": endpoint, "lock": threading.Lock(), "server": None, "learned_context": None}
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
            "context_window": self.context_window,
        }
        return (_rebuild, (kwargs,))

    # ---------------------------------------------------------------- budgets
    @property
    def server(self) -> ServerInfo:
        """What the server says about itself (asked once per endpoint, on first use; no model call)."""
        with self._state["lock"]:
            info = self._state["server"]
        if info is None:
            info = discover(self._state["endpoint"], self.model)
            if info.slots:
                self._state["endpoint"].limiter.set(info.slots)
            with self._state["lock"]:
                self._state["server"] = info
        return info

    @property
    def effective_context(self) -> int | None:
        """The context window in tokens: given, else learned from a context error, else the server's (None: unknown).

        >>> ChatModel(base_url="http://127.0.0.1:9/v1", model="m", context_window=2048).effective_context
        2048
        """
        if self.context_window is not None:
            return self.context_window
        learned = self._state["learned_context"]
        return learned if learned is not None else self.server.context_window

    #: Characters of each chunk a prompt shows (callers measure chunks as shown).
    evidence_chars = EVIDENCE_CHARS

    def input_budget(self, task: str) -> int:
        """Characters of task input one call may carry: chunk excerpts (``extract``, ``write_report``),
        report payloads as JSON (``map_findings``, ``rate``); see :mod:`crux_nb.models.budget`.

        >>> m = ChatModel(base_url="http://127.0.0.1:9/v1", model="m", context_window=2048, max_tokens=300)
        >>> m.input_budget("extract") < m.input_budget("rate") < 24_000
        True
        """
        template = sum(len(m["content"]) for m in build_messages(task, _EMPTY_ARGS[task], None))
        return context_budget(context_window=self.effective_context, max_tokens=self.max_tokens,
                              prompt_chars=template + _PROMPT_SLACK)

    # ------------------------------------------------------------------ tasks
    def extract(self, chunks: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Entities, mentions and relations, by prompting the endpoint.

        Examples
        --------
        >>> from crux_nb.testing import stand_in_chat
        >>> answer = {"entities": [{"name": "Priya Raman", "type": "person", "aliases": []}],
        ...           "mentions": [{"chunk_id": 1, "name": "Priya Raman"}], "related": []}
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
        # issued ids come from the whole input, before any cut; the lists are bounded to fit max_tokens
        schema = build_schema(task, args, max_items=output_items(task, self.max_tokens))
        if task == "write_report":
            args = (fit_community(args[0], self.input_budget(task)),)
        messages = build_messages(task, args, repair)
        out = self.generate_object(messages=messages, schema=schema, schema_name=f"crux_{task}", prompt_id=f"chat:{task}")
        return number_chunks(out, args[0]) if task == "extract" else out

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
        accepted = accepted_form(self.base_url, self.model)
        forms = FORMATS if self.json_schema and schema else ("plain",)
        start = forms.index(accepted) if accepted in forms else 0
        self.server  # noqa: B018 - asked before the first call: the slots bound the calls in flight
        for position, form in enumerate(forms[start:], start):
            last = position == len(forms) - 1
            body = self._post("/chat/completions", with_format(payload, form, schema, schema_name,
                                                                    plain_object=not (self.json_schema and schema)),
                              may_refuse=not last)
            if body is not None:
                if accepted != form:
                    remember_form(self.base_url, self.model, form)
                return self._parse(body, prompt_id)
        raise AssertionError("the last form is never refused")  # pragma: no cover

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
            # strict=False: a grammar lets raw control characters (a copied newline) into strings
            return json.loads(fenced.group(1) if fenced else content, strict=False)
        except ValueError:
            if choice.get("finish_reason") == "length":
                raise truncated_error(self.name, prompt_id, body, self.max_tokens) from None
            raise ValidationExhaustedError(prompt_id, [{"path": "", "code": "invalid_json"}], attempts=1,
                                           max_attempts=1) from None

    # -------------------------------------------------------------- transport
    def _error(self, code: str, detail: str, *, attempts: int, status: int | None = None) -> ModelError:
        return self._state["endpoint"].error(code, detail, attempts=attempts, status=status, path="/chat/completions")

    def _post(self, path: str, payload: dict[str, Any], *, may_refuse: bool) -> dict[str, Any] | None:
        """The response body, or None when the server refused the structured-output form (``may_refuse``)."""
        def on_http_error(status: int, detail: str) -> None:
            numbers = parse_context_error(detail) if status in (400, 413, 422, 500) else None
            if numbers is not None:
                if numbers.get("limit") and self.context_window is None:
                    with self._state["lock"]:  # later budgets use what the server said
                        self._state["learned_context"] = numbers["limit"]
                said = self.context_window or self.server.context_window
                raise context_error(self.name, numbers, given=self.context_window, said=said, max_tokens=self.max_tokens)
            if may_refuse and refuses_form(status, detail):
                raise _FormatRejected()  # e.g. llama-cpp-python answers 500 "Input should be 'text' or 'json_object'"

        try:
            return self._state["endpoint"].post(path, payload, on_http_error=on_http_error)
        except _FormatRejected:
            return None


def _rebuild(kwargs: dict[str, Any]) -> ChatModel:
    return ChatModel(**kwargs)


class _FormatRejected(Exception):
    """The server does not accept ``response_format.type == "json_schema"``."""
