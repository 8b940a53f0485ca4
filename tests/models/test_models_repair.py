"""The one-repair rule (call_task), the schemas, content-free issues and the call log."""

from __future__ import annotations

import math
import threading

import pandas as pd
import pytest

from crux_nb.errors import ModelError, ParameterError, ValidationExhaustedError
from crux_nb.models import (
    CallLog,
    CallRecord,
    call_task,
    format_path,
    repair_lines,
    report_usage,
    validate_output,
)

UNITS = [
    {"community_id": "c1", "level": 0, "title": "T", "summary": "S",
     "findings": [{"id": "c1:f1", "statement": "one"}, {"id": "c1:f2", "statement": "two"}]},
]
GOOD_MAP = {"findings": [{"statement": "one", "finding_ids": ["c1:f1"], "score": 80}]}
SECRET_TEXT = "Confidential: Priya's salary"


class Scripted:
    """A model that returns (or raises) scripted outputs and records the ``repair`` it got."""

    name = "scripted"
    fingerprint = "fp-scripted"

    def __init__(self, *outputs):
        self.outputs = list(outputs)
        self.repairs = []

    def _next(self, repair):
        self.repairs.append(repair)
        out = self.outputs.pop(0)
        if isinstance(out, BaseException):
            raise out
        return out

    def extract(self, chunks, *, repair=None):
        return self._next(repair)

    def write_report(self, community, *, repair=None):
        return self._next(repair)

    def map_findings(self, query, units, *, repair=None):
        report_usage(tokens_in=11, tokens_out=7)
        return self._next(repair)

    def rate(self, query, reports, *, repair=None):
        return self._next(repair)


def test_valid_first_try_is_one_call():
    model, log = Scripted(GOOD_MAP), CallLog()
    out = call_task(model, "map_findings", "q", UNITS, prompt_id="globalSearch:batch:1", log=log)
    assert out == GOOD_MAP
    assert model.repairs == [None]
    (record,) = log.records
    assert (record.task, record.prompt_id, record.model, record.repaired, record.ok) == (
        "map_findings", "globalSearch:batch:1", "scripted", False, True)
    assert (record.tokens_in, record.tokens_out) == (11, 7)
    assert record.input_chars > 0 and record.output_chars > 0


def test_invalid_then_valid_is_two_calls_with_repair():
    bad = {"findings": [{"statement": "one", "finding_ids": ["c1:f1"], "score": 250}]}
    model, log = Scripted(bad, GOOD_MAP), CallLog()
    out = call_task(model, "map_findings", "q", UNITS, prompt_id="p", log=log)
    assert out == GOOD_MAP
    assert model.repairs == [None, [{"path": "findings.[0].score", "code": "too_big"}]]
    assert [(r.repaired, r.ok) for r in log.records] == [(False, False), (True, True)]


def test_invalid_twice_raises_after_exactly_two_calls():
    bad = {"findings": [{"statement": SECRET_TEXT, "finding_ids": [], "score": "high"}]}
    model, log = Scripted(bad, bad, GOOD_MAP), CallLog()
    with pytest.raises(ValidationExhaustedError) as info:
        call_task(model, "map_findings", "q", UNITS, prompt_id="globalSearch:batch:3", log=log)
    err = info.value
    assert len(model.repairs) == 2 and len(model.outputs) == 1
    assert (err.attempts, err.max_attempts, err.prompt_id) == (2, 2, "globalSearch:batch:3")  # two calls made
    assert err.code == "validation_exhausted"
    assert ('Validation failed after 2 calls (the call and its one repair) for prompt "globalSearch:batch:3" '
            "(findings.[0].finding_ids: too_small, findings.[0].score: invalid_type).") in str(err)
    assert "stronger model" in err.hint  # complete JSON that broke the schema twice
    assert list(err.issues) == [
        {"path": "findings.[0].finding_ids", "code": "too_small"},
        {"path": "findings.[0].score", "code": "invalid_type"},
    ]
    assert SECRET_TEXT not in repr(err) + str(err) + repr(err.issues) + repr(log) + log.to_frame().to_string()
    assert [(r.repaired, r.ok) for r in log.records] == [(False, False), (True, False)]


def test_unknown_finding_id_is_a_task_issue():
    bad = {"findings": [{"statement": "x", "finding_ids": ["c1:f1", "c9:f9"], "score": 5}]}
    model = Scripted(bad, bad)
    with pytest.raises(ValidationExhaustedError) as info:
        call_task(model, "map_findings", "q", UNITS, prompt_id="p")
    assert list(info.value.issues) == [{"path": "findings.finding_ids", "code": "unknown_finding_id"}]
    assert model.repairs[1] == [{"path": "findings.finding_ids", "code": "unknown_finding_id"}]
    # membership checks can be switched off
    assert call_task(Scripted(bad), "map_findings", "q", UNITS, prompt_id="p", issued_ids=None)["findings"][0]["finding_ids"] == ["c1:f1", "c9:f9"]


def test_other_exceptions_propagate_unchanged_and_are_logged():
    boom = ModelError("transport down", code="model_connection_error")
    model, log = Scripted(boom, GOOD_MAP), CallLog()
    with pytest.raises(ModelError) as info:
        call_task(model, "map_findings", "q", UNITS, prompt_id="p", log=log)
    assert info.value is boom and len(model.repairs) == 1
    assert [(r.ok, r.error) for r in log.records] == [(False, "model_connection_error")]
    with pytest.raises(KeyError):
        call_task(Scripted(KeyError("x")), "rate", "q", [], prompt_id="p")


def test_validation_exhausted_from_the_model_gets_one_repair():
    raised = ValidationExhaustedError("chat:map_findings", [{"path": "", "code": "invalid_json"}])
    model = Scripted(raised, GOOD_MAP)
    assert call_task(model, "map_findings", "q", UNITS, prompt_id="p") == GOOD_MAP
    assert model.repairs == [None, [{"path": "", "code": "invalid_json"}]]
    with pytest.raises(ValidationExhaustedError) as info:
        call_task(Scripted(raised, raised), "map_findings", "q", UNITS, prompt_id="mine")
    assert info.value.prompt_id == "mine" and list(info.value.issues) == [{"path": "", "code": "invalid_json"}]


def test_call_task_checks_its_arguments():
    with pytest.raises(ParameterError, match="prompt_id"):
        call_task(Scripted(GOOD_MAP), "map_findings", "q", UNITS, prompt_id="")
    with pytest.raises(ParameterError, match="model"):
        call_task(object(), "rate", "q", [], prompt_id="p")
    with pytest.raises(ParameterError, match="task"):
        call_task(Scripted(GOOD_MAP), "summarise", "q", prompt_id="p")
    with pytest.raises(ParameterError, match="args"):
        call_task(Scripted(GOOD_MAP), "map_findings", "q", prompt_id="p")


# ------------------------------------------------------------------- schemas
def issues(task, output, issued=None):
    return validate_output(task, output, issued_ids=issued)[1]


def test_report_schema_is_strict():
    good = {"title": "T", "summary": "", "findings": [{"id": "f1", "statement": "s", "evidence": ["chunk:a:1"]}]}
    assert issues("write_report", good) == []
    assert validate_output("write_report", {"title": "T", "summary": "s"})[0] == {"title": "T", "summary": "s", "findings": []}
    assert issues("write_report", {"title": "", "summary": "x" * 2001}) == [
        {"path": "title", "code": "too_small"}, {"path": "summary", "code": "too_big"}]
    assert issues("write_report", {"title": "t" * 121, "summary": ""}) == [{"path": "title", "code": "too_big"}]
    bad = {"title": "T", "summary": "", "extra": 1, "findings": [{"statement": "s" * 501, "evidence": [], "Not ok!": 2}]}
    assert issues("write_report", bad) == [
        {"path": "extra", "code": "unrecognized_keys"},
        {"path": "findings.[0].*", "code": "unrecognized_keys"},
        {"path": "findings.[0].statement", "code": "too_big"},
        {"path": "findings.[0].evidence", "code": "too_small"},
    ]
    assert issues("write_report", good, issued=["chunk:b:2"]) == [{"path": "findings.evidence", "code": "unknown_evidence_ref"}]
    dup = {"title": "T", "summary": "", "findings": [{"id": "f", "statement": "a", "evidence": ["r"]}] * 2}
    assert issues("write_report", dup) == [{"path": "findings.id", "code": "duplicate_finding_id"}]
    assert issues("write_report", ["not", "an", "object"]) == [{"path": "", "code": "invalid_type"}]


def test_map_schema_numbers_and_extras():
    ok = {"findings": [{"statement": "s", "finding_ids": ["a"], "score": 0, "why": "ignored"}], "note": 1}
    assert validate_output("map_findings", ok)[0] == {"findings": [{"statement": "s", "finding_ids": ["a"], "score": 0}]}
    for score, code in ((math.nan, "not_finite"), (math.inf, "not_finite"), (-1, "too_small"), (100.5, "too_big"), (True, "invalid_type")):
        out = {"findings": [{"statement": "s", "finding_ids": ["a"], "score": score}]}
        assert issues("map_findings", out) == [{"path": "findings.[0].score", "code": code}], score
    assert issues("map_findings", {"findings": [{"statement": " ", "finding_ids": [""], "score": 1}]}) == [
        {"path": "findings.[0].statement", "code": "too_small"}, {"path": "findings.[0].finding_ids.[0]", "code": "too_small"}]
    assert issues("map_findings", {}) == [{"path": "findings", "code": "required"}]


def test_rate_and_extract_membership():
    assert issues("rate", {"ratings": [{"community_id": "c1", "rating": 50}]}, ["c1"]) == []
    assert issues("rate", {"ratings": [{"community_id": "zz", "rating": 50}]}, ["c1"]) == [
        {"path": "ratings.community_id", "code": "unknown_community_id"}]
    out = {"entities": [{"name": "A"}], "mentions": [{"chunk_id": "c9", "name": "A"}], "related": []}
    assert issues("extract", out, ["c1"]) == [{"path": "mentions.chunk_id", "code": "unknown_chunk_id"}]
    out = {"entities": [{"name": ""}], "mentions": [], "related": [{"from": "A", "to": "B", "chunk_ids": ["c9"]}]}
    assert issues("extract", out, ["c1"]) == [{"path": "entities.[0].name", "code": "too_small"}]


def test_paths_are_content_free():
    assert format_path(["findings", 0, "score"]) == "findings.[0].score"
    assert format_path(["a b", "ok_key", 3, "x:y", "é"]) == "*.ok_key.[3].*.*"
    assert format_path([]) == ""
    assert repair_lines([{"path": "", "code": "invalid_json"}, {"path": "findings.[0]", "code": "too_big"}]) == (
        "(root): invalid_json\nfindings.[0]: too_big")
    assert repair_lines([]) == "(root): invalid"


# ------------------------------------------------------------------ call log
def test_call_log_frame_repr_and_thread_safety():
    log = CallLog()

    def worker(i):
        for j in range(50):
            log.append(CallRecord(task="rate", prompt_id=f"p{i}", model="m", input_chars=j, output_chars=1,
                                  duration_ms=float(i * j), tokens_in=None if j % 2 else 3))

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(log) == 400
    frame = log.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == 400
    assert list(frame.columns) == ["task", "prompt_id", "model", "input_chars", "output_chars", "tokens_in",
                                   "tokens_out", "duration_ms", "repaired", "ok", "error"]
    assert str(frame["tokens_in"].dtype) == "Int64" and frame["tokens_in"].isna().sum() == 200
    assert repr(log) == ("CallLog(calls=400, repaired=0, failed=0, input_chars=9800, output_chars=400, "
                         "tokens_in=600, tokens_out=None)")
    record = CallRecord(task="rate", prompt_id="p", model="m", input_chars=1, output_chars=2, duration_ms=123.4)
    assert "duration" not in repr(record) and "123.4" not in repr(record)
    assert CallLog().to_frame().empty
