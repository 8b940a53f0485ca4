""":class:`CassetteModel`: record any model's calls once, replay them offline.

A notebook run once against a real LLM with ``mode="record"`` (or ``"auto"``)
writes every call's output to a JSON Lines file; later runs with
``mode="replay"`` (no inner model, no network) return the same outputs byte for
byte, and the cassette keeps the recorded model's ``name`` and ``fingerprint`` so
strategy fingerprints, ``auto`` detail and report reuse behave identically.

Key of a call: ``stable_hash({"task", "fingerprint", "input", "repair"})`` where
``input`` is the task's arguments by name, hashed through canonical JSON (sorted
keys), and ``repair`` the repair issues (``None`` on a first attempt) — so a
repair call is recorded separately from the first attempt.

File: one canonical-JSON line per recording (sorted keys, no whitespace), lines
sorted by key, rewritten atomically after each new recording — the content
depends only on what was recorded, never on call order or timing. A line holds
``key``, ``task``, ``model``, ``fingerprint``, ``repair`` (bool) and either
``output`` or ``error`` (only :class:`~crux_nb.errors.ValidationExhaustedError`
is recorded, as ``{"code", "prompt_id", "issues"}``, so a repair flow replays
too), plus ``usage`` (tokens reported while recording; replayed to the call log).
Nothing else is stored: no inputs, no prompts, no keys, no timings. A recorded model's budgets (the
characters one call of a task may carry, :meth:`CassetteModel.input_budget`, and the characters of a chunk
a prompt shows) are kept as lines too (``budget`` instead of ``output``), so a replay packs its calls
exactly as the recorded run did, without asking the server.

Modes: ``"replay"`` (a miss raises :class:`~crux_nb.models.CassetteMissError`,
code ``cassette_miss``), ``"record"`` (always calls the inner model and
overwrites the recording), ``"auto"`` (replays hits, records misses).
"""

from __future__ import annotations

import os
import tempfile
import threading
from pathlib import Path
from typing import Any, Literal

from .._hashing import canonical_json, stable_hash
from ..errors import ParameterError, StorageError, ValidationExhaustedError
from .calllog import report_usage, usage_meter
from .protocol import CassetteMissError, check_model, invoke_task, task_input

__all__ = ["CassetteModel", "CassetteMode"]

CassetteMode = Literal["replay", "record", "auto"]
_MODES = ("replay", "record", "auto")


class CassetteModel:
    """A record/replay wrapper around any :class:`~crux_nb.models.KnowledgeModel`.

    Parameters (keyword-only)::

        inner: the model to record (required for ``"record"`` and ``"auto"``).
        path: the JSON Lines cassette file.
        mode: ``"replay"`` (default), ``"record"`` or ``"auto"``.
        fingerprint: which recorded model to replay when ``inner`` is absent and the
            file holds recordings of several models.

    Examples
    --------
    >>> import tempfile
    >>> from crux_nb.models import CassetteModel, OfflineModel
    >>> path = tempfile.mkdtemp() + "/calls.jsonl"
    >>> recorder = CassetteModel(inner=OfflineModel(), path=path, mode="record")
    >>> reports = [{"community_id": "c1", "title": "Marley", "summary": "Jacob Marley is dead.", "findings": []}]
    >>> recorded = recorder.rate("Who is Marley?", reports)
    >>> player = CassetteModel(path=path)  # replay: no inner model, no calls
    >>> player.rate("Who is Marley?", reports) == recorded, player.hits, player.misses
    (True, 1, 0)
    >>> player.rate("Who is Scrooge?", reports)
    Traceback (most recent call last):
    ...
    crux_nb.models.protocol.CassetteMissError: Cassette ... has no recording for task 'rate' ... Hint: ...
    """

    def __init__(self, *, inner: Any = None, path: str | os.PathLike[str], mode: CassetteMode = "replay",
                 fingerprint: str | None = None):
        if mode not in _MODES:
            raise ParameterError("CassetteModel", "mode", "one of 'replay', 'record', 'auto'", mode)
        if not isinstance(path, (str, os.PathLike)) or not str(path):
            raise ParameterError("CassetteModel", "path", "a file path", path)
        self._path = Path(path)
        self._mode = mode
        self._lock = threading.Lock()
        self._records: dict[str, dict[str, Any]] = self._load()
        self.hits = 0
        self.misses = 0
        self.inner_calls = 0
        if inner is not None:
            check_model(inner, owner="CassetteModel")
            self._inner = inner
            self.name: str = inner.name
            self.fingerprint: str = inner.fingerprint
            return
        if mode != "replay":
            raise ParameterError("CassetteModel", "inner", f"a KnowledgeModel in mode {mode!r}", None)
        self._inner = None
        known = sorted({(r["fingerprint"], r["model"]) for r in self._records.values()})
        if fingerprint is not None:
            known = [k for k in known if k[0] == fingerprint]
        if not known:
            raise ParameterError(
                "CassetteModel", "path", "an existing cassette with recordings" + (f" for fingerprint {fingerprint!r}" if fingerprint else ""),
                str(self._path), hint="record it first with mode='record' and an inner model.",
            )
        if len({fp for fp, _n in known}) > 1:
            raise ParameterError("CassetteModel", "fingerprint", "one of " + ", ".join(sorted({fp for fp, _ in known})), None,
                                 hint="the cassette holds recordings of several models; say which one to replay.")
        self.fingerprint, self.name = known[0]

    # --------------------------------------------------------------- properties
    @property
    def path(self) -> Path:
        return self._path

    @property
    def mode(self) -> str:
        return self._mode

    @property
    def inner(self) -> Any:
        return self._inner

    def __len__(self) -> int:
        with self._lock:
            return len(self._records)

    def __repr__(self) -> str:
        return (f"CassetteModel(mode={self._mode!r}, path={str(self._path)!r}, records={len(self)}, "
                f"name={self.name!r}, fingerprint={self.fingerprint!r})")

    # -------------------------------------------------------------------- tasks
    def extract(self, chunks: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Replayed or recorded ``extract``.

        Examples
        --------
        >>> import tempfile
        >>> from crux_nb.models import CassetteModel, OfflineModel
        >>> path = tempfile.mkdtemp() + "/calls.jsonl"
        >>> chunks = [{"id": "c1", "text": "Priya Raman leads the Platform team."}]
        >>> recorded = CassetteModel(inner=OfflineModel(), path=path, mode="record").extract(chunks)
        >>> player = CassetteModel(path=path)
        >>> player.extract(chunks) == recorded, sorted(e["name"] for e in recorded["entities"]), player.hits
        (True, ['Platform', 'Priya Raman'], 1)
        """
        return self._call("extract", (chunks,), repair)

    def write_report(self, community: dict[str, Any], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Replayed or recorded ``write_report``.

        Examples
        --------
        >>> import tempfile
        >>> from crux_nb.models import CassetteModel, OfflineModel
        >>> path = tempfile.mkdtemp() + "/calls.jsonl"
        >>> leaf = {"community_id": "c1", "level": 0, "entities": [{"name": "Platform"}], "children": [],
        ...         "chunks": [{"ref": "chunk:team.md:c0000", "text": "Priya Raman leads the Platform team."}]}
        >>> recorded = CassetteModel(inner=OfflineModel(), path=path, mode="record").write_report(leaf)
        >>> player = CassetteModel(path=path)
        >>> player.write_report(leaf) == recorded, recorded["title"], len(player)
        (True, 'Platform', 1)
        """
        return self._call("write_report", (community,), repair)

    def map_findings(self, query: str, units: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Replayed or recorded ``map_findings``.

        Examples
        --------
        >>> import tempfile
        >>> from crux_nb.models import CassetteModel, OfflineModel
        >>> path = tempfile.mkdtemp() + "/calls.jsonl"
        >>> units = [{"community_id": "c1", "level": 0, "title": "Platform", "summary": "",
        ...           "findings": [{"id": "f1", "statement": "Priya Raman leads the Platform team."}]}]
        >>> recorder = CassetteModel(inner=OfflineModel(), path=path, mode="auto")  # replays hits, records misses
        >>> first, again = recorder.map_findings("Who leads?", units), recorder.map_findings("Who leads?", units)
        >>> first == again, [f["finding_ids"] for f in first["findings"]], (recorder.inner_calls, recorder.hits)
        (True, [['f1']], (1, 1))
        """
        return self._call("map_findings", (query, units), repair)

    def rate(self, query: str, reports: list[dict[str, Any]], *, repair: list[dict[str, str]] | None = None) -> Any:
        """Replayed or recorded ``rate``.

        Examples
        --------
        >>> import tempfile
        >>> from crux_nb.models import CassetteModel, OfflineModel
        >>> path = tempfile.mkdtemp() + "/calls.jsonl"
        >>> reports = [{"community_id": "c1", "title": "Platform", "summary": "Priya Raman leads the Platform team.",
        ...             "findings": []}]
        >>> recorded = CassetteModel(inner=OfflineModel(), path=path, mode="record").rate("Who leads?", reports)
        >>> CassetteModel(path=path).rate("Who leads?", reports) == recorded, recorded["ratings"][0]["community_id"]
        (True, 'c1')
        """
        return self._call("rate", (query, reports), repair)

    # ------------------------------------------------------------------ budgets
    def input_budget(self, task: str) -> int | None:
        """The recorded model's budget for ``task`` (None when it declares none): asked and recorded while
        recording, read back on replay."""
        from .budget import input_budget

        return self._budget(f"input:{task}", lambda: input_budget(self._inner, task, None))

    @property
    def evidence_chars(self) -> int | None:
        """Characters of each chunk the recorded model's prompts show (None: the whole chunk)."""
        return self._budget("evidence", lambda: getattr(self._inner, "evidence_chars", None))

    def _budget(self, name: str, ask: Any) -> int | None:
        key = "budget:" + stable_hash({"budget": name, "fingerprint": self.fingerprint}, length=24)
        with self._lock:
            record = self._records.get(key)
        if self._inner is None or self._mode == "auto" and record is not None:
            return None if record is None else record["budget"]
        value = ask()
        if value is not None and (record is None or record["budget"] != value):
            with self._lock:
                self._records[key] = {"key": key, "task": f"budget:{name}", "model": self.name,
                                      "fingerprint": self.fingerprint, "budget": value}
                self._write()
        return value

    def key(self, task: str, args: tuple, repair: list[dict[str, str]] | None = None) -> str:
        """The recording key of one call (see module docs): the same task, input and model give the same key.

        >>> import tempfile
        >>> from crux_nb.models import CassetteModel, OfflineModel
        >>> model = CassetteModel(inner=OfflineModel(), path=tempfile.mkdtemp() + "/c.jsonl", mode="record")
        >>> model.key("rate", ("q", [])) == model.key("rate", ("q", [])) != model.key("rate", ("other", []))
        True
        """
        payload = {"task": task, "fingerprint": self.fingerprint, "input": task_input(task, args), "repair": repair}
        return stable_hash(payload, length=32)

    def _call(self, task: str, args: tuple, repair: list[dict[str, str]] | None) -> Any:
        key = self.key(task, args, repair)
        if self._mode != "record":
            with self._lock:
                record = self._records.get(key)
                if record is not None:
                    self.hits += 1
                elif self._mode == "replay":
                    self.misses += 1
            if record is not None:
                return _replay(record)
            if self._mode == "replay":
                raise CassetteMissError(task, key, str(self._path))
        return self._record(task, args, repair, key)

    def _record(self, task: str, args: tuple, repair: list[dict[str, str]] | None, key: str) -> Any:
        record: dict[str, Any] = {
            "key": key, "task": task, "model": self.name, "fingerprint": self.fingerprint, "repair": repair is not None,
        }
        with self._lock:
            self.inner_calls += 1
        error: ValidationExhaustedError | None = None
        with usage_meter() as meter:
            try:
                output = invoke_task(self._inner, task, args, repair)
            except ValidationExhaustedError as exc:
                error, output = exc, None
        record["usage"] = {"tokens_in": meter.tokens_in, "tokens_out": meter.tokens_out}
        report_usage(tokens_in=meter.tokens_in, tokens_out=meter.tokens_out)
        if error is not None:
            record["error"] = {"code": error.code, "prompt_id": error.prompt_id, "issues": [dict(i) for i in error.issues]}
        else:
            record["output"] = output
        try:
            canonical_json(record)
        except (TypeError, ValueError) as exc:  # pragma: no cover - defensive
            raise StorageError(f"CassetteModel: the {task} output is not JSON-serialisable ({type(exc).__name__}).") from None
        with self._lock:
            self._records[key] = _roundtrip(record)
            self._write()
        if error is not None:
            raise error
        return _output(self._records[key])

    # ------------------------------------------------------------------ storage
    def _load(self) -> dict[str, dict[str, Any]]:
        import json

        if not self._path.exists():
            return {}
        records: dict[str, dict[str, Any]] = {}
        try:
            with self._path.open(encoding="utf-8") as fh:
                for number, line in enumerate(fh, 1):
                    if not line.strip():
                        continue
                    record = json.loads(line)
                    if not isinstance(record, dict) or not {"key", "task", "model", "fingerprint"} <= set(record):
                        raise ValueError(f"line {number} is not a cassette record")
                    records[record["key"]] = record
        except (OSError, ValueError) as exc:
            raise StorageError(f"CassetteModel: cannot read cassette {str(self._path)!r}: {exc}.",
                               hint="delete it and record again.") from None
        return records

    def _write(self) -> None:
        self._path.parent.mkdir(parents=True, exist_ok=True)
        text = "".join(canonical_json(self._records[k]) + "\n" for k in sorted(self._records))
        fd, tmp = tempfile.mkstemp(prefix=".cassette-", dir=str(self._path.parent))
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
                fh.write(text)
            os.replace(tmp, self._path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


def _roundtrip(record: dict[str, Any]) -> dict[str, Any]:
    """The record exactly as it will read back from the file (tuples → lists, etc.)."""
    import json

    return json.loads(canonical_json(record))


def _replay(record: dict[str, Any]) -> Any:
    usage = record.get("usage") or {}
    report_usage(tokens_in=usage.get("tokens_in"), tokens_out=usage.get("tokens_out"))
    return _output(record)


def _output(record: dict[str, Any]) -> Any:
    """A fresh copy of the recorded output (or the recorded validation error, raised)."""
    error = record.get("error")
    if error is not None:
        raise ValidationExhaustedError(error.get("prompt_id") or record["task"], error.get("issues") or [], attempts=1, max_attempts=1)
    return _roundtrip({"output": record["output"]})["output"]
