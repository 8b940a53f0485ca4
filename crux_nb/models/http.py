"""JSON over HTTP for OpenAI-compatible endpoints: one transport for chat and embeddings clients.

:class:`JsonEndpoint` posts JSON to ``base_url + path`` with a per-request timeout,
retries with exponential backoff (``backoff · 2**n`` seconds, or ``Retry-After`` when
larger, capped at 60 s) on HTTP 408, 409, 429, 5xx, timeouts and connection errors,
bounded concurrency, and a :class:`~crux_nb.errors.ModelError` naming the status and
attempts (codes ``model_http_error``, ``model_timeout``, ``model_connection_error``,
``model_bad_response``). The API key lives in a :class:`Secret` and is redacted from
every message; user info and query values of ``base_url`` are masked wherever the URL
is shown. Only the standard library is used (``urllib.request``).
"""

from __future__ import annotations

import json
import os
import re
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from contextlib import contextmanager
from http.client import HTTPException
from typing import Any, Callable, Iterator

from ..errors import ModelError, ParameterError

__all__ = ["JsonEndpoint", "Secret", "mask_url", "resolve_api_key", "API_KEY_ENV_VARS"]

API_KEY_ENV_VARS = ("CRUX_API_KEY", "OPENAI_API_KEY")
_RETRY_AFTER_CAP = 60.0
_RETRY_STATUS = frozenset({408, 409, 429})  # plus every 5xx
_KEYLIKE = re.compile(r"\b(sk|pk|key|token)[-_][A-Za-z0-9_\-]{6,}", re.I)
_PROBE_TIMEOUT = 5.0  # discovery requests: a server that does not answer this fast does not say


def _hint(code: str, status: int | None, url: str, timeout: float) -> str:
    """What to change, by cause: the URL for connection errors, the timeout for timeouts, the key for 401/403."""
    if code == "model_timeout":
        return (f"{url} did not answer within timeout={timeout:g} s: raise timeout= (a long generation on a slow "
                "server needs more), or check that the server is up.")
    if code == "model_connection_error":
        return f"nothing answered at {url}: check that the server is running there and that base_url is right."
    if code == "model_bad_response":
        return "the endpoint is not OpenAI-compatible, or a proxy rewrote the response."
    if status in (401, 403):
        return "check the API key (api_key=, CRUX_API_KEY or OPENAI_API_KEY) and its access to the model."
    if status == 404:
        return "check base_url (it usually ends in /v1) and the model name the server serves (GET /v1/models)."
    if status is not None and status >= 500:
        return "the server failed; its log says why (a crash, or it is out of memory)."
    return "the server rejected the request: its message above says why."


class Limiter:
    """How many calls may be in flight: ``limit``, lowered when calls time out while others run (queueing).

    A call holds a slot through :meth:`slot`, which records the most calls in flight at any moment of it
    (the company it had on the server, whichever arrived there first).

    >>> lim = Limiter(4)
    >>> lim.shrink(seen=3), lim.limit, lim.shrink(seen=2), lim.shrink(seen=1), lim.limit
    (True, 1, True, False, 1)
    >>> first = [0]
    >>> with lim.slot(first):
    ...     pass
    >>> lim.set(2)  # a lower limit is kept; set() never raises it
    >>> first, lim.limit
    ([1], 1)
    """

    def __init__(self, limit: int):
        self.limit = limit
        self.inflight = 0
        self._cond = threading.Condition()
        self._company: list[list[int]] = []

    def set(self, limit: int) -> None:
        with self._cond:
            self.limit = max(1, min(self.limit, limit))

    def shrink(self, *, seen: int) -> bool:
        """A call timed out while ``seen`` calls were in flight: the server queues, so serve half as many;
        True when it had company (it waited on the server's queue: worth a retry that is not an attempt)."""
        with self._cond:
            if seen <= 1:
                return False
            self.limit = max(1, min(self.limit, seen // 2))
            return True

    @contextmanager
    def slot(self, company: list[int]) -> Iterator[None]:
        """Wait for a free slot and hold it; ``company[0]`` becomes the most calls in flight while held."""
        with self._cond:
            while self.inflight >= self.limit:
                self._cond.wait()
            self.inflight += 1
            self._company.append(company)
            for record in self._company:  # a later arrival is company for every call already running
                record[0] = max(record[0], self.inflight)
        try:
            yield
        finally:
            with self._cond:
                self.inflight -= 1
                self._company = [record for record in self._company if record is not company]
                self._cond.notify_all()


class Secret:
    """Holds a secret string; ``repr``/``str`` never show it. Call :meth:`reveal` to use it.

    >>> s = Secret("sk-hidden")
    >>> s, s.reveal()
    (Secret('***'), 'sk-hidden')
    """

    __slots__ = ("_value",)

    def __init__(self, value: str):
        self._value = value

    def reveal(self) -> str:
        """The secret itself (for the request header only).

        >>> Secret("sk-1").reveal()
        'sk-1'
        """
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(("Secret", self._value))


def mask_url(url: str) -> str:
    """``url`` for display: user info and query values replaced by ``***``.

    >>> mask_url("https://user:pw@host/v1?api-version=2024&key=abc")
    'https://***@host/v1?api-version=***&key=***'
    """
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = "***@" + netloc.rsplit("@", 1)[1]
    query = "&".join(f"{k}=***" for k, _v in urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
    return urllib.parse.urlunsplit((parts.scheme, netloc, parts.path, query, ""))


def resolve_api_key(owner: str, key: Any) -> Secret | None:
    """The key as a :class:`Secret`: the argument, else ``$CRUX_API_KEY``, else ``$OPENAI_API_KEY``, else None.

    >>> resolve_api_key("Demo", "sk-x")
    Secret('***')
    """
    if key is None:
        key = next((os.environ[v] for v in API_KEY_ENV_VARS if os.environ.get(v)), None)
    if isinstance(key, str):
        return Secret(key) if key else None
    if key is not None and not isinstance(key, Secret):
        raise ParameterError(owner, "api_key", "a string, a Secret or None", type(key).__name__)
    return key


def check_base_url(owner: str, base_url: Any) -> str:
    """``base_url`` when it is an http(s) URL, else a :class:`ParameterError` (the URL masked)."""
    if not isinstance(base_url, str) or urllib.parse.urlsplit(base_url).scheme not in ("http", "https"):
        raise ParameterError(owner, "base_url", "an http(s) URL", mask_url(str(base_url)))
    return base_url


class JsonEndpoint:
    """POST JSON to an OpenAI-compatible server with timeouts, retries and redacted errors.

    ``label`` starts every error message (for example ``"ChatModel chat:gpt"``).
    ``on_http_error(status, detail)`` may raise to stop at once (a client's own
    fallback), before the retry rules apply.

    >>> e = JsonEndpoint(base_url="http://127.0.0.1:9/v1", api_key=Secret("sk-abcdefgh"), label="Demo")
    >>> e.url("/embeddings")
    'http://127.0.0.1:9/v1/embeddings'
    >>> e.redact("bad key sk-abcdefgh")
    'bad key ***'
    """

    def __init__(self, *, base_url: str, api_key: Secret | None, label: str, api_key_header: str = "Authorization",
                 timeout: float = 60.0, max_retries: int = 3, backoff: float = 0.5, max_concurrency: int = 4):
        self.base_url = base_url
        self.api_key = api_key
        self.label = label
        self.api_key_header = api_key_header
        self.timeout = timeout
        self.max_retries = max_retries
        self.backoff = backoff
        self.limiter = Limiter(max_concurrency)

    def __repr__(self) -> str:
        return f"JsonEndpoint(base_url={mask_url(self.base_url)!r}, label={self.label!r})"

    def url(self, path: str, *, root: bool = False) -> str:
        """``base_url + path``; ``root``: the server's root (``base_url`` without its ``/v1``) + path."""
        parts = urllib.parse.urlsplit(self.base_url)
        base = parts.path.rstrip("/")
        if root:
            base = re.sub(r"/v\d+$", "", base)
        return urllib.parse.urlunsplit((parts.scheme, parts.netloc, base + path, parts.query, ""))

    def get(self, path: str, *, root: bool = False, payload: dict[str, Any] | None = None,
            want_error: bool = False) -> Any:
        """One short request (GET, or POST with ``payload``) for what a server says about itself.

        Returns the JSON body, or None when the server does not answer it (no retries, a short timeout);
        with ``want_error`` an HTTP error's message instead of None.
        """
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        request = urllib.request.Request(self.url(path, root=root), data=data, headers=self.headers(),
                                         method="GET" if data is None else "POST")
        try:
            with urllib.request.urlopen(request, timeout=min(self.timeout, _PROBE_TIMEOUT)) as response:
                return json.loads(response.read().decode("utf-8"))
        except urllib.error.HTTPError as exc:
            return self.redact(error_detail(exc)) if want_error else None
        except (OSError, ValueError, HTTPException):
            return None

    def headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json", "User-Agent": "crux_nb"}
        if self.api_key is not None:
            key = self.api_key.reveal()
            headers[self.api_key_header] = f"Bearer {key}" if self.api_key_header.lower() == "authorization" else key
        return headers

    def redact(self, text: str) -> str:
        if self.api_key is not None:
            text = text.replace(self.api_key.reveal(), "***")
        return _KEYLIKE.sub("***", text)

    def error(self, code: str, detail: str, *, attempts: int, path: str, status: int | None = None) -> ModelError:
        """A :class:`ModelError` for a failed ``POST path`` (masked URL, redacted detail, a hint per code)."""
        where = f"POST {mask_url(self.url(path))}"
        shown = f"HTTP {status}: " if status is not None else ""
        hint = _hint(code, status, mask_url(self.url(path)), self.timeout)
        err = ModelError(self.redact(f"{self.label}: {where} failed after {attempts} attempt(s): {shown}{detail}."),
                         code=code, hint=hint)
        err.status = status  # type: ignore[attr-defined]
        err.attempts = attempts  # type: ignore[attr-defined]
        return err

    def post(self, path: str, payload: dict[str, Any], *,
             on_http_error: Callable[[int, str], None] | None = None) -> dict[str, Any]:
        """The JSON object the server answers to ``payload``; retries as the module says."""
        data = json.dumps(payload, ensure_ascii=False).encode("utf-8")
        attempts = self.max_retries + 1
        last: tuple[str, str, int | None] = ("model_connection_error", "no attempt made", None)
        attempt, seen = 0, [0]
        while attempt < attempts:
            attempt += 1
            retry_after = 0.0
            try:
                return self._once(path, data, attempt, seen)
            except urllib.error.HTTPError as exc:
                status = exc.code
                detail = self.redact(error_detail(exc))  # redacted at once: tracebacks may show locals
                if on_http_error is not None:
                    on_http_error(status, detail)
                if status not in _RETRY_STATUS and status < 500:
                    raise self.error("model_http_error", detail or "request rejected", attempts=attempt,
                                     status=status, path=path) from None
                last = ("model_http_error", "server error" if status >= 500 else "rate limited or busy", status)
                retry_after = _retry_after(exc.headers.get("Retry-After") if exc.headers else None)
            except TimeoutError:
                last = ("model_timeout", f"no response within {self.timeout:g} s", None)
                if self.limiter.shrink(seen=max(seen[0], self.limiter.inflight + 1)):
                    attempt -= 1  # it waited behind other calls on the server: retried as one, not counted
                    continue
            except urllib.error.URLError as exc:
                if isinstance(exc.reason, TimeoutError):
                    last = ("model_timeout", f"no response within {self.timeout:g} s", None)
                    if self.limiter.shrink(seen=max(seen[0], self.limiter.inflight + 1)):
                        attempt -= 1
                        continue
                else:
                    last = ("model_connection_error", f"connection failed ({type(exc.reason).__name__})", None)
            except (ConnectionError, HTTPException, OSError) as exc:
                last = ("model_connection_error", f"connection failed ({type(exc).__name__})", None)
            seen[0] = 0
            if attempt < attempts:
                time.sleep(max(self.backoff * (2 ** (attempt - 1)), min(retry_after, _RETRY_AFTER_CAP)))
        code, detail, status = last
        raise self.error(code, detail, attempts=attempts, status=status, path=path)

    def _once(self, path: str, data: bytes, attempt: int, seen: list[int]) -> dict[str, Any]:
        request = urllib.request.Request(self.url(path), data=data, headers=self.headers(), method="POST")
        # the timeout starts once the call leaves this client's queue: a call waiting here is not running
        with self.limiter.slot(seen):
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                raw = response.read()
        try:
            body = json.loads(raw.decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            raise self.error("model_bad_response", "the response body is not valid JSON", attempts=attempt,
                             path=path) from None
        if not isinstance(body, dict):
            raise self.error("model_bad_response", "the response body is not a JSON object", attempts=attempt, path=path)
        return body


def error_detail(exc: urllib.error.HTTPError) -> str:
    """The server's error message from an HTTP error body (at most 300 characters; not yet redacted)."""
    try:
        raw = exc.read(4096).decode("utf-8", "replace")
    except Exception:  # noqa: BLE001 - the body is only a hint
        return ""
    try:
        body = json.loads(raw)
        message = body.get("error", body) if isinstance(body, dict) else body
        if isinstance(message, dict):
            message = message.get("message") or message.get("detail") or json.dumps(message)[:300]
        return str(message)[:300]
    except ValueError:
        return raw[:300]


def _retry_after(value: str | None) -> float:
    try:
        return max(0.0, float(value)) if value else 0.0
    except ValueError:
        return 0.0
