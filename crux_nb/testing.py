"""Public testing helpers: build knowledge bases with exact ids, compare them.

Ingestion names chunks ``c0000``, ``c0001``…; tests of graph semantics often
need chosen ids and ordinals instead (upstream's pinned examples do).

>>> from crux_nb.testing import make_kb
>>> kb = make_kb(chunks=[("guide", "intro", 1, "Intro text."), ("guide", "details", 2, "Details.")])
>>> [str(n.ref) for n in kb.reader.neighbors("chunk:guide:intro", types=["sequence"])]
['chunk:guide:details']
"""

from __future__ import annotations

from contextlib import contextmanager
from types import SimpleNamespace
from typing import Any, Iterable, Iterator

import pandas as pd

from .refs import ChunkRef, encode_ref
from .schema import coerce, frozen_metadata
from .knowledgebase import KnowledgeBase
from .store.state import KBState

from .conformance import assert_hits_equal, check_knowledge_model, check_step

__all__ = ["make_kb", "assert_kb_equal", "assert_hits_equal", "check_step", "check_knowledge_model", "require_system",
           "stand_in_chat"]


def make_kb(*, chunks: Iterable[tuple], parents: Iterable[tuple] = (), id: str = "kb",
            namespace: str | None = None, metadata: dict[str, dict[str, Any]] | None = None) -> KnowledgeBase:
    """A knowledge base from explicit rows.

    ``chunks``: ``(source_id, chunk_id, ordinal, content[, parent_id[, chunk_metadata]])``;
    ``parents``: ``(source_id, parent_id, ordinal[, title])``; ``metadata``: per-source metadata.

    Examples
    --------
    >>> kb = make_kb(id="t", chunks=[("guide", "intro", 1, "Intro text.", "top"), ("guide", "usage", 2, "Usage.", "top")],
    ...              parents=[("guide", "top", 1, "Guide")], metadata={"guide": {"team": "docs"}})
    >>> kb.chunks[["ref", "parent_id", "content"]].to_dict("records")[0]
    {'ref': 'chunk:guide:intro', 'parent_id': 'top', 'content': 'Intro text.'}
    >>> kb.summary()["chunks"], dict(kb.documents["metadata"][0])
    (2, {'team': 'docs'})
    """
    metadata = metadata or {}
    chunk_rows = []
    for row in chunks:
        source_id, chunk_id, ordinal, content, *rest = row
        parent_id = rest[0] if rest else None
        meta = {**metadata.get(source_id, {}), **(rest[1] if len(rest) > 1 else {})}
        chunk_rows.append({"ref": encode_ref(ChunkRef(source_id, chunk_id)), "source_id": source_id,
                           "chunk_id": chunk_id, "parent_id": parent_id, "ordinal": ordinal, "content": content,
                           "n_chars": len(content), "metadata": frozen_metadata(meta)})
    parent_rows = [{"source_id": p[0], "parent_id": p[1], "ordinal": p[2], "title": p[3] if len(p) > 3 else p[1],
                    "heading_level": 1, "metadata": frozen_metadata(metadata.get(p[0], {}))} for p in parents]
    sources = sorted({r["source_id"] for r in chunk_rows} | {r["source_id"] for r in parent_rows})
    docs = [{"source_id": s, "title": s, "path": None, "media_type": "text/plain", "content_hash": "",
             "n_chunks": sum(r["source_id"] == s for r in chunk_rows),
             "n_chars": sum(r["n_chars"] for r in chunk_rows if r["source_id"] == s),
             "metadata": frozen_metadata(metadata.get(s, {}))} for s in sources]
    state = KBState(
        documents=coerce(pd.DataFrame(docs, columns=["source_id", "title", "path", "media_type", "content_hash",
                                                      "n_chunks", "n_chars", "metadata"]), "documents"),
        parents=_sort(coerce(pd.DataFrame(parent_rows, columns=["source_id", "parent_id", "ordinal", "title",
                                                                "heading_level", "metadata"]), "parents"),
                      ["source_id", "ordinal", "parent_id"]),
        chunks=_sort(coerce(pd.DataFrame(chunk_rows, columns=["ref", "source_id", "chunk_id", "parent_id", "ordinal",
                                                              "content", "n_chars", "metadata"]), "chunks"),
                     ["source_id", "ordinal", "chunk_id"]),
    )
    return KnowledgeBase(id=id, namespace=namespace or id, state=state)


def _sort(frame: pd.DataFrame, by: list[str]) -> pd.DataFrame:
    return frame.sort_values(by, kind="stable").reset_index(drop=True)


def assert_kb_equal(left: KnowledgeBase, right: KnowledgeBase) -> None:
    """Assert two knowledge bases have equal ids and equal frames (dtypes included).

    Examples
    --------
    >>> a = make_kb(chunks=[("guide", "intro", 1, "Intro.")])
    >>> assert_kb_equal(a, make_kb(chunks=[("guide", "intro", 1, "Intro.")]))
    >>> try:
    ...     assert_kb_equal(a, make_kb(chunks=[("guide", "intro", 1, "Intro!")]))
    ... except AssertionError as exc:
    ...     print(str(exc).splitlines()[0])
    kb.chunks.iloc[:, 5] (column name="content") are different
    """
    assert (left.id, left.namespace) == (right.id, right.namespace), "ids differ"
    for name, frame in left.frames().items():
        pd.testing.assert_frame_equal(frame, right.frames()[name], obj=f"kb.{name}")


def require_system(available: bool, reason: str) -> None:
    """In a test: skip with ``reason`` when a system component (a browser, a model server, shared data)
    is missing; fail instead when the environment variable ``CRUX_REQUIRE_SYSTEM=1`` is set (CI).

    Examples
    --------
    >>> import os, shutil, pytest
    >>> require_system(True, "nothing missing")  # returns quietly
    >>> try:
    ...     require_system(shutil.which("no-such-tool-xyz") is not None, "no-such-tool-xyz is not installed")
    ... except (pytest.skip.Exception, pytest.fail.Exception) as exc:  # Skipped here, Failed in CI
    ...     print(type(exc).__name__ == ("Failed" if os.environ.get("CRUX_REQUIRE_SYSTEM") == "1" else "Skipped"),
    ...           exc.msg.endswith("no-such-tool-xyz is not installed"))
    True True
    """
    import os

    import pytest

    if available:
        return
    if os.environ.get("CRUX_REQUIRE_SYSTEM") == "1":
        pytest.fail(f"required system component missing (CRUX_REQUIRE_SYSTEM=1): {reason}")
    pytest.skip(reason)


@contextmanager
def stand_in_chat(*contents: Any) -> Iterator[SimpleNamespace]:
    """An OpenAI-compatible chat server on the loopback interface, for offline tests of ``ChatModel``.

    Each ``POST`` is answered with the next of ``contents`` (JSON-encoded as the reply's message
    content; a ``str`` is sent as it is), then with HTTP 500. Yields ``server`` with ``base_url``
    (ends in ``/v1``) and ``requests`` (the JSON bodies received, in order); stops on exit.

    Examples
    --------
    >>> from crux_nb.models import ChatModel
    >>> with stand_in_chat({"answer": 42}) as server:
    ...     model = ChatModel(base_url=server.base_url, model="toy", max_retries=0)
    ...     reply = model.generate_object(messages=[{"role": "user", "content": "The answer?"}])
    >>> reply, server.requests[0]["model"], server.requests[0]["messages"][0]["content"]
    ({'answer': 42}, 'toy', 'The answer?')
    """
    import json
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    queue = [c if isinstance(c, str) else json.dumps(c) for c in contents]
    requests: list[Any] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: Any) -> None:
            pass

        def do_POST(self) -> None:  # noqa: N802 - http.server API
            requests.append(json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0))))
            status, body = (200, {"choices": [{"message": {"role": "assistant", "content": queue.pop(0)},
                                               "finish_reason": "stop"}]}) if queue else (500, {"error": "no reply"})
            data = json.dumps(body).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield SimpleNamespace(base_url=f"http://127.0.0.1:{server.server_address[1]}/v1", requests=requests)
    finally:
        server.shutdown()
        server.server_close()
