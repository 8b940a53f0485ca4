"""Benchmark: ``kb.add_path`` throughput (MB/s) per document format, the share of files read versus skipped,
and offline extraction time on one long document (issue 34).

Data: the reStructuredText help that ships inside the ``cmake`` wheel on PyPI (the ``dev`` extra;
``share/cmake-*/Help``, as bench/techdocs.py). No package installed here ships a documentation set as HTML,
PDF or notebooks, so those are *generated* from the same CMake pages, each by a real library, and the table
says so: HTML by docutils' html5 writer (complete pages: header, styles, body), notebooks by nbformat (one
markdown cell per paragraph, one code cell per literal block), PDFs by matplotlib (text pages of 60 lines).

* throughput: the input files' bytes over the wall time of ``kb.add_path(folder)`` (read, parse, chunk, commit),
  best of ``--repeats``;
* read vs skipped: ``kb.add_path`` on the whole ``share/cmake-*`` folder (Help, Modules, Templates), and with
  ``--baseline PATH`` (a checkout of main, whose add_path read only ``.md``/``.txt``) main's beside it;
* extraction: ``kb.extract_entities()`` (offline model) on one document of ``--long-mb`` MB of CMake help,
  with the old batch (2,000,000 characters: the whole source in one call) and the new default (200,000), in one run.

    .venv/bin/python -m bench.ingest_formats            # all (a few minutes)
    .venv/bin/python -m bench.ingest_formats --small    # 40 Help/command pages, 0.3 MB extraction (about 40 s)
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import crux_nb  # noqa: E402
from bench._common import OUT_DIR, load_average, machine_info, markdown_table, write_summary, write_text  # noqa: E402

SOURCE_DIRS = ("command", "manual")  # the pages bench/techdocs.py uses
PDF_FILES = 60  # matplotlib writes about 10 pages a second: a sample of the pages
SMALL_PAGES, SMALL_PDF_FILES = 40, 10
PDF_LINES = 60
_COUNT = '''
import json, sys, warnings
warnings.simplefilter("ignore")
import crux_nb
from pathlib import Path
root = Path(sys.argv[1])
files = [p for p in root.rglob("*") if p.is_file()]
try:
    added = crux_nb.knowledge_base(id="base").add_path(root)
except Exception as exc:
    added = []
print(json.dumps({"files": len(files), "read": len(added)}))
'''


def cmake_share() -> Path | None:
    try:
        import cmake
    except ImportError:
        return None
    found = sorted(Path(cmake.__file__).parent.glob("data/share/cmake-*"))
    return found[-1] if found else None


def rst_pages(share: Path, small: bool) -> list[Path]:
    dirs = SOURCE_DIRS[:1] if small else SOURCE_DIRS
    pages = sorted(p for d in dirs for p in (share / "Help" / d).glob("*.rst"))
    return pages[:SMALL_PAGES] if small else pages


def write_html(pages: list[Path], out: Path) -> None:
    from docutils.core import publish_string

    for page in pages:
        html = publish_string(page.read_text(encoding="utf-8"), writer_name="html5",
                              settings_overrides={"report_level": 5, "halt_level": 5, "output_encoding": "utf-8",
                                                  "warning_stream": open(os.devnull, "w")})
        (out / page.with_suffix(".html").name).write_bytes(html)


def write_notebooks(pages: list[Path], out: Path) -> None:
    import nbformat

    for page in pages:
        cells, text = [], page.read_text(encoding="utf-8")
        for block in text.split("\n\n"):
            if not block.strip():
                continue
            literal = block.startswith("  ") and cells and cells[-1].source.rstrip().endswith("::")
            cells.append(nbformat.v4.new_code_cell(block) if literal else nbformat.v4.new_markdown_cell(block))
        nbformat.write(nbformat.v4.new_notebook(cells=cells), out / page.with_suffix(".ipynb").name)


def write_pdfs(pages: list[Path], out: Path, count: int) -> None:
    from tests.formats_fixtures import write_pdf

    for page in pages[:count]:
        lines = page.read_text(encoding="utf-8").splitlines()
        chunks = ["\n".join(lines[i:i + PDF_LINES]) for i in range(0, len(lines), PDF_LINES)] or [""]
        write_pdf(out / page.with_suffix(".pdf").name, chunks)


def throughput(folder: Path, repeats: int) -> dict:
    size = sum(p.stat().st_size for p in folder.rglob("*") if p.is_file())
    best, kb = float("inf"), None
    for _ in range(repeats):
        kb = crux_nb.knowledge_base(id="bench")
        started = time.perf_counter()
        added = kb.add_path(folder, progress=False)
        best = min(best, time.perf_counter() - started)
    return {"files": len(added), "skipped": len(added.skipped), "mb": size / 1e6, "seconds": best,
            "mb_per_s": size / 1e6 / best, "text_chars": int(kb.documents["n_chars"].sum()),
            "chunks": len(kb.chunks), "sections": len(kb.parents)}


def shares(share: Path, baseline: Path | None, small: bool) -> tuple[list[list], float, float | None]:
    import warnings

    folder = share / "Help" / "command" if small else share
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        added = crux_nb.knowledge_base(id="all").add_path(folder, progress=False)
    total = len(added) + len(added.skipped)
    reasons: dict[str, int] = {}
    for s in added.skipped:
        key = s.reason if not s.reason.startswith("type ") else "a format crux_nb does not read"
        reasons[key] = reasons.get(key, 0) + 1
    rows = [["this branch", total, len(added), f"{len(added) / total:.1%}", len(added.skipped),
             "; ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])) or "none"]]
    if baseline is None or not (baseline / "crux_nb").is_dir():
        return rows, len(added) / total, None
    # cwd: the baseline checkout (python -c puts the working directory first on sys.path)
    env = {**os.environ, "PYTHONPATH": str(baseline)}
    base = json.loads(subprocess.run([sys.executable, "-c", _COUNT, str(folder)], env=env, capture_output=True,
                                     text=True, check=True, cwd=baseline).stdout)
    rows.insert(0, ["main (baseline)", base["files"], base["read"], f"{base['read'] / base['files']:.1%}",
                    base["files"] - base["read"], "not reported (dropped in silence)"])
    return rows, len(added) / total, base["read"] / base["files"]


def extraction(pages: list[Path], megabytes: float) -> list[list]:
    text, parts = "", []
    for page in pages:
        parts.append(page.read_text(encoding="utf-8"))
        if sum(map(len, parts)) >= megabytes * 1e6:
            break
    text = "\n\n".join(parts)[: int(megabytes * 1e6)]
    kb = crux_nb.knowledge_base(id="long")
    kb.add_text("long.rst", text, format="text")
    rows = []
    for label, batch in (("old: whole source per call", 2_000_000), ("new default", None)):
        fresh = crux_nb.knowledge_base(id="long")
        fresh.add_text("long.rst", text, format="text")
        started = time.perf_counter()
        result = fresh.extract_entities(batch_chars=batch, progress=False)
        rows.append([label, f"{len(text) / 1e6:.2f}", result.calls, f"{time.perf_counter() - started:.1f}",
                     result.entities])
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help=f"{SMALL_PAGES} Help/command pages, no extraction")
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--long-mb", type=float, default=1.0)
    parser.add_argument("--baseline", type=Path, help="a checkout of main: its add_path on the same folder, side by side")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/ingest_formats[_small].md)")
    args = parser.parse_args(argv)
    out = args.out or OUT_DIR / ("ingest_formats_small.md" if args.small else "ingest_formats.md")
    share = cmake_share()
    if share is None:
        print("cmake is not installed (the dev extra): nothing to measure")
        return 0
    pages = rst_pages(share, args.small)
    rows, summary = [], []
    pdf_files = SMALL_PDF_FILES if args.small else PDF_FILES
    with tempfile.TemporaryDirectory() as tmp:
        folders = {"reStructuredText (shipped in the cmake wheel)": Path(tmp) / "rst",
                   "HTML (generated: docutils html5)": Path(tmp) / "html",
                   "Jupyter notebook (generated: nbformat)": Path(tmp) / "ipynb",
                   f"PDF (generated: matplotlib, first {pdf_files} pages)": Path(tmp) / "pdf",
                   "Markdown (the HTML read as Markdown, for scale)": Path(tmp) / "md"}
        for folder in folders.values():
            folder.mkdir()
        for page in pages:
            (Path(tmp) / "rst" / page.name).write_bytes(page.read_bytes())
        write_html(pages, Path(tmp) / "html")
        write_notebooks(pages, Path(tmp) / "ipynb")
        write_pdfs(pages, Path(tmp) / "pdf", pdf_files)
        from crux_nb.store.readers.html import html_to_markdown

        for page in (Path(tmp) / "html").iterdir():
            (Path(tmp) / "md" / page.with_suffix(".md").name).write_text(html_to_markdown(page.read_bytes()))
        for label, folder in folders.items():
            r = throughput(folder, args.repeats)
            rows.append([label, r["files"], f"{r['mb']:.2f}", f"{r['seconds']:.2f}", f"{r['mb_per_s']:.2f}",
                         f"{r['text_chars'] / 1e6:.2f}", r["sections"], r["chunks"]])
            summary.append({"measure": f"add_path throughput (MB/s), {label.split(' (')[0]}", "ours": r["mb_per_s"]})
            print(rows[-1], flush=True)
    text = ["## Results", "", f"Pages: CMake's help, {'Help/command' if args.small else 'Help/command + Help/manual'} "
            f"({len(pages)} reStructuredText files from the cmake wheel). Best of {args.repeats}; "
            f"load average {load_average()}.", "",
            markdown_table(["format", "files", "input MB", "add_path s", "MB/s", "text M chars", "sections", "chunks"],
                           rows)]
    share_rows, read_share, base_share = shares(share, args.baseline, args.small)
    where = "Help/command" if args.small else f"the whole {share.name} folder (Help, Modules, Templates)"
    text += ["", f"Files read vs skipped: kb.add_path on {where}", "",
             markdown_table(["code", "files", "read", "share read", "skipped", "skipped, with reasons"], share_rows)]
    summary.append({"measure": "share of files add_path reads (%)", "ours": 100 * read_share,
                    "baseline": None if base_share is None else 100 * base_share,
                    "baseline_name": None if base_share is None else "main's add_path (.md/.txt only)"})
    print(share_rows, flush=True)
    if not args.small:
        ext = extraction(pages, args.long_mb)
        text += ["", f"Offline extraction of one long document ({args.long_mb} MB of CMake help as one source), "
                     "old batch against the new default, same code, one run", "",
                 markdown_table(["batch", "MB", "calls", "seconds", "entities"], ext)]
        summary.append({"measure": f"extract_entities on one {args.long_mb} MB source (s)", "ours": float(ext[1][3]),
                        "baseline": float(ext[0][3]), "baseline_name": "the whole source in one call (2,000,000 chars)",
                        "target": "ratio < 1", "verdict": "pass" if float(ext[1][3]) < float(ext[0][3]) else "miss"})
        print(ext, flush=True)
    text += ["", f"Machine: {machine_info(['docutils', 'pypdf', 'beautifulsoup4', 'nbformat'])}"]
    path = write_text(out, "\n".join(text) + "\n")
    write_summary(path, "ingest_formats", summary)
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
