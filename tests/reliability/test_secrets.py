"""The API key never leaves ChatModel's request header (issue 9), end to end.

tests/models/test_models_chat_http.py already checks the model's own repr/str/fingerprint, the errors of
single ``call_task`` calls, the call log, caplog and a cassette around single calls. This suite covers the
rest: the whole pipeline through a ``ChatModel`` (behind a recording ``CassetteModel``) against a local
``http.server`` -- extraction, community reports, adaptive and scan-all global search, with repairs, retries
and failing calls (401 and 500 whose bodies echo the key, a hang, non-JSON twice) at every entry point --
and then scans everything a user or a log could see:

* repr / str / ``_repr_html_`` of the model, cassette, knowledge base, communities, reports, recipe, results,
  hits and traces, ``to_frame()`` of hits, traces and call logs, the widgets' static HTML, every KB frame;
* every exception: str, repr, hint, attributes, ``traceback.format_exception`` (with causes) and the
  traceback with local variables (what ``pytest --showlocals`` and IPython's verbose mode print);
* captured logging (DEBUG, all loggers), warnings, stdout/stderr;
* the bytes of the saved knowledge base folder and of the cassette file, and the request bodies sent;
* the stored outputs of every notebook in ``notebooks/``.

The key is distinctive, so any fragment found is a leak: the full key, its random tail and ``SECRET``.
"""

from __future__ import annotations

import json
import logging
import os
import re
import traceback
import warnings
from collections import deque
from pathlib import Path

import pytest

import crux_nb
from crux_nb.errors import ModelError, RetrievalRunError, ValidationExhaustedError
from crux_nb.models import CassetteModel, ChatModel
from crux_nb.retrieval import global_search
from crux_nb import open as open_knowledge_base

from reliability_llm import Answer, LocalLLM, canned_answer

ROOT = Path(__file__).resolve().parents[2]
KEY = "sk-crux-SECRET-7f3a9c2e5b1d4860aa"
FRAGMENTS = (KEY, "7f3a9c2e5b1d4860aa", "SECRET")
Q = "Who works on the Query Engine?"
DOCS = {
    f"team-{g}-{k}.md": f"# Note {k}\n\n{lead} works with {partner} on the {service}. {lead} reviewed the {service} "
                        f"plan with {partner} on day {k}."
    for g, (lead, partner, service) in enumerate([
        ("Priya Raman", "Sofia Lindqvist", "Ingest Gateway"),
        ("Marcus Chen", "Daniel Kim", "Query Engine"),
        ("Hannah Okafor", "Nadia Haddad", "Billing Service"),
    ]) for k in range(2)
}


class Server:
    """Valid canned answers, unless a scripted fault is queued for the next request(s)."""

    def __init__(self):
        self.faults: deque[Answer] = deque()
        self.llm = LocalLLM(self._respond)

    def _respond(self, payload):
        if self.faults:
            return self.faults.popleft()
        return Answer(content=json.dumps(canned_answer(payload)))

    def fail_next(self, *answers: Answer) -> None:
        self.faults.extend(answers)


@pytest.fixture
def server():
    s = Server()
    yield s
    s.llm.close()


def echo(status: int) -> Answer:
    return Answer(status=status, body={"error": {"message": f"Incorrect API key provided: {KEY}", "key": KEY}})


def caught(fn):
    """Run ``fn``; return the exception it raised (it must raise)."""
    try:
        fn()
    except Exception as exc:  # noqa: BLE001 - any failure is what we want to inspect
        return exc
    raise AssertionError("expected the call to fail")


def exception_texts(exc: BaseException) -> list[str]:
    texts = [str(exc), repr(exc), "".join(traceback.format_exception(exc)),
             # the innermost frames with their local variables (outer frames hold the knowledge base's frames,
             # whose reprs are slow and scanned below anyway)
             "".join(traceback.TracebackException.from_exception(exc, capture_locals=True, limit=-10).format())]
    seen = exc
    while seen is not None:
        texts += [str(getattr(seen, "hint", "")), repr(vars(seen)) if hasattr(seen, "__dict__") else "",
                  repr(getattr(seen, "issues", ""))]
        trace = getattr(seen, "trace", None)
        if trace is not None:
            texts += [repr(trace), trace._repr_html_(), trace.to_frame().to_string()]
        seen = seen.__cause__ or seen.__context__
    return texts


def leaks(texts) -> list[str]:
    """Each fragment of the key found, with some context."""
    found = []
    for text in texts:
        if isinstance(text, bytes):
            text = text.decode("utf-8", "replace")
        for fragment in FRAGMENTS:
            at = text.find(fragment)
            if at >= 0:
                found.append(f"{fragment!r} in ...{text[max(0, at - 120):at + 60]!r}...")
    return found


def test_the_key_never_leaves_the_authorization_header(server, tmp_path, caplog, capsys):
    caplog.set_level(logging.DEBUG)
    for name in list(logging.root.manager.loggerDict):  # every known logger at DEBUG (restored afterwards)
        caplog.set_level(logging.DEBUG, logger=name)
    seen: list = []
    with warnings.catch_warnings(record=True) as caught_warnings:
        warnings.simplefilter("always")
        chat = ChatModel(base_url=server.llm.base_url, model="canned-llm", api_key=KEY, timeout=10, max_retries=1,
                         backoff=0.0)
        hasty = ChatModel(base_url=server.llm.base_url, model="canned-llm", api_key=KEY, timeout=0.3, max_retries=0)
        cassette = CassetteModel(inner=chat, path=tmp_path / "calls.jsonl", mode="record")
        kb = crux_nb.knowledge_base(id="secrets", communities=crux_nb.communities(model=cassette))
        for sid, text in DOCS.items():
            kb.add_text(sid, text, metadata={"team": "aurora"})

        # extraction: the first answer is not JSON (one repair), a 500 echoing the key is retried
        server.fail_next(Answer(content="Sure! not JSON"), echo(500))
        extraction = kb.extract_entities(cassette, progress=False)
        assert extraction.sources_extracted == len(DOCS) and not kb.entities.empty
        # reports: a 500 first (retried), then valid reports
        server.fail_next(echo(503))
        prepared = kb.communities.prepare(progress=False)
        assert prepared.reports_written >= 1 and kb.communities.status() == "ready"
        saved = tmp_path / "kb"
        kb.save(saved)
        adaptive = kb.recipe(steps=[global_search(model=cassette, scan="adaptive", detail="detailed")])
        result = adaptive.retrieve_with_trace(Q)
        assert result.hits and result.trace.steps[0].knowledge.adaptive.rating_calls >= 1
        scan_all = kb.recipe(steps=[global_search(model=cassette, scan="all", detail="detailed")])
        result_all = scan_all.retrieve_with_trace(Q)

        # failing calls at every entry point
        errors = []
        server.fail_next(echo(401))
        errors.append(caught(lambda: scan_all.retrieve(Q)))  # RetrievalRunError <- ModelError 401
        server.fail_next(echo(500), echo(500))
        errors.append(caught(lambda: adaptive.retrieve(Q)))  # 500 twice: retries exhausted
        server.fail_next(Answer(content="nope"), Answer(content="still nope"))
        errors.append(caught(lambda: scan_all.retrieve(Q)))  # ValidationExhaustedError
        server.fail_next(Answer(content="{}", delay=3.0))
        errors.append(caught(lambda: kb.recipe(steps=[global_search(model=hasty, detail="detailed")]).retrieve(Q)))
        kb.add_text("late.md", "# Late\n\nMarcus Chen added a note about the Query Engine.")
        server.fail_next(echo(403))
        errors.append(caught(lambda: kb.extract_entities(cassette, progress=False)))  # ModelError, unwrapped
        server.fail_next(*[echo(500)] * 2)
        errors.append(caught(lambda: kb.communities.prepare(progress=False)))  # extraction inside prepare
        kb.extract_entities(cassette, progress=False)
        server.fail_next(echo(401))
        errors.append(caught(lambda: kb.communities.prepare(progress=False)))  # a report call
        kinds = [(type(e).__name__, getattr(e.__cause__, "code", None) or getattr(e, "code", None)) for e in errors]
        assert kinds == [("RetrievalRunError", "model_http_error"), ("RetrievalRunError", "model_http_error"),
                         ("RetrievalRunError", "validation_exhausted"), ("RetrievalRunError", "model_timeout"),
                         ("ModelError", "model_http_error"), ("ModelError", "model_http_error"),
                         ("ModelError", "model_http_error")]
        assert any(isinstance(e, RetrievalRunError) and isinstance(e.__cause__, ValidationExhaustedError) for e in errors)
        assert all(isinstance(e, (ModelError, RetrievalRunError)) for e in errors)
        for exc in errors:
            seen += exception_texts(exc)

        # everything shown or stored
        from crux_nb.widgets import CommunityExplorer, CoverageView

        reports = kb.communities.reports().reports
        trace = result.trace
        seen += [repr(chat), str(chat), repr(hasty), repr(cassette), repr(kb), kb._repr_html_(),
                 repr(kb.communities), kb.communities._repr_html_(), repr(kb.communities_config),
                 repr(extraction), repr(prepared), repr(adaptive), adaptive._repr_html_(), repr(scan_all),
                 repr(result), result._repr_html_(), repr(result_all), result_all._repr_html_(),
                 repr(result.hits), result.hits.to_frame().to_string(), repr(trace), trace._repr_html_(),
                 trace.to_frame().to_string(), repr(trace.steps[0].knowledge), repr(trace.steps[0].details)]
        seen += [repr(r) + r._repr_html_() for r in reports]
        for log in (extraction.call_log, prepared.call_log, trace.steps[0].knowledge.calls,
                    result_all.trace.steps[0].knowledge.calls):
            seen += [repr(log), log.to_frame().to_csv(), repr(log.summary())]
        seen += [CoverageView(result, kb=kb).to_html(), CommunityExplorer(kb.communities).to_html()]
        seen += [frame.to_csv() for frame in kb.frames().values()]
        seen += [kb.state.frame(t).to_csv() for t in ("extractions", "communities", "reports", "report_findings",
                                                       "community_generations")]
        seen += [p.read_bytes() for p in saved.rglob("*") if p.is_file()]
        seen += [repr(open_knowledge_base(saved))]
        seen.append((tmp_path / "calls.jsonl").read_bytes())
        seen += [json.dumps(payload) for _, _, payload in server.llm.requests]  # what was sent besides the header
    out, err = capsys.readouterr()
    seen += [caplog.text, out, err] + [str(w.message) for w in caught_warnings]

    found = leaks(seen)
    assert not found, "\n".join(found)
    # the key was really used, and only in the header
    auth = {headers.get("Authorization") for _, headers, _ in server.llm.requests}
    assert auth == {f"Bearer {KEY}"} and len(server.llm.requests) >= 15


KEYLIKE = re.compile(r"\b(?:sk|pk|rk)-[A-Za-z0-9_\-]{8,}|Bearer\s+[A-Za-z0-9._\-]{8,}|Authorization['\"]?\s*:", re.I)
KEY_LITERAL = re.compile(r"api[_-]?key\s*[=:]\s*['\"]([^'\"]+)['\"]", re.I)


@pytest.mark.parametrize("notebook", sorted(p.name for p in (ROOT / "notebooks").glob("*.ipynb")))
def test_notebook_outputs_hold_no_key(notebook):
    """The committed notebooks (sources, outputs, metadata) hold no key-like value and no key literal."""
    text = (ROOT / "notebooks" / notebook).read_text(encoding="utf-8")
    nb = json.loads(text)
    outputs = json.dumps([c.get("outputs", []) for c in nb["cells"]])
    assert not KEYLIKE.search(text), KEYLIKE.search(text).group(0)
    assert not KEY_LITERAL.search(text), KEY_LITERAL.search(text).group(0)
    for var in ("CRUX_API_KEY", "OPENAI_API_KEY"):
        value = os.environ.get(var)
        if value:
            assert value not in text, f"the value of ${var} is stored in {notebook}"
    assert "authorization" not in outputs.lower() and "bearer " not in outputs.lower()
