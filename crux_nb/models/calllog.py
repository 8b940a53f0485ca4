"""Counting model calls: :class:`CallRecord`, :class:`CallLog` and token usage.

Every call that goes through :func:`crux_nb.models.call_task` is appended to a
:class:`CallLog` (when one is given) as one :class:`CallRecord`: the task, the
prompt id, the model name, input and output sizes in characters (of the
canonical JSON of the task input and of the returned object), tokens when the
provider reported them, the duration, whether it was the repair attempt and
whether its output validated.

Providers report tokens through :func:`report_usage`, which writes into a
per-call meter held in a :mod:`contextvars` variable set by ``call_task``. A
model that never calls it simply leaves the token columns at ``None``. The meter
is per thread (each thread has its own context), so concurrent calls made from a
thread pool never mix their counts.

The log is thread-safe (appends hold a lock) and its ``repr`` is deterministic:
it shows counts and sizes but never timings, so notebooks can compare it.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # pragma: no cover - typing only
    import pandas as pd

__all__ = ["CallRecord", "CallLog", "UsageMeter", "report_usage", "usage_meter", "CALL_LOG_COLUMNS"]

CALL_LOG_COLUMNS: tuple[str, ...] = (
    "task",
    "prompt_id",
    "model",
    "input_chars",
    "output_chars",
    "tokens_in",
    "tokens_out",
    "duration_ms",
    "repaired",
    "ok",
    "error",
)


@dataclass(frozen=True, slots=True)
class CallRecord:
    """One model call.

    ``repaired`` is True for the single repair attempt made after a failed
    validation; ``ok`` is True when the call's output validated. ``error`` is
    the stable error code when the call raised (``None`` otherwise).
    ``duration_ms`` is left out of the ``repr`` so reprs stay deterministic.

    Examples
    --------
    >>> from crux_nb.models import CallLog, OfflineModel, call_task
    >>> log = CallLog()
    >>> chunks = [{"id": "c1", "text": "Priya Raman leads the Platform team."}]
    >>> _ = call_task(OfflineModel(), "extract", chunks, prompt_id="demo:extract", log=log)
    >>> log.records[0]
    CallRecord(task='extract', prompt_id='demo:extract', model='offline', input_chars=61, output_chars=325,
               tokens_in=None, tokens_out=None, repaired=False, ok=True, error=None)
    """

    task: str
    prompt_id: str
    model: str
    input_chars: int
    output_chars: int
    tokens_in: int | None = None
    tokens_out: int | None = None
    duration_ms: float = field(default=0.0, repr=False, compare=False)
    repaired: bool = False
    ok: bool = True
    error: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record as a plain dict with the :data:`CALL_LOG_COLUMNS` keys.

        >>> CallRecord(task="rate", prompt_id="p", model="m", input_chars=1, output_chars=2).to_dict()["task"]
        'rate'
        """
        return {name: getattr(self, name) for name in CALL_LOG_COLUMNS}


class CallLog:
    """A thread-safe, append-only list of :class:`CallRecord`.

    >>> log = CallLog()
    >>> log.append(CallRecord(task="rate", prompt_id="p", model="offline", input_chars=10, output_chars=5))
    >>> log
    CallLog(calls=1, repaired=0, failed=0, input_chars=10, output_chars=5, tokens_in=None, tokens_out=None)
    """

    __slots__ = ("_lock", "_records")

    def __init__(self, records: tuple[CallRecord, ...] | list[CallRecord] = ()):
        self._lock = threading.Lock()
        self._records: list[CallRecord] = list(records)

    def append(self, record: CallRecord) -> None:
        """Add one record (safe to call from several threads).

        >>> log = CallLog()
        >>> log.append(CallRecord(task="rate", prompt_id="p", model="offline", input_chars=10, output_chars=5))
        >>> len(log)
        1
        """
        if not isinstance(record, CallRecord):
            raise TypeError(f"CallLog.append expects a CallRecord; got {type(record).__name__}.")
        with self._lock:
            self._records.append(record)

    @property
    def records(self) -> tuple[CallRecord, ...]:
        """A snapshot of the records, in append order."""
        with self._lock:
            return tuple(self._records)

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __iter__(self) -> Iterator[CallRecord]:
        return iter(self.records)

    def summary(self) -> dict[str, Any]:
        """Totals: calls, repaired, failed, characters and tokens (``None`` if never reported).

        >>> log = CallLog([CallRecord(task="rate", prompt_id="p", model="m", input_chars=10, output_chars=5,
        ...                           tokens_in=7)])
        >>> log.summary()
        {'calls': 1, 'repaired': 0, 'failed': 0, 'input_chars': 10, 'output_chars': 5, 'tokens_in': 7, 'tokens_out': None}
        """
        records = self.records
        tokens_in = [r.tokens_in for r in records if r.tokens_in is not None]
        tokens_out = [r.tokens_out for r in records if r.tokens_out is not None]
        return {
            "calls": len(records),
            "repaired": sum(1 for r in records if r.repaired),
            "failed": sum(1 for r in records if not r.ok),
            "input_chars": sum(r.input_chars for r in records),
            "output_chars": sum(r.output_chars for r in records),
            "tokens_in": sum(tokens_in) if tokens_in else None,
            "tokens_out": sum(tokens_out) if tokens_out else None,
        }

    def to_frame(self) -> pd.DataFrame:
        """One row per call with the :data:`CALL_LOG_COLUMNS` columns.

        Token columns are nullable integers (``Int64``), so missing counts are
        ``<NA>`` rather than turning the column into floats.

        >>> log = CallLog([CallRecord(task="rate", prompt_id="p", model="m", input_chars=10, output_chars=5)])
        >>> log.to_frame()[["task", "prompt_id", "input_chars", "tokens_in", "ok"]]
           task prompt_id  input_chars  tokens_in    ok
        0  rate         p           10       <NA>  True
        """
        import pandas as pd

        rows = [r.to_dict() for r in self.records]
        frame = pd.DataFrame(rows, columns=list(CALL_LOG_COLUMNS))
        frame = frame.astype(
            {
                "input_chars": "int64",
                "output_chars": "int64",
                "tokens_in": "Int64",
                "tokens_out": "Int64",
                "duration_ms": "float64",
                "repaired": "bool",
                "ok": "bool",
            }
        )
        return frame

    def __repr__(self) -> str:
        s = self.summary()
        return (
            f"CallLog(calls={s['calls']}, repaired={s['repaired']}, failed={s['failed']}, "
            f"input_chars={s['input_chars']}, output_chars={s['output_chars']}, "
            f"tokens_in={s['tokens_in']}, tokens_out={s['tokens_out']})"
        )


class UsageMeter:
    """Token counts reported by a provider during one call (summed if reported twice).

    >>> meter = UsageMeter()
    >>> meter.add(tokens_in=3); meter.add(tokens_in=4, tokens_out=2)
    >>> meter.tokens_in, meter.tokens_out
    (7, 2)
    """

    __slots__ = ("tokens_in", "tokens_out", "_started")

    def __init__(self) -> None:
        self.tokens_in: int | None = None
        self.tokens_out: int | None = None
        self._started = time.perf_counter()

    def add(self, *, tokens_in: int | None = None, tokens_out: int | None = None) -> None:
        """Add reported token counts (None: not reported, leaves the count as it is).

        >>> meter = UsageMeter()
        >>> meter.add(tokens_out=5)
        >>> meter.tokens_in, meter.tokens_out
        (None, 5)
        """
        if tokens_in is not None:
            self.tokens_in = (self.tokens_in or 0) + int(tokens_in)
        if tokens_out is not None:
            self.tokens_out = (self.tokens_out or 0) + int(tokens_out)

    def elapsed_ms(self) -> float:
        """Milliseconds since the meter started.

        >>> UsageMeter().elapsed_ms() >= 0
        True
        """
        return (time.perf_counter() - self._started) * 1000.0


_CURRENT_METER: contextvars.ContextVar[UsageMeter | None] = contextvars.ContextVar(
    "crux_nb_models_usage_meter", default=None
)


@contextlib.contextmanager
def usage_meter() -> Iterator[UsageMeter]:
    """Collect the tokens reported by model code running inside the ``with`` block.

    >>> with usage_meter() as meter:
    ...     report_usage(tokens_in=12, tokens_out=3)
    >>> meter.tokens_in, meter.tokens_out
    (12, 3)
    """
    meter = UsageMeter()
    token = _CURRENT_METER.set(meter)
    try:
        yield meter
    finally:
        _CURRENT_METER.reset(token)


def report_usage(*, tokens_in: int | None = None, tokens_out: int | None = None) -> None:
    """Called by a model implementation when its provider reports token usage.

    Does nothing outside a :func:`usage_meter` block (for example when a model is
    called directly instead of through ``call_task``).

    >>> report_usage(tokens_in=1)  # outside a usage_meter() block: nothing happens
    >>> with usage_meter() as meter:
    ...     report_usage(tokens_in=1); report_usage(tokens_in=2)
    >>> meter.tokens_in
    3
    """
    meter = _CURRENT_METER.get()
    if meter is not None:
        meter.add(tokens_in=tokens_in, tokens_out=tokens_out)
