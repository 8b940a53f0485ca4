"""ChatModel end to end against a real llama.cpp server (SmolLM2-135M, toy quality).

The server comes from the ``llama_url`` fixture (``$CRUX_LLAMA_URL``, or started here,
or skipped — failed with ``CRUX_REQUIRE_SYSTEM=1``). A 135M model often writes JSON that
is valid but wrong for the task, so each task must either validate (possibly after the
one repair) or fail with ValidationExhaustedError after exactly one repair — and the call
log must show which happened.
"""

from __future__ import annotations

import pytest

from crux_nb._hashing import canonical_json
from crux_nb.errors import ValidationExhaustedError
from crux_nb.models import CallLog, CassetteModel, ChatModel, call_task, validate_output

pytestmark = pytest.mark.server

CHUNKS = [
    {"id": "chunk:plan.md:c0000", "text": "Priya Raman owns the Beacon 3.0 launch plan."},
    {"id": "chunk:plan.md:c0001", "text": "Northwind Traders asked Priya Raman for an earlier launch."},
]
COMMUNITY = {"community_id": "c1", "level": 0, "entities": [{"name": "Priya Raman"}, {"name": "Beacon 3.0"}],
             "chunks": [{"ref": c["id"], "text": c["text"]} for c in CHUNKS], "children": []}
UNITS = [{"community_id": "c1", "level": 0, "title": "Beacon launch", "summary": "Priya owns the launch plan.",
          "findings": [{"id": "c1:f1", "statement": "Priya Raman owns the Beacon 3.0 launch plan."},
                       {"id": "c1:f2", "statement": "Northwind Traders asked for an earlier launch."}]}]
REPORTS = [{"community_id": "c1", "title": "Beacon launch", "summary": "Priya owns the launch plan.", "findings": []},
           {"community_id": "c2", "title": "Office plants", "summary": "Plants are watered on Fridays.", "findings": []}]
TASKS = {
    "extract": (CHUNKS,),
    "write_report": (COMMUNITY,),
    "map_findings": ("Who owns the launch plan?", UNITS),
    "rate": ("Who owns the launch plan?", REPORTS),
}


@pytest.fixture(scope="module")
def chat(llama_url):
    return ChatModel(base_url=llama_url, model="smollm2", max_tokens=160, timeout=240, max_retries=1, backoff=0.5)


@pytest.mark.parametrize("task", list(TASKS))
def test_every_task_end_to_end(chat, task):
    log = CallLog()
    args = TASKS[task]
    try:
        out = call_task(chat, task, *args, prompt_id=f"llama:{task}", log=log)
    except ValidationExhaustedError as exc:
        records = log.records
        assert len(records) == 2, records
        assert [(r.repaired, r.ok) for r in records] == [(False, False), (True, False)]
        assert exc.attempts == 2 and exc.issues  # calls made: the call and its repair
        print(f"{task}: repair exercised and exhausted: {list(exc.issues)} {log!r}")
        return
    records = log.records
    assert records[-1].ok and len(records) in (1, 2)
    if len(records) == 2:
        assert [(r.repaired, r.ok) for r in records] == [(False, False), (True, True)]
    assert validate_output(task, out)[1] == []
    assert all(r.tokens_in and r.tokens_out for r in records)  # llama.cpp reports usage
    print(f"{task}: {'repaired' if len(records) == 2 else 'valid first time'} {log!r}: {canonical_json(out)[:200]}")


def test_cassette_records_the_real_server_and_replays_offline(chat, tmp_path):
    path = tmp_path / "llama.jsonl"
    recorder = CassetteModel(inner=chat, path=path, mode="record")
    try:
        recorded = call_task(recorder, "rate", *TASKS["rate"], prompt_id="rate", issued_ids=None)
    except ValidationExhaustedError:
        recorded = "exhausted"
    replayer = CassetteModel(path=path)
    assert replayer.fingerprint == chat.fingerprint
    try:
        replayed = call_task(replayer, "rate", *TASKS["rate"], prompt_id="rate", issued_ids=None)
    except ValidationExhaustedError:
        replayed = "exhausted"
    assert canonical_json(replayed) == canonical_json(recorded)
    assert replayer.inner_calls == 0 and replayer.hits >= 1
