"""A local OpenAI-compatible server for the reliability suites (faulty models, secrets).

``LocalLLM(respond)`` runs ``http.server`` on 127.0.0.1 (port 0) in a thread; ``respond(payload)``
returns one :class:`Answer` per ``POST /v1/chat/completions``. ``canned_answer`` builds a *valid*
answer for any of the four crux_nb tasks from the request's JSON schema (the issued ids are its
``enum`` values), so the whole pipeline can run through :class:`crux_nb.models.ChatModel`.
"""

from __future__ import annotations

import json
import re
import threading
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable


@dataclass
class Answer:
    """One HTTP answer: ``content`` is the assistant message (wrapped in a chat body) unless ``body`` is given."""

    content: str | None = None
    status: int = 200
    body: Any = None
    delay: float = 0.0


def chat_body(content: str) -> dict:
    return {"id": "cmpl-local", "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5}}


def task_of(payload: dict) -> str:
    """The crux_nb task of a request (from the schema name ``crux_<task>``, else the system prompt)."""
    fmt = payload.get("response_format") or {}
    name = (fmt.get("json_schema") or {}).get("name", "")
    if name.startswith("crux_"):
        return name[len("crux_"):]
    from crux_nb.models.chat_prompts import REPAIR_SYSTEM, SYSTEM

    system = payload["messages"][0]["content"]
    for table in (SYSTEM, REPAIR_SYSTEM):
        for task, text in table.items():
            if text == system:
                return task
    raise AssertionError(f"unknown request: {system!r}")


def _enum(schema: dict, *path: str) -> list[str]:
    node = schema
    for key in path:
        node = node.get(key) or {}
    return list(node.get("enum") or ())


def canned_answer(payload: dict) -> dict:
    """A valid output for the request's task, citing only ids its schema issues."""
    schema = (payload.get("response_format") or {}).get("json_schema", {}).get("schema", {})
    task = task_of(payload)
    if task == "extract":  # capitalised word pairs of each "[chunk id] text" prompt line are the entities
        # chunks are shown as "[1] text", "[2] text", ... and cited by that number (the schema's enum)
        chunks = {str(n) for n in _enum(schema, "properties", "mentions", "items", "properties", "chunk_id")}
        texts: dict[str, str] = {}
        current = None
        for line in payload["messages"][1]["content"].splitlines():  # a chunk's text runs to the next "[id] "
            match = re.match(r"^\[(.+?)\] (.*)$", line)
            if match and match.group(1) in chunks:
                current = match.group(1)
                texts[current] = match.group(2)
            elif current is not None:
                texts[current] += "\n" + line
        found = {c: sorted(set(re.findall(r"\b[A-Z][a-z]+ [A-Z][a-z]+\b", t))) for c, t in texts.items()}
        names = sorted({n for ns in found.values() for n in ns})
        return {"entities": [{"name": n, "type": "person", "aliases": []} for n in names],
                "mentions": [{"chunk_id": int(c), "name": n} for c, ns in sorted(found.items()) for n in ns],
                "related": [{"from": ns[0], "to": ns[1], "description": "appears with", "chunk_ids": [int(c)]}
                            for c, ns in sorted(found.items()) if len(ns) > 1]}
    if task == "write_report":
        refs = _enum(schema, "properties", "findings", "items", "properties", "evidence", "items")
        findings = [{"id": "f1", "statement": "Aurora Team works on the Beacon Service.", "evidence": refs[:2]}] if refs else []
        return {"title": "Aurora and Beacon", "summary": "Who works on what.", "findings": findings}
    if task == "map_findings":
        ids = _enum(schema, "properties", "findings", "items", "properties", "finding_ids", "items")
        return {"findings": [{"statement": "Aurora Team works on the Beacon Service.", "finding_ids": ids[:1],
                              "score": 80}] if ids else []}
    if task == "rate":
        ids = _enum(schema, "properties", "ratings", "items", "properties", "community_id")
        return {"ratings": [{"community_id": c, "rating": 75} for c in ids]}
    raise AssertionError(task)


class LocalLLM:
    """``requests`` holds ``(path, headers, payload)`` per request; ``close()`` releases any sleeping answer."""

    def __init__(self, respond: Callable[[dict], Answer]):
        self.respond = respond
        self.requests: list[tuple[str, dict, Any]] = []
        self.lock = threading.Lock()
        self.stop = threading.Event()
        llm = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # quiet
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = raw
                with llm.lock:
                    llm.requests.append((self.path, dict(self.headers), payload))
                try:
                    answer = llm.respond(payload)
                except Exception as exc:  # noqa: BLE001 - a test bug shows as an HTTP 599
                    answer = Answer(status=599, body={"error": {"message": repr(exc)}})
                if answer.delay:
                    llm.stop.wait(answer.delay)
                body = answer.body if answer.body is not None else chat_body(answer.content or "")
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                try:
                    self.send_response(answer.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __len__(self) -> int:
        return len(self.requests)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()
