"""Models for crux_nb: the :class:`KnowledgeModel` port and its implementations.

* :class:`KnowledgeModel` — the protocol (``name``, ``fingerprint``, ``extract``,
  ``write_report``, ``map_findings``, ``rate``; each takes ``repair=``).
* :class:`OfflineModel` — deterministic, extractive, no network (the default).
* :class:`ChatModel` — any OpenAI-compatible ``/chat/completions`` endpoint.
* :class:`CassetteModel` — records any model's calls and replays them offline.
* :func:`call_task` — the one-repair rule with validation (:func:`validate_output`)
  and call counting (:class:`CallLog`, :class:`CallRecord`).

>>> from crux_nb.models import OfflineModel, call_task, CallLog
>>> log = CallLog()
>>> out = call_task(OfflineModel(), "rate", "launch plan",
...                 [{"community_id": "c1", "title": "Launch plan", "summary": "", "findings": []}],
...                 prompt_id="rate:1", log=log)
>>> out["ratings"][0]["community_id"], len(log)
('c1', 1)
"""

from .calllog import CALL_LOG_COLUMNS, CallLog, CallRecord, report_usage, usage_meter
from .cassette import CassetteModel
from .chat import ChatModel, Secret
from .offline import OfflineModel
from .protocol import (
    TASK_PARAMS,
    CassetteMissError,
    ChunkInput,
    CommunityInput,
    ExtractOutput,
    Issue,
    KnowledgeModel,
    MapOutput,
    RateOutput,
    ReportOutput,
    UnitInput,
    check_model,
)
from .repair import AUTO, call_task
from .validation import (
    TASKS,
    format_path,
    issued_ids_for,
    repair_lines,
    validate_output,
)

# user-facing names; validation helpers (validate_output, issued_ids_for, TASKS, ...) stay importable
__all__ = [
    "KnowledgeModel", "OfflineModel", "ChatModel", "CassetteModel", "CassetteMissError", "Secret",
    "call_task", "CallLog", "CallRecord", "report_usage", "usage_meter",
]
