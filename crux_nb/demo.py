"""``make demo``: the whole crux_nb story on the bundled sample corpus, offline.

1. build the sample knowledge base and its entity graph;
2. ``retrieve`` alone versus ``retrieve`` + ``expand_relations`` on the labelled sample
   questions, and the question where expansion helps most, with each added hit's
   seed -> path -> reason;
3. communities and their reports;
4. ``global_search`` scan-all versus adaptive for "What changed in the launch plan?";
5. a self-contained static HTML report (``out/demo.html``) with the expansion and coverage
   views, and the executed gallery notebooks.

Everything printed is deterministic (no timings), so a test pins its key lines.
"""

from __future__ import annotations

import argparse
import html
import sys
from collections.abc import Sequence
from pathlib import Path

from .demo_story import heading, run_story

NOTEBOOKS = ("01_quickstart.ipynb", "03_expand_relations.ipynb", "05_global_search.ipynb")
ROOT = Path(__file__).resolve().parents[1]


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m crux_nb.demo", description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=Path("out"), help="folder for demo.html and the notebooks")
    parser.add_argument("--no-notebooks", action="store_true", help="skip executing the gallery notebooks")
    return parser.parse_args(argv)


def page(sections: Sequence[tuple[str, str]]) -> str:
    """One self-contained HTML page: inline CSS only, no script, no network."""
    body = "\n".join(f'<section class="crux-demo-section"><h2>{html.escape(title)}</h2>\n{inner}\n</section>'
                     for title, inner in sections)
    return ("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<title>crux_nb demo</title><style>body{font-family:system-ui,sans-serif;margin:24px;max-width:1200px}"
            "h1{font-size:1.5em}h2{font-size:1.2em;border-bottom:1px solid #ddd}</style></head>\n"
            f"<body><h1>crux_nb demo: the sample corpus</h1>\n{body}\n</body></html>\n")


def _kernel_manager(folder: str):
    """A kernel on IPC sockets in ``folder`` where the OS has them: a local run needs no TCP port, and the
    kernel then has no reason to warn that TCP traffic is unencrypted (ipykernel does, once per notebook)."""
    import os

    from jupyter_client.manager import KernelManager

    if os.name != "posix":
        return KernelManager(kernel_name="python3")
    return KernelManager(kernel_name="python3", transport="ipc", ip=os.path.join(folder, "k"))


def run_notebook(source: Path, target: Path) -> Path:
    import tempfile

    import nbformat
    from nbclient import NotebookClient

    notebook = nbformat.read(source, as_version=4)
    # a short folder: a unix socket's path is limited to about 100 bytes
    with tempfile.TemporaryDirectory(prefix="crux-kernel-") as folder:
        km = _kernel_manager(folder)
        try:
            NotebookClient(notebook, timeout=300, kernel_name="python3", km=km,
                           resources={"metadata": {"path": str(source.parent)}}).execute()
        finally:  # a kernel manager passed in is ours to stop
            if km.has_kernel:
                km.shutdown_kernel(now=True)
    target.parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, target)
    return target


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)

    sections = run_story(print)
    args.out.mkdir(parents=True, exist_ok=True)
    report = args.out / "demo.html"
    report.write_text(page(sections), encoding="utf-8")
    print(heading("Written"))
    print(f"static report     {report}")
    source_dir = ROOT / "notebooks"
    if not args.no_notebooks and source_dir.is_dir():
        for name in NOTEBOOKS:
            if (source_dir / name).exists():
                print(f"executed notebook {run_notebook(source_dir / name, args.out / name)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
