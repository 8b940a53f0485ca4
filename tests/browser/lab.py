"""Driving a notebook in the real JupyterLab from the browser tests: write it, start its kernel, open it,
run every cell, and wait until the widget under test shows (shared by every browser test module)."""

from __future__ import annotations

import json
import re
import time
import urllib.request
from contextlib import contextmanager
from pathlib import Path

WAIT_MS = 60_000  # first kernel start and imports can be slow on a busy CI machine


def write_notebook(path: Path, cells: list[str]) -> Path:
    """A minimal nbformat-4 notebook of code cells, with a python3 kernelspec (no kernel dialog)."""
    nb = {"nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"},
                       "language_info": {"name": "python"}},
          "cells": [{"cell_type": "code", "id": f"cell-{i}", "metadata": {}, "execution_count": None,
                     "outputs": [], "source": source} for i, source in enumerate(cells)]}
    path.write_text(json.dumps(nb, indent=1))
    return path


def wait_for_file(path: Path, expected: str | None = None, timeout: float = 30.0) -> str:
    """Poll a file the kernel writes until it exists (and holds ``expected``)."""
    deadline = time.monotonic() + timeout
    text = None
    while time.monotonic() < deadline:
        if path.exists():
            text = path.read_text()
            if expected is None or text == expected:
                return text
        time.sleep(0.1)
    raise AssertionError(f"{path.name}: expected {expected!r} within {timeout:.0f} s, last saw {text!r}")


def start_session(url: str, path: str) -> None:
    """Start the notebook's kernel through the REST API; JupyterLab attaches to this session."""
    body = json.dumps({"path": path, "name": path, "type": "notebook", "kernel": {"name": "python3"}}).encode()
    request = urllib.request.Request(f"{url}/api/sessions", data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        response.read()


def wait_for_kernel(url: str, timeout: float = WAIT_MS / 1000) -> None:
    """Poll the REST API until a kernel is idle with a client (the page) connected."""
    deadline = time.monotonic() + timeout
    kernels = None
    while time.monotonic() < deadline:
        try:
            with urllib.request.urlopen(f"{url}/api/kernels", timeout=5) as response:
                kernels = json.loads(response.read())
        except OSError:
            kernels = None
        if kernels and any(k.get("execution_state") == "idle" and k.get("connections", 0) > 0 for k in kernels):
            return
        time.sleep(0.2)
    raise AssertionError(f"no idle, connected kernel within {timeout:.0f} s: {kernels}")


@contextmanager
def notebook_page(jupyter_lab, browser, artifacts, *, name: str, cells: list[str], rows: str, ready: str,
                  height: int, first_wait_ms: int = WAIT_MS):
    """Yield ``(page, events)`` with ``name`` open and every cell run, once ``rows`` show and the ``ready``
    file says so; ``events["dialogs"]`` collects any browser dialog (none should open)."""
    write_notebook(jupyter_lab.notebooks / name, cells)
    start_session(jupyter_lab.url, name)  # the kernel boots while the page loads
    context = browser.new_context(viewport={"width": 1440, "height": height})
    page = context.new_page()
    page.set_default_timeout(WAIT_MS)
    events = {"dialogs": []}

    def on_dialog(dialog):
        events["dialogs"].append(dialog.message)
        dialog.dismiss()

    page.on("dialog", on_dialog)
    try:
        page.goto(f"{jupyter_lab.url}/lab/tree/{name}?reset", wait_until="domcontentloaded")
        page.locator(".jp-NotebookPanel .jp-Cell").first.wait_for()
        wait_for_kernel(jupyter_lab.url)  # started, idle, and the page connected to it
        page.get_by_role("menuitem", name="Run", exact=True).click()
        page.locator(".lm-Menu .lm-Menu-itemLabel", has_text=re.compile(r"^Run All Cells$")).click()
        found = page.locator(rows)
        accept = page.locator(".jp-Dialog .jp-mod-accept")  # "Select Kernel", should the kernel still be starting
        found.or_(accept).first.wait_for(timeout=first_wait_ms)
        if not found.count() and accept.count():
            accept.first.click()
        found.first.wait_for(timeout=first_wait_ms)
        wait_for_file(jupyter_lab.notebooks / ready, "ready", timeout=WAIT_MS / 1000)
        yield page, events
    except Exception:
        page.screenshot(path=str(artifacts / f"{Path(name).stem}_view_failure.png"))
        raise
    finally:
        context.close()
