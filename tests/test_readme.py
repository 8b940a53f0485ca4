"""Every Python block of the README and of the documentation pages (docs/**/*.md) runs, each in a fresh
interpreter (so no block leans on another's state); the README links every manual page, and those pages keep
the README's old section names as their titles (notes written against the README merge into them as text)."""

from __future__ import annotations

import importlib.util
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PAGES = [p for p in PAGES if "_build" not in p.parts and "notebooks" not in p.parts]
BLOCKS = [(page.relative_to(ROOT).as_posix(), i, block) for page in PAGES
          for i, block in enumerate(re.findall(r"^```python\n(.*?)^```", page.read_text(encoding="utf-8"),
                                               re.S | re.M))]
# optional extras a block may need; without them the block must fail on exactly that import
OPTIONAL = ("dask",)
# the manual's pages: the README's former "## In a notebook" subsections, one page each
MANUAL = {"knowledge-base": "The knowledge base", "recipes": "Recipes, steps and hits", "models": "Models",
          "embeddings": "Embeddings and dense retrieval", "evaluating": "Evaluating recipes",
          "entity-graph": "The entity graph and `expand_relations`", "communities": "Communities and reports",
          "global-search": "Global search", "views": "Notebook views", "graphrag": "GraphRAG interop",
          "exports": "Graph exports", "errors": "Errors"}


def test_the_readme_and_docs_have_python_blocks():
    where = {page for page, _, _ in BLOCKS}
    assert "README.md" in where and len(BLOCKS) >= 8
    assert len(where) >= 5  # the manual pages carry most of the examples now


@pytest.mark.parametrize("page,index", [(page, i) for page, i, _ in BLOCKS])
def test_block_runs_in_a_fresh_process(page, index, tmp_path):
    block = next(b for p, i, b in BLOCKS if p == page and i == index)
    done = subprocess.run([sys.executable, "-c", block], cwd=tmp_path, capture_output=True, text=True, timeout=300)
    missing = [m for m in OPTIONAL if re.search(rf"^import {m}\b|^from {m}\b", block, re.M)
               and importlib.util.find_spec(m) is None]
    if missing:
        assert done.returncode != 0 and f"No module named '{missing[0]}'" in done.stderr, done.stderr[-2000:]
    else:
        assert done.returncode == 0, f"{page} block {index + 1} failed:\n{block}\n{done.stderr[-3000:]}"


def test_readme_links_every_manual_page_and_the_pages_keep_the_section_names():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    for slug, title in MANUAL.items():
        page = ROOT / "docs" / "manual" / f"{slug}.md"
        assert f"](docs/manual/{slug}.md)" in readme, slug
        assert page.read_text(encoding="utf-8").splitlines()[0] == f"# {title}"
    toc = (ROOT / "docs" / "manual" / "index.md").read_text(encoding="utf-8")
    assert all(re.search(rf"^{slug}$", toc, re.M) for slug in MANUAL)


def test_readme_stays_short_and_its_relative_links_resolve():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert len(readme.splitlines()) < 300  # the manual lives in docs/
    for heading in ("## Quick start", "## Install", "## In a notebook", "## Documentation"):
        assert heading in readme
    links = re.findall(r"\]\(((?!https?:|#)[^)\s]+)\)", readme)
    assert links and all((ROOT / link.split("#")[0]).exists() for link in links), links
