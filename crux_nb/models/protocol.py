"""The model port: :class:`KnowledgeModel` and the shapes it exchanges.

crux_nb talks to models through four task-level methods rather than one
free-form ``generate_object`` call, so a deterministic offline model can answer
every one of them honestly (see DESIGN.md section 4b). Every method returns
plain JSON-like data (dicts, lists, strings, numbers) that the library validates
with :func:`crux_nb.models.validate_output`, and takes a keyword ``repair``: the
content-free issues (``[{"path", "code"}]``) of the previous attempt, or
``None`` on a first attempt.

Inputs (chunk ids and refs are opaque strings such as ``chunk:doc.md:c0003``)::

    extract(chunks)            chunks  = [{"id", "text"}]
    write_report(community)    community = {"community_id", "level",
                                 "entities": [{"name", "description"?}],
                                 "chunks": [{"ref", "text"}],            # leaf
                                 "children": [{"community_id", "title", "summary",
                                   "findings": [{"id", "statement", "evidence"}]}]}  # parent
    map_findings(query, units) units   = [{"community_id", "level", "title", "summary",
                                 "findings": [{"id", "statement"}],
                                 "corpus"?: {"documents", "df": {term: n}}}]  # data; may be ignored
    rate(query, reports)       reports = [{"community_id", "title", "summary",
                                 "findings": [{"id", "statement"}]}]

Outputs::

    extract       {"entities": [{"name", "type"?, "aliases", "description"?}],
                   "mentions": [{"chunk_id", "name"}],
                   "related": [{"from", "to", "description"?, "chunk_ids"}]}
    write_report  {"title", "summary", "findings": [{"id"?, "statement", "evidence"}]}
    map_findings  {"findings": [{"statement", "finding_ids", "score"}]}   # score 0..100
    rate          {"ratings": [{"community_id", "rating"}]}              # rating 0..100
"""

from __future__ import annotations

from typing import Any, NotRequired, Protocol, TypedDict, runtime_checkable

from ..errors import ModelError, ParameterError

__all__ = [
    "KnowledgeModel",
    "Issue",
    "ChunkInput",
    "CommunityInput",
    "ReportOutput",
    "UnitInput",
    "CorpusStatistics",
    "MapOutput",
    "RateOutput",
    "ExtractOutput",
    "CassetteMissError",
    "TASK_PARAMS",
    "task_input",
    "invoke_task",
    "check_model",
]

#: Positional parameters of each task method, in order.
TASK_PARAMS: dict[str, tuple[str, ...]] = {
    "extract": ("chunks",),
    "write_report": ("community",),
    "map_findings": ("query", "units"),
    "rate": ("query", "reports"),
}


class Issue(TypedDict):
    """A content-free validation issue: ``path`` like ``findings.[0].score``, ``code`` like ``too_big``."""

    path: str
    code: str


class ChunkInput(TypedDict):
    id: str
    text: str


class _EntityRef(TypedDict):
    name: str
    description: NotRequired[str]


class _EvidenceChunk(TypedDict):
    ref: str
    text: str


class _FindingInput(TypedDict):
    id: str
    statement: str
    evidence: NotRequired[list[str]]


class _ChildReport(TypedDict):
    community_id: str
    title: str
    summary: str
    findings: list[_FindingInput]


class CommunityInput(TypedDict):
    """``write_report`` input: leaves carry ``chunks``; parents carry ``children`` (and no chunks)."""

    community_id: str
    level: int
    entities: list[_EntityRef]
    chunks: list[_EvidenceChunk]
    children: list[_ChildReport]


class CorpusStatistics(TypedDict):
    """The searched corpus' chunk count and each query term's document frequency (``global_search`` gives
    every map unit the same; a model may weigh query terms by them or ignore them)."""

    documents: int
    df: dict[str, int]


class UnitInput(TypedDict):
    """A report unit for ``map_findings`` (``rate`` takes the same without ``level`` and ``corpus``)."""

    community_id: str
    level: NotRequired[int]
    title: str
    summary: str
    findings: list[_FindingInput]
    corpus: NotRequired[CorpusStatistics]


class _ReportFinding(TypedDict):
    id: NotRequired[str]
    statement: str
    evidence: list[str]


class ReportOutput(TypedDict):
    title: str
    summary: str
    findings: list[_ReportFinding]


class _MapFinding(TypedDict):
    statement: str
    finding_ids: list[str]
    score: float


class MapOutput(TypedDict):
    findings: list[_MapFinding]


class _Rating(TypedDict):
    community_id: str
    rating: float


class RateOutput(TypedDict):
    ratings: list[_Rating]


class _Entity(TypedDict):
    name: str
    type: NotRequired[str]
    aliases: list[str]
    description: NotRequired[str]


class _Mention(TypedDict):
    chunk_id: str
    name: str


_Related = TypedDict("_Related", {"from": str, "to": str, "description": NotRequired[str], "chunk_ids": list[str]})


class ExtractOutput(TypedDict):
    entities: list[_Entity]
    mentions: list[_Mention]
    related: list[_Related]


@runtime_checkable
class KnowledgeModel(Protocol):
    """What crux_nb needs from a model: a name, a fingerprint and four tasks.

    ``fingerprint`` must change whenever the model's outputs could change
    (name, version, options); it never contains secrets. Any object with these
    attributes is a model (a runtime-checkable protocol; no base class needed).

    >>> from crux_nb.models import KnowledgeModel, OfflineModel
    >>> isinstance(OfflineModel(), KnowledgeModel), isinstance(object(), KnowledgeModel)
    (True, False)
    """

    name: str
    fingerprint: str

    def extract(self, chunks: list[ChunkInput], *, repair: list[Issue] | None = None) -> ExtractOutput | Any:
        """Entities, per-chunk mentions and entity-entity relations with their chunk ids.

        Examples
        --------
        >>> from crux_nb.models import OfflineModel
        >>> out = OfflineModel().extract([{"id": "c1", "text": "Priya Raman leads the Platform team."}])
        >>> out["mentions"]
        [{'chunk_id': 'c1', 'name': 'Platform'}, {'chunk_id': 'c1', 'name': 'Priya Raman'}]
        >>> [(r["from"], r["to"], r["chunk_ids"]) for r in out["related"]]
        [('Platform', 'Priya Raman', ['c1'])]
        """
        ...

    def write_report(self, community: CommunityInput, *, repair: list[Issue] | None = None) -> ReportOutput | Any:
        """A community report ``{title, summary, findings}`` citing evidence refs.

        Examples
        --------
        >>> from crux_nb.models import OfflineModel
        >>> leaf = {"community_id": "c1", "level": 0, "entities": [{"name": "Priya Raman"}], "children": [],
        ...         "chunks": [{"ref": "chunk:team.md:c0000", "text": "Priya Raman leads the Platform team."}]}
        >>> OfflineModel().write_report(leaf)
        {'title': 'Priya Raman', 'summary': 'Priya Raman leads the Platform team.', 'findings': [{'id': 'finding-1',
         'statement': 'Priya Raman leads the Platform team.', 'evidence': ['chunk:team.md:c0000']}]}
        """
        ...

    def map_findings(self, query: str, units: list[UnitInput], *, repair: list[Issue] | None = None) -> MapOutput | Any:
        """Findings relevant to ``query``, each citing issued finding ids, scored 0..100.

        Examples
        --------
        >>> from crux_nb.models import OfflineModel
        >>> units = [{"community_id": "c1", "level": 0, "title": "Platform", "summary": "",
        ...           "findings": [{"id": "f1", "statement": "Priya Raman leads the Platform team."}]}]
        >>> [(f["statement"], f["finding_ids"], 0 <= f["score"] <= 100)
        ...  for f in OfflineModel().map_findings("Who leads the Platform team?", units)["findings"]]
        [('Priya Raman leads the Platform team.', ['f1'], True)]
        """
        ...

    def rate(self, query: str, reports: list[UnitInput], *, repair: list[Issue] | None = None) -> RateOutput | Any:
        """A 0..100 relevance rating per community report.

        Examples
        --------
        >>> from crux_nb.models import OfflineModel
        >>> reports = [{"community_id": "c1", "title": "Platform", "summary": "Priya Raman leads the Platform team.",
        ...             "findings": []}]
        >>> [(r["community_id"], 0 <= r["rating"] <= 100) for r in OfflineModel().rate("Who leads Platform?", reports)["ratings"]]
        [('c1', True)]
        """
        ...


class CassetteMissError(ModelError):
    """A replay cassette has no recording for a call (code ``cassette_miss``).

    Examples
    --------
    >>> import tempfile
    >>> from crux_nb.models import CassetteMissError, CassetteModel, OfflineModel
    >>> path = tempfile.mkdtemp() + "/calls.jsonl"
    >>> _ = CassetteModel(inner=OfflineModel(), path=path, mode="record").rate("Who leads?", [])
    >>> try:
    ...     CassetteModel(path=path).rate("Who runs Atlas?", [])  # never recorded
    ... except CassetteMissError as exc:
    ...     print(exc.code, exc.task, exc.path == path)
    cassette_miss rate True
    """

    default_code = "cassette_miss"

    def __init__(self, task: str, key: str, path: str):
        super().__init__(
            f"Cassette {path!r} has no recording for task '{task}' with key {key}.",
            hint="re-record it with CassetteModel(inner=<model>, path=..., mode='record' or 'auto'), "
            "or check that the inputs and the inner model fingerprint are unchanged.",
        )
        self.task = task
        self.key = key
        self.path = path


def check_model(model: Any, *, owner: str = "crux_nb.models") -> None:
    """Raise :class:`~crux_nb.errors.ParameterError` unless ``model`` is a usable KnowledgeModel."""
    if not isinstance(model, KnowledgeModel):
        raise ParameterError(owner, "model", "a KnowledgeModel (name, fingerprint and the four task methods)", model)
    if not isinstance(model.name, str) or not model.name.strip():
        raise ParameterError(owner, "model.name", "a non-empty string", model.name)
    if not isinstance(model.fingerprint, str) or not model.fingerprint.strip():
        raise ParameterError(owner, "model.fingerprint", "a non-empty string", model.fingerprint)


def task_input(task: str, args: tuple) -> dict[str, Any]:
    """The task's positional arguments as a ``{param: value}`` dict (for hashing and prompts)."""
    try:
        params = TASK_PARAMS[task]
    except KeyError:
        raise ParameterError("crux_nb.models", "task", f"one of {sorted(TASK_PARAMS)}", task) from None
    if len(args) != len(params):
        raise ParameterError(
            "crux_nb.models", "args", f"{len(params)} positional argument(s) for {task} ({', '.join(params)})", args
        )
    return dict(zip(params, args))


def invoke_task(model: Any, task: str, args: tuple, repair: list[dict[str, str]] | None) -> Any:
    """Call ``model.<task>(*args, repair=repair)``."""
    task_input(task, args)
    return getattr(model, task)(*args, repair=repair)
