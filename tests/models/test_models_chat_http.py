"""ChatModel against a real local HTTP server (http.server in a thread): retries, errors, secrets."""

from __future__ import annotations

import json
import logging
import pickle
import time

import pytest

from crux_nb.errors import ModelError, ParameterError, ValidationExhaustedError
from crux_nb.models import CallLog, CassetteModel, ChatModel, call_task

KEY = "sk-test-SECRET-0123456789abcdef"
UNITS = [{"community_id": "c1", "level": 0, "title": "T", "summary": "S",
          "findings": [{"id": "c1:f1", "statement": "Priya owns the launch plan."}]}]
GOOD = {"findings": [{"statement": "Priya owns the launch plan.", "finding_ids": ["c1:f1"], "score": 90}]}


def model(fake, **kwargs):
    options = dict(base_url=fake.base_url, model="test-model", api_key=KEY, timeout=5, max_retries=2, backoff=0.01)
    options.update(kwargs)
    return ChatModel(**options)


def ok(fake, content=GOOD, usage=None):
    return fake.Reply(200, fake.chat_body(json.dumps(content) if not isinstance(content, str) else content, usage=usage))


def test_request_shape_usage_and_auth_header(fake_openai):
    fake_openai.script(ok(fake_openai, usage={"prompt_tokens": 120, "completion_tokens": 30}))
    log = CallLog()
    out = call_task(model(fake_openai), "map_findings", "who owns it?", UNITS, prompt_id="globalSearch:batch:1", log=log)
    assert out == GOOD
    (path, headers, body) = fake_openai.requests[0]
    assert path == "/v1/chat/completions"
    assert headers["Authorization"] == f"Bearer {KEY}"
    assert body["model"] == "test-model" and body["temperature"] == 0
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    ids = fmt["json_schema"]["schema"]["properties"]["findings"]["items"]["properties"]["finding_ids"]["items"]
    assert ids["enum"] == ["c1:f1"]  # cited ids restricted to the issued ones
    assert body["messages"][0]["role"] == "system" and "who owns it?" in body["messages"][1]["content"]
    (record,) = log.records
    assert (record.tokens_in, record.tokens_out, record.ok, record.model) == (120, 30, True, "chat:test-model")


def test_429_then_200_is_retried(fake_openai):
    fake_openai.script(fake_openai.Reply(429, {"error": {"message": "slow down"}}, {"Retry-After": "0"}), ok(fake_openai))
    started = time.monotonic()
    assert model(fake_openai).map_findings("q", UNITS) == GOOD
    assert len(fake_openai.requests) == 2
    assert time.monotonic() - started < 3


def test_5xx_until_the_last_retry_is_a_clear_error(fake_openai):
    fake_openai.script(*[fake_openai.Reply(500, {"error": {"message": "boom"}}) for _ in range(4)])
    with pytest.raises(ModelError) as info:
        model(fake_openai, max_retries=2).map_findings("q", UNITS)
    err = info.value
    assert len(fake_openai.requests) == 3  # 1 + max_retries
    assert err.code == "model_http_error" and err.status == 500 and err.attempts == 3
    assert "HTTP 500" in str(err) and "after 3 attempt(s)" in str(err)
    assert KEY not in str(err) + repr(err)


def test_client_errors_are_not_retried_and_never_echo_the_key(fake_openai):
    fake_openai.script(fake_openai.Reply(401, {"error": {"message": f"Incorrect API key provided: {KEY}"}}), ok(fake_openai))
    with pytest.raises(ModelError) as info:
        model(fake_openai).map_findings("q", UNITS)
    assert len(fake_openai.requests) == 1
    assert info.value.status == 401 and "HTTP 401" in str(info.value)
    assert KEY not in str(info.value) and "sk-test" not in str(info.value)


def test_malformed_json_body_is_a_bad_response(fake_openai):
    fake_openai.script(fake_openai.Reply(200, b"{not json at all"))
    with pytest.raises(ModelError) as info:
        model(fake_openai).map_findings("q", UNITS)
    assert info.value.code == "model_bad_response" and not isinstance(info.value, ValidationExhaustedError)
    fake_openai.script(fake_openai.Reply(200, {"no": "choices"}))
    with pytest.raises(ModelError, match="choices"):
        model(fake_openai).map_findings("q", UNITS)


def test_non_json_content_goes_through_one_repair(fake_openai):
    fake_openai.script(ok(fake_openai, "Sure! Here are the findings: none"), ok(fake_openai, "```json\n" + json.dumps(GOOD) + "\n```"))
    log = CallLog()
    assert call_task(model(fake_openai), "map_findings", "q", UNITS, prompt_id="p", log=log) == GOOD
    assert [(r.repaired, r.ok) for r in log.records] == [(False, False), (True, True)]
    repair_prompt = fake_openai.requests[1][2]["messages"][1]["content"]
    assert repair_prompt.endswith("\n\nFix these validation errors:\n(root): invalid_json")
    assert fake_openai.requests[1][2]["messages"][0]["content"].startswith("Return corrected")


def test_invalid_output_twice_is_exhausted_after_two_requests(fake_openai):
    bad = {"findings": [{"statement": "x", "finding_ids": ["c7:f7"], "score": 10}]}
    fake_openai.script(ok(fake_openai, bad), ok(fake_openai, bad), ok(fake_openai))
    with pytest.raises(ValidationExhaustedError) as info:
        call_task(model(fake_openai), "map_findings", "q", UNITS, prompt_id="globalSearch:batch:1")
    assert len(fake_openai.requests) == 2
    assert list(info.value.issues) == [{"path": "findings.finding_ids", "code": "unknown_finding_id"}]


def test_hang_past_the_timeout(fake_openai):
    fake_openai.script(fake_openai.Reply(200, fake_openai.chat_body("{}"), delay=5), fake_openai.Reply(200, fake_openai.chat_body("{}"), delay=5))
    started = time.monotonic()
    with pytest.raises(ModelError) as info:
        model(fake_openai, timeout=0.3, max_retries=1).map_findings("q", UNITS)
    assert info.value.code == "model_timeout" and info.value.attempts == 2
    assert "no response within 0.3 s" in str(info.value)
    assert time.monotonic() - started < 4


@pytest.mark.parametrize("limit", [1, 3])
def test_max_concurrency_bounds_parallel_requests(fake_openai, limit):
    import threading

    fake_openai.script(*[fake_openai.Reply(200, fake_openai.chat_body(json.dumps(GOOD)), delay=0.3) for _ in range(3)])
    m = model(fake_openai, max_concurrency=limit)
    results = []
    threads = [threading.Thread(target=lambda: results.append(m.map_findings("q", UNITS))) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert results == [GOOD] * 3
    assert fake_openai.max_inflight == 1 if limit == 1 else fake_openai.max_inflight >= 2


def test_connection_refused_is_retried_then_reported():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelError) as info:
        ChatModel(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=1, backoff=0.01).rate("q", [])
    assert info.value.code == "model_connection_error" and info.value.attempts == 2


def test_json_schema_rejection_falls_back_to_json_object(fake_openai):
    rejection = {"error": {"message": "1 validation error: ('body', 'response_format', 'type') Input should be 'text' or 'json_object'"}}
    fake_openai.script(fake_openai.Reply(500, rejection), ok(fake_openai), ok(fake_openai))
    m = model(fake_openai)
    assert m.map_findings("q", UNITS) == GOOD
    assert m.map_findings("q", UNITS) == GOOD
    formats = [req[2]["response_format"] for req in fake_openai.requests]
    assert [f["type"] for f in formats] == ["json_schema", "json_object", "json_object"]  # remembered
    schema = formats[1]["schema"]
    assert "additionalProperties" not in json.dumps(schema) and "maxLength" not in json.dumps(schema)
    assert "enum" in json.dumps(schema)


def test_api_key_never_shown(fake_openai, tmp_path, caplog, monkeypatch):
    monkeypatch.setenv("CRUX_API_KEY", KEY)
    m = ChatModel(base_url=fake_openai.base_url, model="test-model", timeout=10, max_retries=0)
    assert m.api_key is not None  # taken from the environment
    fake_openai.script(ok(fake_openai), fake_openai.Reply(503, {"error": {"message": KEY}}), ok(fake_openai, "not json"), ok(fake_openai, "nope"))
    log = CallLog()
    shown = [repr(m), str(m), repr(m.api_key), str(m.api_key), m.fingerprint, repr(vars(m) if hasattr(m, "__dict__") else "")]
    caplog.set_level(logging.DEBUG)
    cassette = CassetteModel(inner=m, path=tmp_path / "c.jsonl", mode="record")
    call_task(cassette, "map_findings", "q", UNITS, prompt_id="p", log=log)
    for _ in range(2):
        try:
            call_task(m, "map_findings", "q", UNITS, prompt_id="p", log=log)
        except ModelError as exc:
            shown += [str(exc), repr(exc), repr(getattr(exc, "issues", ""))]
    shown += [repr(log), log.to_frame().to_string(), caplog.text, (tmp_path / "c.jsonl").read_text()]
    shown.append(repr(pickle.loads(pickle.dumps(m))))
    blob = "\n".join(shown)
    assert KEY not in blob and "SECRET" not in blob
    assert fake_openai.requests[0][1]["Authorization"] == f"Bearer {KEY}"
    assert pickle.loads(pickle.dumps(m)).api_key.reveal() == KEY


def test_env_fallback_order_and_masked_url(monkeypatch):
    monkeypatch.delenv("CRUX_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-fallback-123456")
    m = ChatModel(base_url="https://user:pw@example.invalid/v1?api-version=2024&key=abc", model="gpt")
    assert m.api_key.reveal() == "sk-openai-fallback-123456"
    monkeypatch.setenv("CRUX_API_KEY", "sk-crux-first-123456")
    assert ChatModel(base_url="http://x.invalid/v1", model="gpt").api_key.reveal() == "sk-crux-first-123456"
    text = repr(m)
    assert "pw" not in text and "abc" not in text and "***@example.invalid" in text
    assert ChatModel(base_url="http://x.invalid/v1", model="gpt", api_key="other").fingerprint == ChatModel(
        base_url="http://x.invalid/v1", model="gpt").fingerprint  # the key is not part of the fingerprint


def test_constructor_validation():
    with pytest.raises(ParameterError, match="base_url"):
        ChatModel(base_url="ftp://x", model="m")
    with pytest.raises(ParameterError, match="max_retries"):
        ChatModel(base_url="http://x.invalid", model="m", max_retries=-1)
    with pytest.raises(ParameterError, match="timeout"):
        ChatModel(base_url="http://x.invalid", model="m", timeout=0)
    with pytest.raises(TypeError):
        ChatModel("http://x.invalid", "m")  # keyword-only
