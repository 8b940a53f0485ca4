"""The demo's static report (``out/demo.html``) in Chromium: both views render, nothing fails to load, and a
screenshot is kept as a test artifact (``docs/demo.png`` in the README is such a screenshot)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]


def test_demo_report_renders_in_chromium(browser, artifacts, tmp_path):
    done = subprocess.run([sys.executable, "-m", "crux_nb.demo", "--out", str(tmp_path), "--no-notebooks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("pageerror", lambda error: failed.append(str(error)))
    page.goto((tmp_path / "demo.html").as_uri())
    assert page.locator(".crux-expansion-svg").count() >= 1
    assert page.locator(".crux-node-badge").count() >= 1
    assert page.locator("section.crux-demo-section").count() == 2
    box = page.locator(".crux-expansion-svg").first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    shot = artifacts / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert not failed
    page.close()
