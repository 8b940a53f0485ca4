"""Notebooks 03, 05 and 07 as a user shares them: ``jupyter nbconvert --execute --to html``, opened in Chromium
with every request beyond the page itself blocked (no CDN: offline, or any viewer without a widget manager).

Each view must show its static form: visible, with a real size and the content the notebook computed (rows,
nodes, metrics), not an empty widget box. A screenshot of each page and of each view is kept in the test
artifacts (``tests/browser/artifacts/exported-*.png``).
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
# notebook -> (the view's static root, a selector of its content that must be visible, at least how many)
VIEWS = {
    "03_expand_relations": (".crux-expansion-static", ".crux-hit-row", 1),
    "05_global_search": (".crux-coverage-static", ".crux-finding-row", 1),
    "07_evaluation": (".crux-eval-static", "table.crux-eval-summary tr[data-recipe] td", 4),
}
# what else must be drawn inside the view (an SVG or a summary table with numbers)
DRAWN = {"03_expand_relations": ".crux-expansion-svg .crux-node", "05_global_search": ".crux-hierarchy-svg .crux-node",
         "07_evaluation": "table.crux-eval-summary"}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """Each notebook executed and exported once, as the issue's user did (``--execute --to html``)."""
    out = tmp_path_factory.mktemp("exported")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p))
    pages = {}
    for name in VIEWS:
        done = subprocess.run([sys.executable, "-m", "jupyter", "nbconvert", "--execute", "--to", "html",
                               "--output-dir", str(out), f"{name}.ipynb"], cwd=ROOT / "notebooks", env=env,
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-3000:]
        pages[name] = out / f"{name}.html"
    return pages


def _colours(png: bytes) -> int:
    from PIL import Image

    image = Image.open(io.BytesIO(png)).convert("RGB")
    return len(image.getcolors(maxcolors=1 << 20) or ())


@pytest.mark.parametrize("name", list(VIEWS))
def test_exported_notebook_shows_its_view_offline(name, exported, browser, artifacts):
    html = exported[name].read_text(encoding="utf-8")
    # the widget is in the page too (a widget manager online would render it), beside the static form
    assert "application/vnd.jupyter.widget-view+json" in html and "crux-static-export" in html
    root, content, at_least = VIEWS[name]
    page = browser.new_page(viewport={"width": 1280, "height": 900})
    blocked: list[str] = []

    def offline(route):
        if route.request.url.startswith("file:"):
            route.continue_()
        else:
            blocked.append(route.request.url)
            route.abort()

    page.route("**/*", offline)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(exported[name].as_uri(), wait_until="load")
    page.wait_for_timeout(500)  # let the page's widget loader try (and fail) to fetch its script
    view = page.locator(f".crux-static-export {root}").first
    view.scroll_into_view_if_needed()
    assert view.is_visible(), f"{name}: the static view is hidden"
    box = view.bounding_box()
    assert box is not None and box["width"] > 400 and box["height"] > 150, (name, box)
    items = view.locator(content)
    assert items.count() >= at_least, (name, content, items.count())
    for i in range(at_least):
        item_box = items.nth(i).bounding_box()
        assert items.nth(i).is_visible() and item_box and item_box["width"] > 0 and item_box["height"] > 0
        assert items.nth(i).inner_text().strip(), f"{name}: an empty {content}"
    drawn = view.locator(DRAWN[name]).first
    assert drawn.is_visible() and (drawn.bounding_box() or {}).get("height", 0) > 10
    page.screenshot(path=str(artifacts / f"exported-{name}.png"), full_page=True)
    shot = view.screenshot(path=str(artifacts / f"exported-{name}-view.png"))
    assert _colours(shot) > 20, f"{name}: the view's screenshot is (nearly) blank"
    assert all(not url.startswith("file:") for url in blocked)  # only network requests were refused
    page.close()
