"""Smoke test for ``bench/expand_quality.py``: the question file matches the book, and the ``--small``
run finishes with a complete results table.

Recall values are reported, never asserted against a target here (the benchmark
itself reports whether expansion lowers Recall@10).
"""

from __future__ import annotations

import csv
import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crux_nb.testing import require_system
from bench_summary import by_measure, load_summary, summary_problems, run_small

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "expand_quality.py"
QUESTIONS = ROOT / "bench" / "carol_questions.csv"
SHARED_DATA = ROOT.parent / "shared" / "data"
BOOK = SHARED_DATA / "christmas-carol" / "a-christmas-carol.txt"

COLUMNS = ["config", "Recall@5", "Recall@10", "mean latency (ms)"]
SMALL_CONFIGS = ("retrieve(10)", "retrieve(5) + expand(5) [default]")
SMALL_IDS = ["d01", "c01", "m01", "d02", "c02", "m02"]

pytestmark = pytest.mark.shared_data


def _normalise(text: str) -> str:
    return " ".join(text.split())


def _book() -> str:
    require_system(BOOK.is_file(), f"shared data not found at {BOOK}")
    return _normalise(BOOK.read_text(encoding="utf-8"))


def _questions() -> list[dict[str, str]]:
    with open(QUESTIONS, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


# ------------------------------------------------------------ question file
def snippet_problems(rows: list[dict[str, str]], book: str) -> list[str]:
    """Every gold snippet that is not exactly one 8-20-word substring of the normalised book."""
    problems = []
    for row in rows:
        snippets = [s for s in row["gold"].split(" || ")]
        if not snippets or any(not s.strip() for s in snippets):
            problems.append(f"{row['id']}: empty gold snippet in {row['gold']!r}")
        for snippet in (_normalise(s) for s in snippets if s.strip()):
            count = book.count(snippet)
            if count != 1:
                problems.append(f"{row['id']}: occurs {count} times: {snippet!r}")
            if not 8 <= len(snippet.split()) <= 20:
                problems.append(f"{row['id']}: {len(snippet.split())} words: {snippet!r}")
    return problems


def test_question_file_shape():
    rows = _questions()
    assert list(rows[0]) == ["id", "question", "gold"]
    assert len(rows) >= 24
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert all(re.fullmatch(r"[dcm]\d\d", i) for i in ids), ids
    assert {i[0] for i in ids[:6]} == {"d", "c", "m"}  # the --small subset mixes every kind
    assert all(r["question"].strip().endswith("?") for r in rows)


def test_every_gold_snippet_occurs_exactly_once_in_the_book():
    assert snippet_problems(_questions(), _book()) == []


def test_snippet_check_can_fail():
    book = _book()
    row = _questions()[0]
    snippet = row["gold"].split(" || ")[0]
    assert snippet_problems([row], book) == []
    altered = {**row, "gold": snippet.replace("uncle", "nephew", 1)}
    assert any("occurs 0 times" in p for p in snippet_problems([altered], book))
    repeated = {**row, "gold": "If these shadows remain unaltered by the Future"}  # 8 words, twice in the book
    assert any("occurs 2 times" in p for p in snippet_problems([repeated], book))
    assert any("empty gold snippet" in p for p in snippet_problems([{**row, "gold": snippet + " || "}], book))
    assert any("words" in p for p in snippet_problems([{**row, "gold": "Marley was dead, to begin with."}], book))


# --------------------------------------------------------------- the run
def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def results_rows(text: str) -> dict[str, dict[str, str]]:
    """The rows of the table under ``## Results`` keyed by config (raises AssertionError when malformed)."""
    match = re.search(r"^## Results\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not match:
        raise AssertionError("no '## Results' section")
    lines = [line for line in match.group(1).splitlines() if line.startswith("|")]
    if len(lines) < 3:
        raise AssertionError("no table rows under '## Results'")
    if _cells(lines[0]) != COLUMNS:
        raise AssertionError(f"columns {_cells(lines[0])} != {COLUMNS}")
    if not re.fullmatch(r"\|[ :\-|]+\|", lines[1].strip()):
        raise AssertionError(f"second line is not a Markdown rule: {lines[1]!r}")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            raise AssertionError(f"row has {len(cells)} cells: {line!r}")
        rows[cells[0]] = dict(zip(COLUMNS, cells))
    return rows


def table_problems(text: str) -> list[str]:
    try:
        rows = results_rows(text)
    except AssertionError as exc:
        return [str(exc)]
    problems = [f"missing row {name!r}" for name in SMALL_CONFIGS if name not in rows]
    for name, row in rows.items():
        for col in ("Recall@5", "Recall@10"):
            try:
                value = float(row[col])
            except ValueError:
                problems.append(f"{name!r} / {col}: not a number: {row[col]!r}")
                continue
            if not (math.isfinite(value) and 0.0 <= value <= 1.0):
                problems.append(f"{name!r} / {col}: {value} not in [0, 1]")
        try:
            latency = float(row["mean latency (ms)"].replace(",", ""))
            if not (math.isfinite(latency) and latency > 0):
                problems.append(f"{name!r}: latency {latency} is not positive")
        except ValueError:
            problems.append(f"{name!r}: latency not a number: {row['mean latency (ms)']!r}")
        try:
            if float(row["Recall@5"]) > float(row["Recall@10"]):
                problems.append(f"{name!r}: Recall@5 > Recall@10")
        except ValueError:
            pass
    return problems


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "expand_quality_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    require_system(SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}")
    return run_small(SCRIPT, small_out, "--repeats", "1")


def test_small_run_writes_a_complete_table(small_report):
    proc, text = small_report
    assert table_problems(text) == []
    assert set(results_rows(text)) == set(SMALL_CONFIGS)
    assert "## Results" in proc.stdout  # the same report is printed


def test_small_run_has_per_question_rows_and_a_verdict(small_report):
    _, text = small_report
    assert re.search(r"^- Expansion lowers Recall@10: (yes|no) ", text, flags=re.M)
    assert re.search(r"Verdict: (PASS|MISS)", text)
    rows = [_cells(line) for line in text.splitlines() if re.match(r"\| [dcm]\d\d ", line)]
    assert [r[0] for r in rows] == SMALL_IDS
    for r in rows:
        assert all(0.0 <= float(v) <= 1.0 for v in r[4:8]), r


def test_table_check_can_fail(small_report):
    _, text = small_report
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| retrieve(10) "))
    cells = _cells(lines[row])
    for bad, expected in (("1.5", "not in [0, 1]"), ("nan", "not in [0, 1]"), ("-", "not a number")):
        broken = "\n".join(lines[:row] + ["| " + " | ".join([cells[0], bad, *cells[2:]]) + " |"] + lines[row + 1:])
        assert any(expected in p for p in table_problems(broken)), bad
    dropped = "\n".join(lines[:row] + lines[row + 1:])
    assert any("missing row" in p for p in table_problems(dropped))
    assert table_problems(text.replace("## Results", "## Something")) == ["no '## Results' section"]


def test_missing_shared_data_exits_2(tmp_path):
    """The script looks for ../shared/data next to the project; a copy of it elsewhere finds none."""
    bench = tmp_path / "project" / "bench"
    bench.mkdir(parents=True)
    for name in ("expand_quality.py", "_common.py", "carol_questions.csv"):
        (bench / name).write_bytes((ROOT / "bench" / name).read_bytes())
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(bench / "expand_quality.py"), "--small"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "shared data not found" in proc.stderr


def test_small_run_writes_a_summary(small_report, small_out):
    """The headline as summary rows: Recall@10 (the target, its verdict as the report's), Recall@5 and latency."""
    _, text = small_report
    rows = load_summary(small_out)
    assert summary_problems(rows, "expand_quality") == []
    table = results_rows(text)
    base, default = table[SMALL_CONFIGS[0]], table[SMALL_CONFIGS[1]]
    got = by_measure(rows)
    assert set(got) == {f"{m}, {SMALL_CONFIGS[1]}" for m in ("Recall@10", "Recall@5", "mean latency per query (ms)")}
    assert all(r["baseline_name"] == "retrieve(10) (same run)" for r in rows)
    r10 = got[f"Recall@10, {SMALL_CONFIGS[1]}"]
    assert r10["target"].startswith("ratio >= 1")
    verdict = re.search(r"Verdict: (PASS|MISS)", text).group(1).lower()
    assert r10["verdict"] == verdict
    for metric in ("Recall@10", "Recall@5"):
        row = got[f"{metric}, {SMALL_CONFIGS[1]}"]
        assert math.isclose(row["ours"], float(default[metric]), abs_tol=6e-4)
        assert math.isclose(row["baseline"], float(base[metric]), abs_tol=6e-4)
    assert all(r["verdict"] == "info" for r in rows if r is not r10)
