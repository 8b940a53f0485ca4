"""CassetteModel: record once, replay offline byte for byte."""

from __future__ import annotations

import json

import pytest

from crux_nb._hashing import canonical_json
from crux_nb.errors import ParameterError, ValidationExhaustedError
from crux_nb.models import (
    CallLog,
    CassetteMissError,
    CassetteModel,
    KnowledgeModel,
    OfflineModel,
    call_task,
    report_usage,
)

CHUNKS = [
    {"id": "chunk:a.md:c0000", "text": "Priya Raman owns the Beacon 3.0 launch plan. The Ingest Gateway team helps."},
    {"id": "chunk:a.md:c0001", "text": "Northwind Traders asked Priya Raman for an earlier launch of Beacon 3.0."},
]
COMMUNITY = {"community_id": "leaf", "level": 0, "entities": [{"name": "Priya Raman"}],
             "chunks": [{"ref": c["id"], "text": c["text"]} for c in CHUNKS], "children": []}
UNITS = [{"community_id": "leaf", "level": 0, "title": "T", "summary": "",
          "findings": [{"id": "leaf:f1", "statement": "Priya Raman owns the Beacon 3.0 launch plan."}]}]
REPORTS = [{"community_id": "leaf", "title": "Launch", "summary": "Priya Raman owns the launch plan.", "findings": []}]


class Counting:
    """Wraps a model, counts calls and reports fake token usage."""

    def __init__(self, inner, secret=None):
        self.inner, self.calls, self.secret = inner, 0, secret
        self.name, self.fingerprint = inner.name, inner.fingerprint

    def _call(self, method, *args, repair=None):
        self.calls += 1
        report_usage(tokens_in=100, tokens_out=10)
        return getattr(self.inner, method)(*args, repair=repair)

    def extract(self, chunks, *, repair=None):
        return self._call("extract", chunks, repair=repair)

    def write_report(self, community, *, repair=None):
        return self._call("write_report", community, repair=repair)

    def map_findings(self, query, units, *, repair=None):
        return self._call("map_findings", query, units, repair=repair)

    def rate(self, query, reports, *, repair=None):
        return self._call("rate", query, reports, repair=repair)


def run_all(model, log=None):
    return [
        call_task(model, "extract", CHUNKS, prompt_id="extract:1", log=log),
        call_task(model, "write_report", COMMUNITY, prompt_id="community:leaf", log=log),
        call_task(model, "map_findings", "launch plan owner", UNITS, prompt_id="globalSearch:batch:1", log=log),
        call_task(model, "rate", "launch plan owner", REPORTS, prompt_id="rate:1", log=log),
    ]


def test_record_then_replay_is_identical_with_zero_inner_calls(tmp_path):
    path = tmp_path / "cassette.jsonl"
    inner = Counting(OfflineModel())
    recorder = CassetteModel(inner=inner, path=path, mode="record")
    assert isinstance(recorder, KnowledgeModel)
    assert (recorder.name, recorder.fingerprint) == ("offline", OfflineModel().fingerprint)
    recorded_log = CallLog()
    recorded = run_all(recorder, recorded_log)
    assert inner.calls == 4 and len(recorder) == 4

    replayer = CassetteModel(path=path)  # no inner model: replay only
    assert (replayer.name, replayer.fingerprint) == (recorder.name, recorder.fingerprint)
    replay_log = CallLog()
    replayed = run_all(replayer, replay_log)
    assert canonical_json(replayed) == canonical_json(recorded)
    assert inner.calls == 4 and replayer.hits == 4 and replayer.inner_calls == 0
    assert [(r.tokens_in, r.tokens_out) for r in replay_log] == [(100, 10)] * 4 == [(r.tokens_in, r.tokens_out) for r in recorded_log]
    assert repr(replay_log) == repr(recorded_log)


def test_replay_miss_names_task_and_key(tmp_path):
    path = tmp_path / "c.jsonl"
    recorder = CassetteModel(inner=OfflineModel(), path=path, mode="record")
    recorder.rate("q", REPORTS)
    replayer = CassetteModel(path=path)
    with pytest.raises(CassetteMissError) as info:
        replayer.rate("another query", REPORTS)
    err = info.value
    assert err.code == "cassette_miss" and err.task == "rate"
    assert err.key == replayer.key("rate", ("another query", REPORTS))
    assert "'rate'" in str(err) and err.key in str(err) and "mode='record'" in str(err)
    # the miss is not a validation failure: call_task does not repair it
    with pytest.raises(CassetteMissError):
        call_task(replayer, "rate", "another query", REPORTS, prompt_id="p")
    assert replayer.misses == 2


def test_file_is_deterministic_and_holds_no_secrets(tmp_path):
    secret = "sk-live-DO-NOT-STORE-424242"
    a, b = tmp_path / "a.jsonl", tmp_path / "b.jsonl"
    first = CassetteModel(inner=Counting(OfflineModel(), secret), path=a, mode="record")
    run_all(first)
    second = CassetteModel(inner=Counting(OfflineModel(), secret), path=b, mode="record")
    for call in reversed([lambda m: m.extract(CHUNKS), lambda m: m.write_report(COMMUNITY),
                          lambda m: m.map_findings("launch plan owner", UNITS), lambda m: m.rate("launch plan owner", REPORTS)]):
        call(second)
    assert a.read_bytes() == b.read_bytes()
    text = a.read_text()
    assert secret not in text
    lines = text.splitlines()
    records = [json.loads(line) for line in lines]
    assert [r["key"] for r in records] == sorted(r["key"] for r in records)
    assert all(line == canonical_json(r) for line, r in zip(lines, records))
    # inputs are hashed, not stored; nothing else is kept
    assert all(set(r) == {"key", "task", "model", "fingerprint", "repair", "output", "usage"} for r in records)


def test_auto_mode_records_misses_and_replays_hits(tmp_path):
    inner = Counting(OfflineModel())
    cassette = CassetteModel(inner=inner, path=tmp_path / "auto.jsonl", mode="auto")
    first = cassette.rate("launch", REPORTS)
    again = cassette.rate("launch", REPORTS)
    assert first == again and inner.calls == 1 and cassette.hits == 1
    cassette.rate("other", REPORTS)
    assert inner.calls == 2 and len(cassette) == 2
    # reopening keeps the recordings
    assert len(CassetteModel(inner=inner, path=tmp_path / "auto.jsonl", mode="auto")) == 2


def test_repair_flow_replays_including_validation_errors(tmp_path):
    class Flaky:
        name, fingerprint = "flaky", "fp-flaky"

        def __init__(self):
            self.calls = 0

        def rate(self, query, reports, *, repair=None):
            self.calls += 1
            if repair is None:
                raise ValidationExhaustedError("chat:rate", [{"path": "", "code": "invalid_json"}])
            return {"ratings": [{"community_id": "leaf", "rating": 70}]}

        extract = write_report = map_findings = rate

    flaky = Flaky()
    path = tmp_path / "flaky.jsonl"
    log = CallLog()
    out = call_task(CassetteModel(inner=flaky, path=path, mode="record"), "rate", "q", REPORTS, prompt_id="p", log=log)
    replay_log = CallLog()
    again = call_task(CassetteModel(path=path), "rate", "q", REPORTS, prompt_id="p", log=replay_log)
    assert out == again == {"ratings": [{"community_id": "leaf", "rating": 70}]}
    assert flaky.calls == 2
    assert [(r.repaired, r.ok) for r in replay_log] == [(r.repaired, r.ok) for r in log] == [(False, False), (True, True)]


def test_constructor_errors(tmp_path):
    with pytest.raises(ParameterError, match="mode"):
        CassetteModel(path=tmp_path / "x.jsonl", mode="rewind")
    with pytest.raises(ParameterError, match="inner"):
        CassetteModel(path=tmp_path / "x.jsonl", mode="record")
    with pytest.raises(ParameterError, match="recordings"):
        CassetteModel(path=tmp_path / "missing.jsonl")
