"""Fixtures for tests that drive a real JupyterLab in Debian Chromium through Playwright.

Shared by tests/browser and tests/reliability through ``tests/conftest.py``: one JupyterLab and one
Chromium per test session (two sync Playwright instances cannot run in one thread).

``jupyter_lab`` starts ``jupyter lab`` (127.0.0.1, empty token, --allow-root) with temporary
config, data, runtime, settings and workspace folders, and a temporary notebook folder; the
news/update toasts are switched off by a user-settings override. ``browser`` launches
/usr/bin/chromium (or $CRUX_CHROMIUM) headless (no ``playwright install``). Without Chromium, JupyterLab or
Playwright the tests skip -- or fail when CRUX_REQUIRE_SYSTEM=1 (CI).
Install: ``scripts/install_browser.sh`` and ``pip install jupyterlab playwright``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from crux_nb.testing import require_system

TESTS = Path(__file__).resolve().parent
ROOT = TESTS.parent
ARTIFACTS = TESTS / "browser" / "artifacts"
CHROMIUM = Path(os.environ.get("CRUX_CHROMIUM", "/usr/bin/chromium"))  # Debian's; override for other systems
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage"]
START_TIMEOUT = 60.0


def _require_system(available: bool, reason: str) -> None:
    require_system(available, reason)


def require_browser_stack() -> None:
    _require_system(CHROMIUM.is_file() and os.access(CHROMIUM, os.X_OK),
                    f"{CHROMIUM} not found (run scripts/install_browser.sh)")
    for module, package in (("jupyterlab", "jupyterlab"), ("playwright.sync_api", "playwright")):
        try:
            found = importlib.util.find_spec(module) is not None
        except ModuleNotFoundError:
            found = False
        _require_system(found, f"Python package {package!r} is not installed (pip install jupyterlab playwright)")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _request(url: str, method: str = "GET", timeout: float = 5.0):
    req = urllib.request.Request(url, method=method)
    with urllib.request.urlopen(req, timeout=timeout) as response:
        body = response.read()
        return json.loads(body) if body else None


class Lab:
    """A running JupyterLab: ``url``, ``notebooks`` (its root folder), ``log``."""

    def __init__(self, url: str, notebooks: Path, log: Path, process: subprocess.Popen):
        self.url, self.notebooks, self.log, self.process = url, notebooks, log, process

    def log_tail(self, n: int = 40) -> str:
        try:
            return "\n".join(self.log.read_text(errors="replace").splitlines()[-n:])
        except OSError:
            return ""


@pytest.fixture(scope="session")
def jupyter_lab(tmp_path_factory):
    require_browser_stack()
    base = tmp_path_factory.mktemp("jupyterlab")
    notebooks = base / "notebooks"
    notebooks.mkdir()
    settings = base / "user-settings" / "@jupyterlab" / "apputils-extension"
    settings.mkdir(parents=True)
    # no news, no update check, no toasts
    (settings / "notification.jupyterlab-settings").write_text(
        json.dumps({"fetchNews": "false", "checkForUpdates": False, "doNotDisturbMode": True}))
    tracker = base / "user-settings" / "@jupyterlab" / "notebook-extension"
    tracker.mkdir(parents=True)
    (tracker / "tracker.jupyterlab-settings").write_text(json.dumps({"autoStartDefaultKernel": True}))
    config = base / "config"
    config.mkdir()
    # and the server neither serves news nor checks for updates; no language servers or terminals (faster start)
    (config / "jupyter_server_config.json").write_text(json.dumps({
        "LabApp": {"news_url": None,
                   "check_for_updates_class": "jupyterlab.handlers.announcements.NeverCheckForUpdate"},
        "ServerApp": {"jpserver_extensions": {"jupyter_lsp": False, "jupyter_server_terminals": False},
                      "terminals_enabled": False}}))
    env = dict(os.environ)
    env.update(JUPYTER_CONFIG_DIR=str(config), JUPYTER_DATA_DIR=str(base / "data"),
               JUPYTER_RUNTIME_DIR=str(base / "runtime"), JUPYTERLAB_SETTINGS_DIR=str(base / "user-settings"),
               JUPYTERLAB_WORKSPACES_DIR=str(base / "workspaces"), JUPYTER_PLATFORM_DIRS="1",
               PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), env.get("PYTHONPATH", "")) if p),
               PYTHONDONTWRITEBYTECODE="1")
    env.pop("JUPYTER_TOKEN", None)
    port = _free_port()
    url = f"http://127.0.0.1:{port}"
    log = base / "jupyterlab.log"
    cmd = [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1", f"--port={port}",
           "--ServerApp.port_retries=0", "--IdentityProvider.token=", "--ServerApp.password=",
           "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={notebooks}",
           "--ServerApp.open_browser=False"]
    with open(log, "wb") as out:
        process = subprocess.Popen(cmd, cwd=notebooks, env=env, stdout=out, stderr=subprocess.STDOUT,
                                   start_new_session=True)
    lab = Lab(url, notebooks, log, process)
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        if process.poll() is not None:
            pytest.fail(f"jupyter lab exited with {process.returncode}:\n{lab.log_tail()}")
        try:
            _request(f"{url}/api/status", timeout=2)
            break
        except OSError:
            if time.monotonic() > deadline:
                _stop(lab)
                pytest.fail(f"jupyter lab did not answer within {START_TIMEOUT:.0f} s:\n{lab.log_tail()}")
            time.sleep(0.25)
    yield lab
    _stop(lab)


def _stop(lab: Lab) -> None:
    """Shut down the kernels this server started, then the server (its own process group)."""
    try:
        for kernel in _request(f"{lab.url}/api/kernels") or []:
            try:
                _request(f"{lab.url}/api/kernels/{kernel['id']}", method="DELETE", timeout=10)
            except OSError:
                pass
    except OSError:
        pass
    process = lab.process
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(timeout=5)


@pytest.fixture(scope="session")
def browser():
    require_browser_stack()
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


@pytest.fixture(scope="session")
def artifacts() -> Path:
    ARTIFACTS.mkdir(exist_ok=True)
    ignore = ARTIFACTS / ".gitignore"
    if not ignore.exists():
        ignore.write_text("*\n")
    return ARTIFACTS

