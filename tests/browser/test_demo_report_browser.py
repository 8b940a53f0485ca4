"""The demo's static report (``out/demo.html``) in Chromium: both views render, nothing fails to load, and a
screenshot is kept as a test artifact; ``docs/demo.png`` (the README's picture) must show what the code produces
today.

``docs/demo.json`` records, for the committed ``docs/demo.png``, the page's visible text when it was taken and the
picture's SHA-256. The test renders today's report and fails when its text differs (the picture is stale) or
when the picture is not the one the record was made with. To regenerate both:
``CRUX_UPDATE_PICTURES=1 python -m pytest tests/browser/test_demo_report_browser.py``.
"""

from __future__ import annotations

import difflib
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
PICTURE, RECORD = ROOT / "docs" / "demo.png", ROOT / "docs" / "demo.json"
REGENERATE = "CRUX_UPDATE_PICTURES=1 python -m pytest tests/browser/test_demo_report_browser.py"


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    done = subprocess.run([sys.executable, "-m", "crux_nb.demo", "--out", str(out), "--no-notebooks"],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return out / "demo.html"


@pytest.fixture(scope="module")
def rendered(report, browser):
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    failed: list[str] = []
    page.on("requestfailed", lambda request: failed.append(request.url))
    page.on("pageerror", lambda error: failed.append(str(error)))
    page.goto(report.as_uri())
    yield page, failed
    page.close()


def visible_text(page) -> str:
    """What a reader sees: the page's rendered text, one line per line, runs of blanks folded."""
    lines = (" ".join(line.split()) for line in page.inner_text("body").splitlines())
    return "\n".join(line for line in lines if line)


def test_demo_report_renders_in_chromium(rendered, artifacts):
    page, failed = rendered
    assert page.locator(".crux-expansion-svg").count() >= 1
    assert page.locator(".crux-node-badge").count() >= 1
    assert page.locator("section.crux-demo-section").count() == 2
    box = page.locator(".crux-expansion-svg").first.bounding_box()
    assert box is not None and box["width"] > 100 and box["height"] > 50
    shot = artifacts / "demo.png"
    page.screenshot(path=str(shot), full_page=True)
    assert shot.stat().st_size > 10_000
    assert not failed


def test_readme_picture_shows_what_the_demo_produces_today(rendered, artifacts):
    page, _ = rendered
    text = visible_text(page)
    # the run's key numbers are on the page, so a stale picture shows other numbers than today's
    assert re.search(r"^reports\t?\s*\d+\s+\d+", text, re.M) and re.search(r"input chars [\d,]+", text)
    if os.environ.get("CRUX_UPDATE_PICTURES") == "1":
        page.screenshot(path=str(PICTURE), full_page=True)
        RECORD.write_text(json.dumps({"png_sha256": hashlib.sha256(PICTURE.read_bytes()).hexdigest(),
                                      "text": text.splitlines()}, indent=1, ensure_ascii=False) + "\n",
                          encoding="utf-8")
    record = json.loads(RECORD.read_text(encoding="utf-8"))
    assert hashlib.sha256(PICTURE.read_bytes()).hexdigest() == record["png_sha256"], (
        f"docs/demo.png is not the picture docs/demo.json was recorded with; regenerate both: {REGENERATE}")
    diff = list(difflib.unified_diff(record["text"], text.splitlines(), "docs/demo.png (recorded)", "today",
                                     lineterm="", n=0))
    assert not diff, (f"docs/demo.png is stale: the demo page now reads differently; regenerate it: {REGENERATE}\n"
                      + "\n".join(diff[:40]))
