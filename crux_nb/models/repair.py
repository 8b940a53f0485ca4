"""The one-repair rule, shared by every task: :func:`call_task`.

    initial call ──valid──▶ return
         │ invalid output, or the model raised ValidationExhaustedError
         ▼
    one repair call with ``repair=issues`` ──valid──▶ return
         │ invalid again (or ValidationExhaustedError again)
         ▼
    raise ValidationExhaustedError(prompt_id, issues, attempts=2, max_attempts=2)

Any other exception from the model propagates unchanged (after being logged).
Each call is appended to ``log`` as a :class:`~crux_nb.models.CallRecord`.

Example::

    log = CallLog()
    report = call_task(model, "write_report", community, prompt_id=f"community:{cid}", log=log)
    hits = call_task(model, "map_findings", query, units, prompt_id="globalSearch:batch:1", log=log)
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from .._hashing import canonical_json
from ..errors import CruxError, ParameterError, ValidationExhaustedError
from .calllog import CallLog, CallRecord, usage_meter
from .protocol import check_model, invoke_task, task_input
from .validation import Issue, issued_ids_for, validate_output

__all__ = ["call_task", "AUTO"]


class _Auto:
    __slots__ = ()

    def __repr__(self) -> str:
        return "AUTO"


#: Default for ``issued_ids``: derive the citable ids from the task input.
AUTO: Any = _Auto()


def _size(value: Any) -> int:
    try:
        return len(canonical_json(value))
    except (TypeError, ValueError):  # pragma: no cover - defensive
        return len(repr(value))


def _attempt(
    model: Any,
    task: str,
    args: tuple,
    *,
    prompt_id: str,
    repair: list[Issue] | None,
    issued: frozenset[str] | None,
    input_chars: int,
    log: CallLog | None,
) -> tuple[dict | None, list[Issue]]:
    """One model call plus validation; returns ``(cleaned, issues)``."""
    repaired = repair is not None
    output: Any = None
    with usage_meter() as meter:
        try:
            output = invoke_task(model, task, args, repair)
        except ValidationExhaustedError as exc:
            issues = [dict(i) for i in exc.issues] or [{"path": "", "code": "invalid"}]
            _log(log, task, prompt_id, model, input_chars, 0, meter, repaired, False, exc.code)
            return None, [{"path": str(i.get("path", "")), "code": str(i.get("code", "invalid"))} for i in issues]
        except BaseException as exc:
            code = exc.code if isinstance(exc, CruxError) else type(exc).__name__
            if isinstance(exc, CruxError):
                exc.add_note(f'(in the call "{prompt_id}")')  # the model knows its task, not the caller's call
            _log(log, task, prompt_id, model, input_chars, 0, meter, repaired, False, code)
            raise
    cleaned, issues = validate_output(task, output, issued_ids=issued)
    _log(log, task, prompt_id, model, input_chars, _size(output), meter, repaired, not issues, None)
    return cleaned, issues


def _log(log, task, prompt_id, model, input_chars, output_chars, meter, repaired, ok, error) -> None:
    if log is None:
        return
    log.append(
        CallRecord(
            task=task,
            prompt_id=prompt_id,
            model=str(getattr(model, "name", "?")),
            input_chars=input_chars,
            output_chars=output_chars,
            tokens_in=meter.tokens_in,
            tokens_out=meter.tokens_out,
            duration_ms=round(meter.elapsed_ms(), 3),
            repaired=repaired,
            ok=ok,
            error=error,
        )
    )


def call_task(
    model: Any,
    task: str,
    /,
    *args: Any,
    prompt_id: str,
    issued_ids: Iterable[str] | None | Any = AUTO,
    log: CallLog | None = None,
) -> dict[str, Any]:
    """Run ``model.<task>(*args)`` under the one-repair rule and return the validated output.

    Parameters
    ----------
    model:
        Any :class:`~crux_nb.models.KnowledgeModel`.
    task:
        ``"extract"``, ``"write_report"``, ``"map_findings"`` or ``"rate"``; ``args`` are
        that method's positional arguments (``chunks``; ``community``; ``query, units``;
        ``query, reports``).
    prompt_id:
        Names the call in logs and in :class:`~crux_nb.errors.ValidationExhaustedError`
        (for example ``"community:<id>"`` or ``"globalSearch:batch:1"``).
    issued_ids:
        The ids the output may cite. By default (:data:`AUTO`) they are derived from the
        input (chunk ids, chunk refs plus child evidence, finding ids, community ids);
        ``None`` turns the membership checks off.
    log:
        A :class:`~crux_nb.models.CallLog` to append one record per call to.

    Examples
    --------
    >>> from crux_nb.models import CallLog, OfflineModel, call_task
    >>> log = CallLog()
    >>> call_task(OfflineModel(), "rate", "gateway", [{"community_id": "c1", "title": "Gateway", "summary": ""}],
    ...           prompt_id="rate:1", log=log)["ratings"][0]["community_id"]
    'c1'
    >>> [(r.task, r.prompt_id, r.ok) for r in log]
    [('rate', 'rate:1', True)]

    Returns the cleaned output (defaults filled, ignored extra keys dropped).
    """
    if not isinstance(prompt_id, str) or not prompt_id:
        raise ParameterError("call_task", "prompt_id", "a non-empty string", prompt_id)
    if log is not None and not isinstance(log, CallLog):
        raise ParameterError("call_task", "log", "a CallLog or None", log)
    check_model(model, owner="call_task")
    task_input(task, args)
    if issued_ids is AUTO:
        issued = issued_ids_for(task, args)
    elif issued_ids is None:
        issued = None
    else:
        issued = frozenset(str(i) for i in issued_ids)
    input_chars = _size(list(args))
    common = dict(prompt_id=prompt_id, issued=issued, input_chars=input_chars, log=log)
    cleaned, first = _attempt(model, task, args, repair=None, **common)
    if not first:
        return cleaned  # type: ignore[return-value]
    cleaned, issues = _attempt(model, task, args, repair=[dict(i) for i in first], **common)
    if not issues:
        return cleaned  # type: ignore[return-value]
    raise ValidationExhaustedError(prompt_id, issues, attempts=2, max_attempts=2, hint=exhausted_hint(first + issues))


def exhausted_hint(issues: list[Issue]) -> str:
    """What to change after the call and its repair both failed, by cause.

    >>> exhausted_hint([{"path": "", "code": "invalid_json"}]).startswith("the model answered with text")
    True
    >>> "stronger model" in exhausted_hint([{"path": "ratings", "code": "too_small"}])
    True
    """
    if any(i.get("code") == "invalid_json" for i in issues):
        return ("the model answered with text that is not JSON: use a server that constrains output to the task's "
                "JSON schema (llama.cpp, vLLM, Ollama, OpenAI do; ChatModel(json_schema=True) asks for it), or a "
                "model that follows JSON instructions.")
    return ("the model's JSON was complete but broke the task schema twice (exc.issues): try a stronger model, "
            "or inspect the call log.")
