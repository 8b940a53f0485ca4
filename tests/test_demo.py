"""``make demo`` (``python -m crux_nb.demo``): the whole story prints its key lines, deterministically, and
writes a self-contained static report with the expansion and coverage views."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
KEY_LINES = (
    "== 1. The knowledge base and its entity graph",
    "== 2. Graph expansion on 37 labelled questions",
    "retrieve(3) + expand(2)",
    "added hits: seed -> path -> reason",
    "== 3. Communities and their reports",
    "PrepareResult(",
    "== 4. Global search: 'What changed in the launch plan?'",
    "adaptive keeps",
    "static report",
)


def run_demo(out: Path) -> str:
    done = subprocess.run([sys.executable, "-m", "crux_nb.demo", "--out", str(out), "--no-notebooks"], cwd=ROOT,
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


@pytest.fixture(scope="module")
def demo(tmp_path_factory):
    out = tmp_path_factory.mktemp("demo")
    return out, run_demo(out)


def test_demo_prints_the_whole_story(demo):
    _, text = demo
    for line in KEY_LINES:
        assert line in text, line
    # every added hit is printed with its seed and the edge types of its path
    added = text.split("added hits: seed -> path -> reason")[1].split("== 3.")[0]
    assert re.search(r"chunk:\S+ +chunk:\S+ +(mentions|related|sequence|hierarchy)", added)
    # scan all and adaptive each report coverage, calls and input characters
    search = text.split("== 4.")[1]
    assert re.search(r"^ *all +exact +\d+ of \d+ +\d+ +\d+", search, re.M)
    assert re.search(r"^ *adaptive +exact +\d+ of \d+ +\d+ +\d+", search, re.M)


def test_demo_report_is_static_html_with_both_views(demo):
    out, _ = demo
    page = (out / "demo.html").read_text(encoding="utf-8")
    assert "crux-expansion-part" in page and "crux-expansion-svg" in page  # the expansion view
    assert "crux-node-badge" in page and "Global search coverage" in page  # the coverage view
    assert "<script" not in page.lower()
    assert not re.search(r"""(src|href)=["']?(https?:)?//""", page)  # nothing loaded from the network


def test_demo_is_deterministic(demo, tmp_path):
    out, first = demo
    second = run_demo(tmp_path)
    assert second.replace(str(tmp_path), "OUT") == first.replace(str(out), "OUT")
    assert (tmp_path / "demo.html").read_bytes() == (out / "demo.html").read_bytes()


def test_demo_input_chars_agree_with_its_report(demo):
    """One definition of a run's input chars: the printed table and the report's coverage view agree."""
    out, text = demo
    row = re.search(r"^ *adaptive +exact +\d+ of \d+ +\d+ +(\d+) ", text.split("== 4.")[1], re.M)
    page = (out / "demo.html").read_text(encoding="utf-8")
    line = re.search(r"input chars ([\d,]+)</div>", page)  # the adaptive-descent line
    actual = re.search(r'<tr data-row="input chars"><th>input chars</th><td>[^<]*</td><td[^>]*>([\d,]+)</td>', page)
    assert row and line and actual
    assert int(row.group(1)) == int(line.group(1).replace(",", "")) == int(actual.group(1).replace(",", ""))


def test_demo_notebooks_run_without_the_kernel_tcp_warning(tmp_path):
    """``make demo`` executes notebooks on IPC kernels: no 'running over TCP without encryption' lines."""
    import nbformat

    source = tmp_path / "tiny.ipynb"
    nbformat.write(nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell("print(6 * 7)")]), source)
    code = ("import sys; from pathlib import Path; from crux_nb.demo import run_notebook; "
            "run_notebook(Path(sys.argv[1]), Path(sys.argv[2]))")
    done = subprocess.run([sys.executable, "-c", code, str(source), str(tmp_path / "out.ipynb")], cwd=ROOT,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert "42" in (tmp_path / "out.ipynb").read_text(encoding="utf-8")
    assert "without encryption" not in done.stderr and "WARNING" not in done.stderr, done.stderr
