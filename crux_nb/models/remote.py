"""Running many model calls: in this thread, on an executor's threads, or in other processes (Dask).

Work submitted to an executor is module-level and its arguments pickle (models,
payloads), so a ``dask.distributed.Client`` can ship it to workers; each call
records into its own :class:`CallLog` and the records come back to the caller's
log in submission order, so the log and the outputs never depend on which call
finished first.
"""

from __future__ import annotations

from typing import Any, Callable

from .calllog import CallLog
from .repair import call_task

__all__ = ["Call", "call_task_remote", "run_calls"]

#: One call: (model, task, positional args, keyword args for call_task such as prompt_id).
Call = tuple[Any, str, tuple, dict]


def call_task_remote(model: Any, task: str, args: tuple, kwargs: dict) -> tuple[Any, tuple]:
    """``call_task`` with a fresh call log, returning the output and the log's records."""
    log = CallLog()
    output = call_task(model, task, *args, log=log, **kwargs)
    return output, log.records


def run_calls(calls: list[Call], *, log: Any, executor: Any = None,
              on_result: Callable[[], None] | None = None) -> list:
    """Outputs of ``call_task`` for each call, in order; ``executor`` (anything with ``submit``) runs them."""
    from ..store.lease import keepalive  # a build under a lease stays alive while calls complete

    outputs = []
    if executor is None:
        for model, task, args, kwargs in calls:
            outputs.append(call_task(model, task, *args, log=log, **kwargs))
            keepalive()
            if on_result is not None:
                on_result()
        return outputs
    futures = [executor.submit(call_task_remote, model, task, args, kwargs) for model, task, args, kwargs in calls]
    for future in futures:  # submission order: never completion order
        output, records = future.result()
        for record in records:
            log.append(record)
        outputs.append(output)
        keepalive()
        if on_result is not None:
            on_result()
    return outputs
