"""Parameter checks shared by every layer (the bottom of the import graph: it imports only ``errors``).

Each check raises :class:`~crux_nb.errors.ParameterError` in the one message format
``<owner>: parameter '<name>' must be <expected>; got <value>.``, where ``owner`` is the function
the user called (``"retrieve()"``, ``"communities()"``), and returns the normalised value.

>>> from crux_nb.validation import check_int, check_choice
>>> check_int("retrieve()", "limit", 5.0, minimum=1)
5
>>> check_choice("expand_relations()", "direction", "both", ("out", "in", "both"))
'both'
>>> try:
...     check_int("retrieve()", "limit", 0, minimum=1)
... except ValueError as error:
...     print(str(error).split(" Hint:")[0])
retrieve(): parameter 'limit' must be an integer >= 1; got 0.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from .errors import ParameterError

#: The knowledge-model tasks, in protocol order (one list for the protocol, the config and the steps).
MODEL_TASKS: tuple[str, ...] = ("extract", "write_report", "map_findings", "rate")

__all__ = ["MODEL_TASKS", "check_choice", "check_int", "check_model", "check_name", "check_number", "check_positive"]


def check_int(owner: str, name: str, value: Any, *, minimum: int) -> int:
    """A whole number (ints, or floats with no fraction) at least ``minimum``; returned as ``int``.

    Examples
    --------
    >>> check_int("f()", "n", 3, minimum=0)
    3
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    if isinstance(value, float) and (not value.is_integer()):
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    if value < minimum:
        raise ParameterError(owner, name, f"an integer >= {minimum}", value)
    return int(value)


def check_number(owner: str, name: str, value: Any, *, minimum: float, maximum: float) -> float:
    """A finite real number in ``[minimum, maximum]`` (no bools); returned as given.

    Examples
    --------
    >>> check_number("global_search()", "threshold", 50, minimum=0, maximum=100)
    50
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not minimum <= value <= maximum:
        raise ParameterError(owner, name, f"a number from {minimum} to {maximum}", value)
    return value


def check_positive(owner: str, name: str, value: Any) -> float:
    """A positive finite real number (no bools; an int beyond float range is not finite); returned as ``float``.

    Examples
    --------
    >>> check_positive("communities()", "resolution", 2)
    2.0
    """
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not _finite(value) or value <= 0:
        raise ParameterError(owner, name, "a positive finite number", value)
    return float(value)


def _finite(number: int | float) -> bool:
    try:
        return math.isfinite(number)
    except OverflowError:  # an int beyond float range
        return False


def check_choice(owner: str, name: str, value: Any, choices: Sequence[str]) -> str:
    """One of ``choices`` (compared exactly; no case folding).

    Examples
    --------
    >>> check_choice("f()", "scan", "all", ("all", "adaptive"))
    'all'
    """
    if not isinstance(value, str) or value not in choices:
        raise ParameterError(owner, name, "one of " + ", ".join(repr(c) for c in choices), value)
    return value


def check_name(owner: str, name: str, value: Any) -> str:
    """A non-empty identifier without ``:`` or control characters (ids of bases, steps, scopes).

    Examples
    --------
    >>> check_name("knowledge_base()", "id", "docs")
    'docs'
    """
    if not isinstance(value, str) or not value.strip() or ":" in value or any(ord(c) < 32 for c in value):
        raise ParameterError(owner, name, "a non-empty string without ':' or control characters", value)
    return value


def check_model(owner: str, model: Any, *, hint: str | None = None) -> Any:
    """A knowledge model by duck typing: the four task methods and non-empty ``name``/``fingerprint``.

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> check_model("communities()", OfflineModel()).name
    'offline'
    """
    if model is None:
        raise ParameterError(owner, "model", "a knowledge model (e.g. crux_nb.models.OfflineModel())", model,
                             hint=hint)
    missing = [m for m in MODEL_TASKS if not callable(getattr(model, m, None))]
    if missing:
        raise ParameterError(owner, "model", f"a model with the methods {', '.join(MODEL_TASKS)}", model,
                             hint=f"the model lacks {', '.join(missing)}.")
    for attr in ("name", "fingerprint"):
        value = getattr(model, attr, None)
        if not isinstance(value, str) or not value.strip():
            raise ParameterError(owner, f"model.{attr}", "a non-empty string", value)
    return model
