"""``make demo``: build the sample knowledge base, run a recipe, execute the quickstart notebook."""

from __future__ import annotations

import sys
import time
from pathlib import Path

from .datasets import load_sample
from .retrieval import retrieve

ROOT = Path(__file__).resolve().parents[1]


def run_notebook(source: Path, target: Path) -> Path:
    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    NotebookClient(notebook, timeout=300, kernel_name="python3", resources={"metadata": {"path": str(source.parent)}}).execute()
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main() -> int:
    t0 = time.perf_counter()
    kb = load_sample()
    print(f"{kb}  (built in {time.perf_counter() - t0:.2f} s)")
    recipe = kb.recipe(steps=[retrieve(limit=8)])
    hits, trace = recipe.retrieve_with_trace("release planning")
    print(f"\n{recipe}\nquery: 'release planning'\n")
    print(hits.to_frame()[["rank", "score", "ref", "section"]].to_string(index=False))
    print(f"\n{trace}")
    source = ROOT / "notebooks" / "01_quickstart.ipynb"
    if source.exists():
        target = run_notebook(source, ROOT / "out" / "01_quickstart.ipynb")
        print(f"\nexecuted quickstart notebook written to {target.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
