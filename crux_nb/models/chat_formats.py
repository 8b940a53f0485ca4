"""How :class:`~crux_nb.models.ChatModel` asks for JSON, and the errors that name what to change.

* :data:`FORMATS`: the structured-output forms, tried in order until the endpoint accepts one;
  the accepted form is remembered per endpoint (base URL and model) for the process.
* :func:`context_error`: a prompt the server's context cannot hold (code ``context_exceeded``),
  with the numbers and the knob; :func:`truncated_error`: an answer cut at ``max_tokens`` (code
  ``output_truncated``), hint "raise max_tokens (now N)".
"""

from __future__ import annotations

import re
import threading
from typing import Any

from ..errors import ModelError

__all__ = ["FORMATS", "with_format", "grammar_safe", "accepted_form", "remember_form", "refuses_form",
           "context_error", "truncated_error"]

#: Structured-output forms, in the order they are tried: OpenAI's ``json_schema`` (OpenAI, vLLM, llama.cpp's
#: llama-server, recent Ollama), llama-cpp-python's ``json_object`` with ``schema``, Ollama's ``format``, plain.
FORMATS = ("json_schema", "json_object_schema", "ollama_format", "plain")
_ACCEPTED: dict[tuple[str, str], str] = {}
_LOCK = threading.Lock()
_FORMAT_WORDS = re.compile(r"response_format|json_schema|schema|\bformat\b|grammar", re.I)


def accepted_form(base_url: str, model: str) -> str | None:
    """The form this endpoint accepted before (None: not asked yet in this process)."""
    with _LOCK:
        return _ACCEPTED.get((base_url, model))


def remember_form(base_url: str, model: str, form: str) -> None:
    with _LOCK:
        _ACCEPTED[(base_url, model)] = form


def refuses_form(status: int, detail: str) -> bool:
    """Whether an HTTP error refuses the structured-output field (not the request as a whole).

    >>> refuses_form(500, "('body', 'response_format', 'type') Input should be 'text' or 'json_object'")
    True
    >>> refuses_form(401, "invalid api key"), refuses_form(400, "model not found")
    (False, False)
    """
    return status in (400, 422, 500) and bool(_FORMAT_WORDS.search(detail))


def with_format(payload: dict[str, Any], form: str, schema: dict[str, Any] | None, name: str, *,
                 plain_object: bool) -> dict[str, Any]:
    """``payload`` with the structured-output field of ``form`` (see :data:`FORMATS`)."""
    out = dict(payload)
    if form == "json_schema":
        out["response_format"] = {"type": "json_schema", "json_schema": {"name": name, "schema": schema, "strict": False}}
    elif form == "json_object_schema":
        out["response_format"] = {"type": "json_object", "schema": grammar_safe(schema)}
    elif form == "ollama_format":
        out["format"] = schema
    elif plain_object:
        out["response_format"] = {"type": "json_object"}
    return out


_GRAMMAR_DROP = frozenset({"minLength", "additionalProperties", "minimum", "maximum"})
_GRAMMAR_MAX_ITEMS = 16
#: Longest bounded string in a grammar: 160 nested rules build fast (an extraction call with its relation
#: descriptions bounded at 100: 6 s, 97 tokens, where unbounded ones ran to max_tokens), 2,000 kill the server.
_GRAMMAR_MAX_LENGTH = 160


def grammar_safe(schema: Any) -> Any:
    """The schema without the keywords llama.cpp's grammar builder expands badly.

    llama-cpp-python unrolls ``maxLength: 2000`` into 2000 nested optional rules and its
    server process dies on the result; long ``maxItems`` do the same, and
    ``additionalProperties: false`` or number bounds make sampling 10x slower (measured:
    25 s instead of 1.6 s for 31 tokens). :func:`~crux_nb.models.validate_output` checks
    all of these anyway, so they are dropped here; ``maxItems`` above 16 becomes 16 and ``maxLength``
    above 160 becomes 160 (an unbounded list or string lets a small model repeat itself until
    ``max_tokens`` cuts the JSON; a grammar-bound answer is shorter than the schema allows, never
    invalid); ``enum``, ``required`` and ``minItems`` stay.

    An integer between bounds becomes an ``enum`` of eleven steps (a rating or score of 0..100: 0, 10, ... 100).

    >>> grammar_safe({"type": "string", "maxLength": 2000, "minLength": 1})
    {'type': 'string', 'maxLength': 160}
    >>> grammar_safe({"type": "integer", "minimum": 0, "maximum": 100})["enum"][:3]
    [0, 10, 20]
    """
    if isinstance(schema, dict):
        if schema.get("type") == "integer" and isinstance(schema.get("minimum"), int) \
                and isinstance(schema.get("maximum"), int):
            # bounds make sampling slow, and without them a small model rates 150: steps of a tenth instead
            low, high = schema["minimum"], schema["maximum"]
            step = max(1, (high - low) // 10)
            return {"type": "integer", "enum": sorted({*range(low, high + 1, step), high})}
        out = {}
        for key, value in schema.items():
            if key in _GRAMMAR_DROP:
                continue
            if key == "maxItems" and isinstance(value, int):
                value = min(value, _GRAMMAR_MAX_ITEMS)
            if key == "maxLength" and isinstance(value, int):
                value = min(value, _GRAMMAR_MAX_LENGTH)
            out[key] = grammar_safe(value)
        return out
    if isinstance(schema, list):
        return [grammar_safe(v) for v in schema]
    return schema


def context_error(name: str, numbers: dict[str, int], *, given: int | None, said: int | None,
                  max_tokens: int | None) -> ModelError:
    """The error of a prompt the server's context cannot hold: the numbers, and the knobs to turn.

    >>> err = context_error("chat:m", {"limit": 4096, "requested": 6491, "prompt": 6390, "completion": 101},
    ...                     given=None, said=None, max_tokens=101)
    >>> err.code, str(err)
    ('context_exceeded', "ChatModel chat:m: the server's context holds 4096 tokens but the call asked for 6491 tokens (6390 of prompt, 101 for the answer). Hint: pass ChatModel(context_window=4096) (now unset: the server did not say) so batches fit, or lower max_tokens (now 101); global_search(batch_chars=...) sets smaller map batches.")
    """
    limit = numbers.get("limit") or None
    asked = f"{numbers['requested']} tokens" if "requested" in numbers else "more tokens than it holds"
    split = f" ({numbers['prompt']} of prompt, {numbers['completion']} for the answer)" if "prompt" in numbers else ""
    now = (f"{given}" if given is not None else f"unset: the server said {said}" if said
           else "unset: the server did not say")
    err = ModelError(f"ChatModel {name}: the server's context holds {limit or '?'} tokens but the call asked for "
                     f"{asked}{split}.", code="context_exceeded",
                     hint=f"pass ChatModel(context_window={limit or '<the server context>'}) (now {now}) so batches "
                          f"fit, or lower max_tokens (now {max_tokens}); global_search(batch_chars=...) sets smaller "
                          "map batches.")
    err.status, err.attempts, err.numbers = 400, 1, numbers  # type: ignore[attr-defined]
    return err


def truncated_error(name: str, prompt_id: str, body: dict[str, Any], max_tokens: int | None) -> ModelError:
    """The error of an answer cut at the token limit before its JSON was complete.

    >>> err = truncated_error("chat:m", "community:c1", {"usage": {"completion_tokens": 400}}, 400)
    >>> err.code, err.hint
    ('output_truncated', 'raise max_tokens (now 400) in ChatModel(max_tokens=...).')
    """
    usage = body.get("usage") if isinstance(body.get("usage"), dict) else {}
    written = usage.get("completion_tokens")
    now = f"now {max_tokens}" if max_tokens is not None else "now unset: the server's default"
    count = f", {written} tokens written" if isinstance(written, int) else ""
    err = ModelError(f'ChatModel {name}: the answer to "{prompt_id}" was cut at the token limit (finish_reason '
                     f'"length"{count}) before its JSON was complete.', code="output_truncated",
                     hint=f"raise max_tokens ({now}) in ChatModel(max_tokens=...).")
    err.attempts = 1  # type: ignore[attr-defined]
    return err
