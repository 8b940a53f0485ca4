"""Faulty models, task by task (issue 9).

Each of the four model tasks is driven through its real entry point on a knowledge base saved to disk:

* ``extract``      -> ``kb.extract_entities(model)``
* ``write_report`` -> ``kb.communities.prepare()`` with ``crux_nb.communities(model=model)``
* ``map_findings`` -> ``kb.recipe(steps=[global_search(model=model, scan="all")]).retrieve(q)``
* ``rate``         -> ``kb.recipe(steps=[global_search(model=model, scan="adaptive", detail="detailed")])``

and the model misbehaves in one way per case (the parametrize ids form the task x fault table):
it raises; it hangs past the timeout (through ``ChatModel`` against a local ``http.server`` that sleeps:
crux_nb has no per-call timeout for Python-level models, only ``ChatModel(timeout=...)``); it returns a
list / a string / ``None``; it answers with text that is not JSON (``ChatModel``); it cites ids that were
not issued; it returns out-of-range numbers (scores and ratings -5, 1000, NaN; over-long text for the two
tasks without numbers).

Documented outcomes (crux_nb/models/repair.py, chat.py, retrieval/recipe.py):

* invalid output (wrong type, non-JSON, unknown ids, out-of-range values) -> exactly one repair call, then
  ``ValidationExhaustedError`` (code ``validation_exhausted``, ``attempts == max_attempts == 2`` calls) with
  content-free issues; scores and ratings are **not** clamped at the model boundary: the schema requires a
  finite 0..100 (upstream section 4.7), and the 0.000001..1 clamp applies only afterwards, to the hit score
  (``test_boundary_scores_are_accepted_and_clamped_into_hit_scores``);
* any other exception propagates unchanged with no repair; a hang is ``ModelError`` ``model_timeout``;
* inside a recipe the step's error is wrapped in ``RetrievalRunError`` (``__cause__`` the original) whose
  trace records the failed step and zero results.

Every case then checks that nothing was published: the in-memory state object is the one from before the
call, the saved folder's CURRENT generation and its files are unchanged (no new generation, no partial
folder, no lease left: every file byte-identical), for report writing (the one path that publishes by saving)
the reopened knowledge base equals the saved one (``assert_kb_equal``), and the community status and
generation are as before.
"""

from __future__ import annotations

import hashlib
import math
import shutil
import time
from pathlib import Path

import pytest

import crux_nb
from crux_nb.errors import ModelError, RetrievalRunError, ValidationExhaustedError
from crux_nb.models import ChatModel, OfflineModel
from crux_nb.models.chat_prompts import REPAIR_SYSTEM
from crux_nb.retrieval import global_search
from crux_nb import KnowledgeBase
from crux_nb import open as open_knowledge_base
from crux_nb.store.persist import current_generation
from crux_nb.testing import assert_kb_equal

from reliability_llm import Answer, LocalLLM

TEXTS = {
    f"team-{g}-{k}.md": f"# Note {k}\n\n{lead} works with {partner} on the {service}. {lead} reviewed the {service} plan "
                        f"with {partner} and {customer} on day {k}."
    for g, (lead, partner, service, customer) in enumerate([
        ("Priya Raman", "Sofia Lindqvist", "Ingest Gateway", "Northwind Traders"),
        ("Marcus Chen", "Daniel Kim", "Query Engine", "Contoso"),
        ("Hannah Okafor", "Nadia Haddad", "Billing Service", "Fabrikam"),
    ]) for k in range(4)
}
LATE = ("late.md", "# Late\n\nMarcus Chen wrote about the Query Engine with Daniel Kim.")
Q = "Who works on the Query Engine?"
GHOST_CHUNK = "chunk:ghost.md:c0000"
TASKS = ("extract", "write_report", "map_findings", "rate")


# ------------------------------------------------------------------ the faults
def _long_report(args):
    refs = [c["ref"] for c in args[0]["chunks"]] or [e for ch in args[0]["children"] for f in ch["findings"]
                                                    for e in f["evidence"]]
    return {"title": "T" * 121, "summary": "", "findings": [{"statement": "s", "evidence": refs[:1]}]}


def _long_extract(args):
    chunk = args[0][0]["id"]
    return {"entities": [{"name": "Ghost", "description": "d" * 2001}], "mentions": [{"chunk_id": chunk, "name": "Ghost"}],
            "related": []}


def _score(value):
    def fault(args):
        return {"findings": [{"statement": "s", "finding_ids": [args[1][0]["findings"][0]["id"]], "score": value}]}
    return fault


def _rating(value):
    def fault(args):
        return {"ratings": [{"community_id": args[1][0]["community_id"], "rating": value}]}
    return fault


UNKNOWN = {
    "extract": (lambda args: {"entities": [{"name": "Ghost"}], "mentions": [{"chunk_id": GHOST_CHUNK, "name": "Ghost"}],
                              "related": []}, {"path": "mentions.chunk_id", "code": "unknown_chunk_id"}),
    "write_report": (lambda args: {"title": "T", "summary": "", "findings": [{"statement": "s", "evidence": [GHOST_CHUNK]}]},
                     {"path": "findings.evidence", "code": "unknown_evidence_ref"}),
    "map_findings": (lambda args: {"findings": [{"statement": "s", "finding_ids": ["c-ghost:f1"], "score": 50}]},
                     {"path": "findings.finding_ids", "code": "unknown_finding_id"}),
    "rate": (lambda args: {"ratings": [{"community_id": "c-ghost", "rating": 80}]},
             {"path": "ratings.community_id", "code": "unknown_community_id"}),
}
OUT_OF_RANGE = {
    "extract": [("text_too_long", _long_extract, {"path": "entities.[0].description", "code": "too_big"})],
    "write_report": [("text_too_long", _long_report, {"path": "title", "code": "too_big"})],
    "map_findings": [(f"score_{v}", _score(v), {"path": "findings.[0].score", "code": c})
                     for v, c in ((-5, "too_small"), (1000, "too_big"), (math.nan, "not_finite"))],
    "rate": [(f"rating_{v}", _rating(v), {"path": "ratings.[0].rating", "code": c})
             for v, c in ((-5, "too_small"), (1000, "too_big"), (math.nan, "not_finite"))],
}


def _raise(args):
    raise RuntimeError("model exploded")


def _const(value):
    return lambda args: value


ROOT_TYPE = {"path": "", "code": "invalid_type"}
CASES = []  # (task, fault id, fault, expected)
for _task in TASKS:
    CASES += [
        (_task, "raises", _raise, ("raised", RuntimeError)),
        (_task, "hangs", "chat:hang", ("timeout", None)),
        (_task, "returns_list", _const(["not", "a", "dict"]), ("invalid", ROOT_TYPE)),
        (_task, "returns_str", _const("findings: none"), ("invalid", ROOT_TYPE)),
        (_task, "returns_none", _const(None), ("invalid", ROOT_TYPE)),
        (_task, "invalid_json", "chat:text", ("invalid", {"path": "", "code": "invalid_json"})),
        (_task, "unknown_ids", UNKNOWN[_task][0], ("invalid", UNKNOWN[_task][1])),
    ]
    CASES += [(_task, name, fault, ("invalid", issue)) for name, fault, issue in OUT_OF_RANGE[_task]]


class Faulty:
    """The offline model (same name and fingerprint, so caches and the strategy match), except that
    ``task`` goes to ``fault(args)``; ``calls`` records the ``repair`` argument of each call to it."""

    def __init__(self, task, fault):
        self.inner = OfflineModel()
        self.name, self.fingerprint = self.inner.name, self.inner.fingerprint
        self.task, self.fault, self.calls, self.seconds = task, fault, [], []

    def _run(self, task, args, repair):
        if task != self.task:
            return getattr(self.inner, task)(*args, repair=repair)
        self.calls.append(repair)
        started = time.monotonic()
        try:
            return self.fault(args, repair)
        finally:
            self.seconds.append(time.monotonic() - started)

    def extract(self, chunks, *, repair=None):
        return self._run("extract", (chunks,), repair)

    def write_report(self, community, *, repair=None):
        return self._run("write_report", (community,), repair)

    def map_findings(self, query, units, *, repair=None):
        return self._run("map_findings", (query, units), repair)

    def rate(self, query, reports, *, repair=None):
        return self._run("rate", (query, reports), repair)


# ------------------------------------------------------------------ fixtures
@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A saved knowledge base with entities, communities and reports (offline model); (path, reopened kb)."""
    kb = crux_nb.knowledge_base(id="faulty", communities=crux_nb.communities(model=OfflineModel()))
    for sid, text in TEXTS.items():
        kb.add_text(sid, text)
    kb.communities.prepare(progress=False)
    path = tmp_path_factory.mktemp("faulty") / "kb"
    kb.save(path)
    return path, open_knowledge_base(path)


def digest(path: Path) -> dict[str, str]:
    """Every file and folder below ``path`` with the SHA-256 of its bytes (folders: "")."""
    return {str(p.relative_to(path)): hashlib.sha256(p.read_bytes()).hexdigest() if p.is_file() else ""
            for p in sorted(path.rglob("*"))}


class Harness:
    """A copy of the saved template with ``model`` as the communities model, and the snapshot to compare.

    The copy is opened from the template's (immutable) state rather than re-read, which is what
    ``open_knowledge_base`` builds too; ``kb.path`` is the copy, so ``prepare()`` publishes there."""

    def __init__(self, template, tmp_path, model):
        src, self.saved = template
        self.path = tmp_path / "kb"
        shutil.copytree(src, self.path)
        saved = self.saved
        self.kb = KnowledgeBase(id=saved.id, namespace=saved.namespace, chunk_size=saved.chunk_size, state=saved.state)
        self.kb.path = self.path
        self.kb.published(saved.state, saved.base)  # a byte copy: the same generation the template was read from
        self.kb.configure_communities(crux_nb.communities(model=model))
        self.generation = current_generation(self.path)

    def snapshot(self):
        self.state = self.kb.state
        self.files = digest(self.path)
        self.status = self.kb.communities.status()
        self.community_generation = self.kb.communities.generation_id

    def assert_unchanged(self, *, reopen: bool):
        assert self.kb.state is self.state, "the failing call committed a change to the knowledge base"
        assert current_generation(self.path) == self.generation
        assert digest(self.path) == self.files, "files appeared, vanished or changed in the saved folder"
        if reopen:  # byte-identical files already imply this; done where the failing call would have saved
            assert_kb_equal(open_knowledge_base(self.path), self.saved)
        assert self.kb.communities.status() == self.status
        assert self.kb.communities.generation_id == self.community_generation


def run_task(h: Harness, task: str, model) -> object:
    """Drive ``task`` through its public entry point; returns what it returned (it should raise)."""
    kb = h.kb
    if task in ("extract", "write_report"):
        kb.add_text(*LATE)  # one new source: one extraction call; for reports, one leaf and its ancestors
        if task == "write_report":
            kb.extract_entities(OfflineModel())  # extraction is current, so prepare() only writes reports
    h.snapshot()
    if task == "extract":
        return kb.extract_entities(model, progress=False)
    if task == "write_report":
        assert h.status == "stale"
        return kb.communities.prepare(progress=False)
    step = global_search(model=model, scan="all", detail="detailed") if task == "map_findings" else \
        global_search(model=model, scan="adaptive", detail="detailed")
    return kb.recipe(steps=[step]).retrieve(Q)


PROMPT_IDS = {"extract": "extract:late.md:1", "write_report": "community:", "map_findings": "globalSearch:batch:1",
              "rate": "globalSearch:rate:1"}


@pytest.fixture
def llm():
    servers = []

    def start(answer: Answer) -> LocalLLM:
        server = LocalLLM(lambda payload: answer)
        servers.append(server)
        return server

    yield start
    for server in servers:
        server.close()


# ------------------------------------------------------------------ the matrix
@pytest.mark.parametrize("task,fault_id,fault,expected", [pytest.param(*c, id=f"{c[0]}-{c[1]}") for c in CASES])
def test_faulty_model(template, tmp_path, llm, task, fault_id, fault, expected):
    server = None
    if isinstance(fault, str):  # through ChatModel and a local server
        answer = Answer(content="{}", delay=30.0) if fault == "chat:hang" else Answer(content="Sure! {not json")
        server = llm(answer)
        timeout = 0.3 if fault == "chat:hang" else 30.0  # a loaded machine must not turn non-JSON into a timeout
        chat = ChatModel(base_url=server.base_url, model="faulty", api_key="sk-faulty-000000", timeout=timeout,
                         max_retries=0, backoff=0.0)
        model = Faulty(task, lambda args, repair: getattr(chat, task)(*args, repair=repair))
    else:
        model = Faulty(task, lambda args, repair, _f=fault: _f(args))
    h = Harness(template, tmp_path, model)

    with pytest.raises(Exception) as info:
        run_task(h, task, model)
    err = info.value
    if task in ("map_findings", "rate"):  # recipe steps: wrapped, with a trace of the failed step
        assert isinstance(err, RetrievalRunError) and err.code == "step_failed"
        assert err.trace.steps[-1].status == "error" and err.trace.result_count == 0
        cause = err.__cause__
    else:
        cause = err

    kind, detail = expected
    if kind == "raised":
        assert type(cause) is detail and str(cause) == "model exploded"  # unchanged
        assert model.calls == [None]  # no repair for exceptions
    elif kind == "timeout":
        assert isinstance(cause, ModelError) and not isinstance(cause, ValidationExhaustedError)
        assert cause.code == "model_timeout" and "no response within 0.3 s" in str(cause)
        assert model.calls == [None] and len(server) == 1
        assert model.seconds[0] < 10, "the timeout did not bound the call (the server sleeps 30 s)"
    else:
        assert isinstance(cause, ValidationExhaustedError), repr(cause)
        assert cause.code == "validation_exhausted" and (cause.attempts, cause.max_attempts) == (2, 2)
        assert cause.prompt_id.startswith(PROMPT_IDS[task])
        assert detail in list(cause.issues), cause.issues
        assert len(model.calls) == 2 and model.calls[0] is None  # the first call and exactly one repair
        assert detail in model.calls[1]  # the repair was told what was wrong
        if server is not None:
            assert len(server) == 2
            assert server.requests[1][2]["messages"][0]["content"] == REPAIR_SYSTEM[task]
        shown = str(err) + repr(err) + str(cause) + repr(cause.issues)
        assert "ghost" not in shown.lower() and "exploded" not in shown  # issues are content-free
    h.assert_unchanged(reopen=task == "write_report")


# ------------------------------------------------------------- controls
GOOD_AFTER_REPAIR = {
    "extract": _const(None),
    "write_report": _const("no report"),
    "map_findings": _score(1000),
    "rate": _rating(-5),
}


@pytest.mark.parametrize("task", TASKS)
def test_one_bad_answer_then_a_good_repair_succeeds(template, tmp_path, task):
    """The harness is not failing for its own reasons: one repair that answers well is enough."""
    inner = OfflineModel()

    def fault(args, repair):
        return GOOD_AFTER_REPAIR[task](args) if repair is None else getattr(inner, task)(*args, repair=None)

    model = Faulty(task, fault)
    h = Harness(template, tmp_path, model)
    out = run_task(h, task, model)
    assert len(model.calls) >= 2 and model.calls[0] is None and model.calls[1] is not None
    if task == "write_report":
        assert out.reports_written >= 1 and h.kb.communities.status() == "ready"
        assert current_generation(h.path) != h.generation  # published by saving
    elif task == "extract":
        assert out.sources_extracted == 1 and h.kb.state is not h.state
    else:
        assert out and all(0.000001 <= hit.score <= 1 for hit in out)


def test_boundary_scores_are_accepted_and_clamped_into_hit_scores(template, tmp_path):
    """0 and 100 are valid model scores (no repair); the hit score is score/100 clamped to 0.000001..1."""

    def fault(args, repair):
        units = args[1]
        ids = [f["id"] for u in units for f in u["findings"]]
        return {"findings": [{"statement": "top", "finding_ids": ids[:1], "score": 100},
                             {"statement": "bottom", "finding_ids": ids[1:2], "score": 0}]}

    model = Faulty("map_findings", fault)
    h = Harness(template, tmp_path, model)
    hits = run_task(h, "map_findings", model)
    assert model.calls == [None]
    assert [(hit.content, hit.score) for hit in hits] == [("top", 1.0), ("bottom", 0.000001)]


def test_communities_the_model_did_not_rate_are_recorded_as_skipped(template, tmp_path):
    """A rate answer may omit communities (the schema allows it); the adaptive trace must still list every
    community of the rated frontier (DESIGN 4.2), the omitted ones skipped without a rating, none descended into.
    (Before the fix they vanished from the trace.)"""
    answered: list[str] = []  # the one community the model rates: the first of the batch (best-first order)

    def rate_first(args, repair):
        answered.append(args[1][0]["community_id"])
        return {"ratings": [{"community_id": answered[-1], "rating": 90}]}

    model = Faulty("rate", rate_first)
    h = Harness(template, tmp_path, model)
    h.snapshot()
    # no budget and no budget fill: the first call rates the whole frontier (with a budget it rates what the
    # rating share allows and truncates the rest; the fill may then map an omitted one: other decisions)
    step = global_search(model=model, scan="adaptive", detail="detailed", budget=None, fallback="best")
    result = h.kb.recipe(steps=[step]).retrieve_with_trace(Q)
    adaptive = result.trace.steps[0].knowledge.adaptive
    comms = h.kb.communities.communities
    root = comms.loc[comms["parent_id"].isna(), "community_id"].iloc[0]
    children = set(comms.loc[comms["parent_id"] == root, "community_id"])
    assert len(children) >= 2 and model.calls == [None]
    rated = {r.community_id: r for r in adaptive.visited + adaptive.skipped if r.community_id != root}
    assert set(rated) == children
    first = answered[0]
    assert first in children
    assert (rated[first].rating, rated[first].decision) == (90.0, "visited")
    assert all((r.rating, r.decision) == (None, "skipped") for cid, r in rated.items() if cid != first)
    assert set(result.trace.steps[0].details["selected"]) <= {root, first}
    h.assert_unchanged(reopen=False)
