"""The crux_nb error hierarchy.

Every error raised on purpose by crux_nb is a :class:`CruxError` with a stable
``code`` (a short snake_case string that tests and callers may rely on) and a
``hint`` saying what to do next. The message never contains secrets.

Every error has a hint: a raise site may pass a specific one; otherwise the
class's ``default_hint`` is used (tests/reliability/test_hostile_input.py checks
every subclass).
"""

from __future__ import annotations

from typing import Any

__all__ = [
    "CruxError",
    "ParameterError",
    "InputError",
    "RefError",
    "NotFoundError",
    "StorageError",
    "LeaseError",
    "ConflictError",
    "RetrievalConfigError",
    "RetrievalRunError",
    "ModelError",
    "ValidationExhaustedError",
]


class CruxError(Exception):
    """Base class: ``code`` is stable, ``hint`` says how to recover (never empty)."""

    default_code = "crux_error"
    default_hint = "read the message above; the docstring of the function you called (help(...)) lists what it accepts."

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None):
        super().__init__(message)
        self.message = message
        self.code = code or self.default_code
        self.hint = hint or self.default_hint

    def __str__(self) -> str:
        if self.hint:
            return f"{self.message} Hint: {self.hint}"
        return self.message

    def __repr__(self) -> str:
        return f"{type(self).__name__}(code={self.code!r}, message={self.message!r})"


class ParameterError(CruxError, ValueError):
    """A step, function or constructor got an invalid parameter value.

    The message always has the form
    ``<owner>: parameter '<name>' must be <expected>; got <value>.``
    """

    default_code = "invalid_parameter"
    default_hint = "check the parameter against the function's docstring (help(...) lists accepted types and ranges)."

    def __init__(self, owner: str, name: str, expected: str, value: Any, *, hint: str | None = None):
        shown = short_repr(value)
        super().__init__(
            f"{owner}: parameter '{name}' must be {expected}; got {shown}.",
            hint=hint or f"help() on {owner} describes what '{name}' accepts.",
        )
        self.owner = owner
        self.parameter = name


class InputError(CruxError, ValueError):
    """Data handed to crux_nb (texts, frames, files, edges) is not usable."""

    default_code = "invalid_input"
    default_hint = ("check the data you passed (text, frame, file, edges or entities) against the docstring of the "
                    "method that reads it; nothing was changed.")


class RefError(InputError):
    """A knowledge ref (or its encoded string) is not valid."""

    default_code = "invalid_ref"
    default_hint = ("refs are 'document:<source_id>', 'parent:<source_id>:<parent_id>', 'chunk:<source_id>:<chunk_id>' "
                    "or 'entity:<entity_id>' with '%' written '%25' and ':' written '%3A' inside a segment; or pass a "
                    "ref object from crux_nb.refs (DocumentRef, ParentRef, ChunkRef, EntityRef) built from strings.")


class NotFoundError(CruxError, LookupError):
    """A named thing (source, chunk, generation, file) does not exist."""

    default_code = "not_found"
    default_hint = "check the name or path; kb.documents['source_id'], kb.chunks['ref'] and kb.entities list what exists."


class StorageError(CruxError, OSError):
    """A saved knowledge base is missing, incomplete or corrupted."""

    default_code = "storage_error"
    default_hint = ("check the path: open only folders written by kb.save() (or the tool named in the message), "
                    "and restore damaged files from a backup.")


class LeaseError(StorageError):
    """Another process holds the build lease."""

    default_code = "lease_held"
    default_hint = ("another process is building or saving this knowledge base; wait for it to finish (a lease whose "
                    "holder stopped expires on its own).")


class ConflictError(StorageError):
    """``kb.save(path)`` found a newer generation than the one this knowledge base was read from.

    Nothing was written and the knowledge base in memory is unchanged. ``current`` is the folder's generation,
    ``base`` the one this knowledge base was read from (None for one never opened from or saved to that folder).
    """

    default_code = "save_conflict"
    default_hint = ("reopen with crux_nb.open(path) and apply your change again, or call kb.save(path, merge=True) "
                    "to apply this knowledge base's source changes onto the newer generation, or "
                    "kb.save(path, overwrite=True) to replace it.")

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None,
                 current: str | None = None, base: str | None = None):
        super().__init__(message, code=code, hint=hint)
        self.current = current
        self.base = base


class RetrievalConfigError(CruxError, ValueError):
    """A recipe could not be built (codes follow upstream: ``invalid_step_order``,
    ``missing_model``, ``recipe_id_conflict``, ``reserved_step_id``)."""

    default_code = "invalid_step_order"
    default_hint = ("start a recipe with one producer (retrieve() or global_search()), follow it with hit steps such as "
                    "expand_relations(), and pass model=... where a step needs a model.")


class RetrievalRunError(CruxError, RuntimeError):
    """A recipe step failed at run time; ``trace`` records what ran."""

    default_code = "step_failed"
    default_hint = "exc.trace records which step failed and why; fix that step's input or configuration."

    def __init__(self, message: str, *, code: str | None = None, hint: str | None = None, trace: Any = None):
        super().__init__(message, code=code, hint=hint)
        self.trace = trace


class ModelError(CruxError, RuntimeError):
    """A model call failed (transport, timeout, refusal) after its retries."""

    default_code = "model_error"
    default_hint = ("check the model's endpoint, credentials and timeout; the call log (crux_nb.models.CallLog) "
                    "records every attempt.")


class ValidationExhaustedError(ModelError):
    """A model's output failed validation, and so did the one repair attempt."""

    default_code = "validation_exhausted"

    def __init__(self, prompt_id: str, issues: list[dict[str, Any]] | tuple = (), *, attempts: int = 1,
                 max_attempts: int = 1, hint: str | None = None):
        calls = f"{attempts} call" + ("s (the call and its one repair)" if attempts == 2 else "s" if attempts > 1 else "")
        shown = ", ".join(f"{i.get('path') or '(root)'}: {i.get('code')}" for i in list(issues)[:3] if isinstance(i, dict))
        super().__init__(
            f'Validation failed after {calls} for prompt "{prompt_id}"' + (f" ({shown})." if shown else "."),
            hint=hint or "the model's output did not match the task schema; inspect the call log (exc.issues).",
        )
        self.prompt_id = prompt_id
        self.issues = tuple(issues)
        self.attempts = attempts
        self.max_attempts = max_attempts


def short_repr(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."
