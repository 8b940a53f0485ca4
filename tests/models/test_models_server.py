"""What a server says about itself (context window, slots), the structured-output forms, and the budgets,
against small real HTTP servers on the loopback interface that answer as llama.cpp, vLLM and Ollama do."""

from __future__ import annotations

import itertools
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from crux_nb.errors import ModelError
from crux_nb.models import ChatModel
from crux_nb.models.budget import context_budget
from crux_nb.models.server import forget

RATE = {"ratings": [{"community_id": "c1", "rating": 70}]}
REPORTS = [{"community_id": "c1", "title": "Calls", "summary": "A call invokes a callable.", "findings": []}]


class Server:
    """GET routes answer fixed JSON; POST /v1/chat/completions answers from ``replies`` (status, body)."""

    def __init__(self, gets: dict, replies: list | None = None):
        self.posts: list[dict] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def _send(self, status, body):
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self):  # noqa: N802
                if self.path in gets:
                    self._send(200, gets[self.path])
                else:
                    self._send(404, {"error": "not found"})

            def do_POST(self):  # noqa: N802
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                server.posts.append((self.path, body))
                if self.path == "/api/show":
                    self._send(200, gets.get("POST /api/show", {}))
                    return
                status, reply = (replies or [(500, {"error": "none"})]).pop(0)
                self._send(status, reply)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/v1"

    def close(self):
        self.http.shutdown()
        self.http.server_close()


def ok(content, finish="stop"):
    return 200, {"choices": [{"message": {"role": "assistant", "content": json.dumps(content)},
                              "finish_reason": finish}], "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


@pytest.fixture(autouse=True)
def _fresh():
    forget()
    yield
    forget()


def test_llama_cpp_props_give_the_context_and_the_slots():
    server = Server({"/props": {"default_generation_settings": {"n_ctx": 2048}, "total_slots": 2}})
    try:
        model = ChatModel(base_url=server.url, model="m", max_tokens=300)
        assert (model.server.kind, model.server.context_window, model.server.slots) == ("llama.cpp", 2048, 2)
        assert model._state["endpoint"].limiter.limit == 2  # no more calls in flight than slots
        upper = context_budget(context_window=2048, max_tokens=300, prompt_chars=0)
        assert 600 < model.input_budget("map_findings") < upper < 24_000
    finally:
        server.close()


def test_vllm_max_model_len_and_ollama_num_ctx():
    vllm = Server({"/v1/models": {"data": [{"id": "m", "max_model_len": 8192}]}})
    ollama = Server({"/api/version": {"version": "0.5.7"},
                     "POST /api/show": {"parameters": "num_ctx 3000\nstop \"<|im_end|>\"", "model_info": {}}})
    try:
        assert ChatModel(base_url=vllm.url, model="m").effective_context == 8192
        shown = ChatModel(base_url=ollama.url, model="m").server
        assert (shown.kind, shown.context_window) == ("ollama", 3000)
    finally:
        vllm.close()
        ollama.close()


def test_a_server_that_says_nothing_keeps_the_seed_ceiling_and_a_given_context_wins():
    server = Server({})
    try:
        assert ChatModel(base_url=server.url, model="m").input_budget("map_findings") == 24_000
        small = ChatModel(base_url=server.url, model="m", context_window=1024, max_tokens=200)
        assert small.input_budget("map_findings") < 3_000
    finally:
        server.close()


def test_forms_are_tried_in_order_and_remembered_per_endpoint():
    refuse = (400, {"error": {"message": "response_format: unsupported type json_schema"}})
    refuse_schema = (422, {"error": {"message": "unknown field: schema"}})
    refuse_format = (400, {"error": {"message": "unknown field: format"}})
    server = Server({}, [refuse, refuse_schema, refuse_format, ok(RATE), ok(RATE)])
    try:
        model = ChatModel(base_url=server.url, model="m", max_retries=0)
        assert model.rate("q", REPORTS) == RATE
        assert ChatModel(base_url=server.url, model="m", max_retries=0).rate("q", REPORTS) == RATE  # remembered
        shapes = [(b.get("response_format") or {}).get("type", "format" if "format" in b else "plain")
                  for _, b in server.posts]
        assert shapes == ["json_schema", "json_object", "format", "plain", "plain"]
        assert "schema" in server.posts[1][1]["response_format"]
    finally:
        server.close()


def test_context_error_and_truncation_are_their_own_errors():
    too_long = (400, {"error": {"message": "This model's maximum context length is 2048 tokens. However, you "
                                           "requested 3000 tokens (2900 in the messages, 100 in the completion)."}})
    server = Server({}, [too_long, ok(RATE, finish="length")])
    try:
        model = ChatModel(base_url=server.url, model="m", max_retries=2, max_tokens=100)
        with pytest.raises(ModelError) as info:
            model.rate("q", REPORTS)
        assert info.value.code == "context_exceeded" and len(server.posts) == 1  # not retried
        assert "context_window=2048" in info.value.hint and model.effective_context == 2048  # learned
    finally:
        server.close()
    truncated = (200, {"choices": [{"message": {"content": '{"ratings": [{"commu'}, "finish_reason": "length"}]})
    server = Server({}, [truncated])
    try:
        with pytest.raises(ModelError) as info:
            ChatModel(base_url=server.url, model="m", max_tokens=100, max_retries=0).rate("q", REPORTS)
        assert info.value.code == "output_truncated" and "raise max_tokens (now 100)" in info.value.hint
        assert len(server.posts) == 1  # no repair call: it would be cut again
    finally:
        server.close()


def test_connection_errors_name_the_url():
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    with pytest.raises(ModelError) as info:
        ChatModel(base_url=f"http://127.0.0.1:{port}/v1", model="m", max_retries=0).rate("q", REPORTS)
    assert f"127.0.0.1:{port}/v1/chat/completions" in info.value.hint


def test_calls_queued_on_a_one_slot_server_are_not_failed_as_timeouts():
    """Three calls at once; the server holds them until all three arrived, answers two and keeps the third
    past the client's timeout (it sat in the server's queue). Whichever call that is, it had company: the
    client lowers its limit to one and retries it without counting an attempt (``max_retries=0``)."""
    arrived = threading.Barrier(3, timeout=10)
    order = itertools.count()
    release = threading.Event()
    server = Server({})
    handler = server.http.RequestHandlerClass
    try:
        model = ChatModel(base_url=server.url, model="m", max_retries=0, timeout=1.5, max_concurrency=3)

        def answer(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
            server.posts.append(("/v1/chat/completions", body))
            if len(server.posts) <= 3:
                arrived.wait()
                if next(order) == 2:  # the last of the three to be served: queued past the timeout
                    release.wait(timeout=10)
                    return
            data = json.dumps(ok(RATE)[1]).encode()
            try:
                self.send_response(200)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass

        handler.do_POST = answer
        results, errors = [], []

        def call():
            try:
                results.append(model.rate("q", REPORTS))
            except ModelError as exc:
                errors.append(exc)

        threads = [threading.Thread(target=call) for _ in range(3)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert errors == [] and results == [RATE] * 3
        assert len(server.posts) == 4  # three calls and one retry of the call that timed out in the queue
        assert model._state["endpoint"].limiter.limit == 1  # learned: one call at a time
    finally:
        release.set()
        server.close()
