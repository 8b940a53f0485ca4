"""Smoke test for ``bench/global_search.py``: the question file is well formed, and the ``--small`` run
(3 questions, detail='detailed') finishes with a summary table whose numbers agree with each other and
with the per-question rows.

Whether adaptive meets the target is reported by the benchmark (PASS/MISS), never asserted here; what is
asserted is that the verdict follows from the reported numbers.
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
SCRIPT = ROOT / "bench" / "global_search.py"
QUESTIONS = ROOT / "bench" / "carol_global_questions.csv"
SHARED_DATA = ROOT.parent / "shared" / "data"

SUMMARY = ["detail", "questions", "calls all", "calls adaptive", "map calls adaptive", "rating calls adaptive",
           "input chars all", "input chars adaptive", "ratio", "overlap@10", "target"]
PER_QUESTION = ["id", "detail", "calls all", "chars all", "rate calls ad", "map calls ad", "rate chars ad",
                "map chars ad", "chars ad", "ratio", "reports all/ad", "hits all/ad", "overlap@10",
                "overlap@10 (target)", "rated >= 50", "root children rated"]
SMALL_IDS = ["g01", "g02", "g03"]
MAX_RATIO, MIN_OVERLAP = 0.5, 0.8

pytestmark = pytest.mark.shared_data


# ------------------------------------------------------------ question file
def test_question_file_shape():
    with open(QUESTIONS, newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        rows = list(reader)
    assert reader.fieldnames == ["id", "question"]
    assert len(rows) >= 12
    ids = [r["id"] for r in rows]
    assert len(set(ids)) == len(ids)
    assert ids[:3] == SMALL_IDS
    assert all(re.fullmatch(r"g\d\d", i) for i in ids), ids
    assert all(r["question"].strip().endswith("?") for r in rows)
    assert len({r["question"].strip().lower() for r in rows}) == len(rows)


# ------------------------------------------------------------- table parsing
def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(cell: str) -> float:
    """A table number ("12,345.6", "0.382"); NaN for "-"; ValueError otherwise."""
    return math.nan if cell == "-" else float(cell.replace(",", ""))


def section_table(text: str, title: str, columns: list[str]) -> list[dict[str, str]]:
    """Rows of the first table under ``## {title}`` (raises AssertionError when missing or malformed)."""
    match = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not match:
        raise AssertionError(f"no '## {title}' section")
    lines, started = [], False
    for line in match.group(1).splitlines():
        if line.startswith("|"):
            lines.append(line)
            started = True
        elif started:
            break
    if len(lines) < 3:
        raise AssertionError(f"no table rows under '## {title}'")
    if _cells(lines[0]) != columns:
        raise AssertionError(f"columns {_cells(lines[0])} != {columns}")
    if not re.fullmatch(r"\|[ :\-|]+\|", lines[1].strip()):
        raise AssertionError(f"second line is not a Markdown rule: {lines[1]!r}")
    rows = []
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(columns):
            raise AssertionError(f"row has {len(cells)} cells: {line!r}")
        rows.append(dict(zip(columns, cells)))
    return rows


def table_problems(text: str, *, details: tuple[str, ...] = ("detailed",), questions: int = 3) -> list[str]:
    """Everything wrong with the summary and per-question tables, checked against each other."""
    try:
        summary = section_table(text, "Summary", SUMMARY)
        per_q = section_table(text, "Per question", PER_QUESTION)
    except AssertionError as exc:
        return [str(exc)]
    problems = []
    by_detail = {r["detail"]: r for r in summary}
    problems += [f"missing summary row {d!r}" for d in details if d not in by_detail]
    for detail, row in by_detail.items():
        try:
            v = {k: _num(row[k]) for k in SUMMARY[1:-1]}
        except ValueError as exc:
            problems.append(f"{detail}: not a number ({exc})")
            continue
        if v["questions"] != questions:
            problems.append(f"{detail}: {v['questions']} questions (want {questions})")
        if not v["calls all"] >= 1 or not v["input chars all"] > 0:
            problems.append(f"{detail}: scan all made no call or read no input")
        if not math.isclose(v["calls adaptive"], v["map calls adaptive"] + v["rating calls adaptive"], abs_tol=0.11):
            problems.append(f"{detail}: calls adaptive {v['calls adaptive']} != map + rating calls")
        if not v["rating calls adaptive"] >= 1:
            problems.append(f"{detail}: adaptive made no rating call")
        if not math.isclose(v["ratio"], v["input chars adaptive"] / v["input chars all"], abs_tol=6e-4):
            problems.append(f"{detail}: ratio {v['ratio']} != input chars adaptive / all")
        if not (math.isnan(v["overlap@10"]) or 0.0 <= v["overlap@10"] <= 1.0):
            problems.append(f"{detail}: overlap@10 {v['overlap@10']} not in [0, 1]")
        meets = v["ratio"] <= MAX_RATIO and v["overlap@10"] >= MIN_OVERLAP
        if row["target"] != ("PASS" if meets else "MISS"):
            problems.append(f"{detail}: target {row['target']!r} does not follow from ratio {v['ratio']} "
                            f"and overlap {v['overlap@10']}")
        rows = [r for r in per_q if r["detail"] == detail]
        if len(rows) != questions:
            problems.append(f"{detail}: {len(rows)} per-question rows (want {questions})")
            continue
        try:
            chars_all = [_num(r["chars all"]) for r in rows]
            chars_ad = [_num(r["chars ad"]) for r in rows]
            overlaps = [_num(r["overlap@10"]) for r in rows]
            for r in rows:
                if _num(r["chars ad"]) != _num(r["rate chars ad"]) + _num(r["map chars ad"]):
                    problems.append(f"{r['id']}/{detail}: chars ad != rate chars + map chars")
                if not math.isclose(_num(r["ratio"]), _num(r["chars ad"]) / _num(r["chars all"]), abs_tol=6e-4):
                    problems.append(f"{r['id']}/{detail}: ratio != chars ad / chars all")
                if not (math.isnan(_num(r["overlap@10"])) or 0.0 <= _num(r["overlap@10"]) <= 1.0):
                    problems.append(f"{r['id']}/{detail}: overlap@10 not in [0, 1]")
        except (ValueError, ZeroDivisionError) as exc:
            problems.append(f"{detail}: bad per-question number ({exc})")
            continue
        valid = [o for o in overlaps if not math.isnan(o)]
        for name, got, want in (("input chars all", v["input chars all"], sum(chars_all) / len(chars_all)),
                                ("input chars adaptive", v["input chars adaptive"], sum(chars_ad) / len(chars_ad)),
                                ("overlap@10", v["overlap@10"], sum(valid) / len(valid) if valid else math.nan)):
            if not (math.isclose(got, want, abs_tol=0.051 if "chars" in name else 6e-4)
                    or (math.isnan(got) and math.isnan(want))):
                problems.append(f"{detail}: summary {name} {got} is not the mean of the per-question rows ({want})")
    return problems


# --------------------------------------------------------------- the run
@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "global_search_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    require_system(SHARED_DATA.is_dir(), f"shared data not found at {SHARED_DATA}")
    return run_small(SCRIPT, small_out)


def test_small_run_writes_consistent_tables(small_report):
    proc, text = small_report
    assert table_problems(text) == []
    assert [r["id"] for r in section_table(text, "Per question", PER_QUESTION)] == SMALL_IDS
    assert [r["detail"] for r in section_table(text, "Summary", SUMMARY)] == ["detailed"]
    assert "## Summary" in proc.stdout  # the same report is printed


def test_small_run_reports_verdict_and_hierarchy(small_report):
    _, text = small_report
    assert re.search(r"^- `detailed`: adaptive uses \d\.\d{3} .* Verdict: (PASS|MISS)\.$", text, flags=re.M)
    match = re.search(r"^- (\d+) communities: (\d+) leaves, (\d+) parents", text, flags=re.M)
    assert match, "hierarchy shape missing"
    total, leaves, parents = map(int, match.groups())
    assert total == leaves + parents and leaves >= 1 and parents >= 1
    assert re.search(r"^- The root has \d+ children", text, flags=re.M)
    assert "## Rating distribution" in text and "## Could a perfect rater" in text


def test_table_check_can_fail(small_report):
    _, text = small_report
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| detailed "))
    cells = _cells(lines[row])

    def with_cell(column: str, value: str) -> str:
        changed = list(cells)
        changed[SUMMARY.index(column)] = value
        return "\n".join(lines[:row] + ["| " + " | ".join(changed) + " |"] + lines[row + 1:])

    flipped = "MISS" if cells[-1] == "PASS" else "PASS"
    for column, bad, expected in (("ratio", "0.999" if cells[8] != "0.999" else "0.001", "ratio"),
                                  ("overlap@10", "1.5", "not in [0, 1]"),
                                  ("overlap@10", "0.999" if cells[9] != "0.999" else "0.001", "not the mean"),
                                  ("target", flipped, "does not follow"),
                                  ("calls adaptive", "99.0", "map + rating"),
                                  ("questions", "4", "questions (want 3)"),
                                  ("input chars all", "x", "not a number")):
        assert any(expected in p for p in table_problems(with_cell(column, bad))), (column, bad)
    dropped = table_problems("\n".join(lines[:row] + lines[row + 1:]))  # the --small table has one row
    assert any("missing summary row" in p or "no table rows under '## Summary'" in p for p in dropped), dropped
    assert any("missing summary row 'overview'" in p for p in table_problems(text, details=("detailed", "overview")))
    assert table_problems(text.replace("## Summary", "## Something")) == ["no '## Summary' section"]
    q_row = next(i for i, line in enumerate(lines) if line.startswith("| g01 "))
    assert any("per-question rows" in p for p in table_problems("\n".join(lines[:q_row] + lines[q_row + 1:])))


def test_missing_shared_data_exits_2(tmp_path):
    """The script looks for ../shared/data next to the project; a copy of it elsewhere finds none."""
    bench = tmp_path / "project" / "bench"
    bench.mkdir(parents=True)
    for name in ("global_search.py", "_common.py", "carol_global_questions.csv"):
        (bench / name).write_bytes((ROOT / "bench" / name).read_bytes())
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(bench / "global_search.py"), "--small"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "shared data not found" in proc.stderr


def test_small_run_writes_a_summary(small_report, small_out):
    """Per detail: input chars (ratio target) and overlap@10 (own target) with the summary table's figures,
    each verdict as in the report's verdict line; calls for information."""
    _, text = small_report
    rows = load_summary(small_out)
    assert summary_problems(rows, "global_search") == []
    table = section_table(text, "Summary", SUMMARY)[0]
    got = by_measure(rows)
    chars = got["input chars per question, adaptive, detail=detailed"]
    overlap = got["overlap@10 with scan all's top 10 (share), adaptive, detail=detailed"]
    calls = got["model calls per question, adaptive, detail=detailed"]
    assert len(rows) == 6  # three for crux_nb's tree, three for the GraphRAG index
    assert sum(r["measure"].endswith(", graphrag index") for r in rows) == 3
    assert (chars["target"], overlap["target"], calls["verdict"]) == (f"ratio <= {MAX_RATIO:g}",
                                                                      f"ours >= {MIN_OVERLAP:g}", "info")
    assert math.isclose(chars["ours"], _num(table["input chars adaptive"]), abs_tol=0.051)
    assert math.isclose(chars["baseline"], _num(table["input chars all"]), abs_tol=0.051)
    assert math.isclose(chars["ratio"], _num(table["ratio"]), abs_tol=6e-4)
    assert math.isclose(overlap["ours"], _num(table["overlap@10"]), abs_tol=6e-4)
    line = re.search(r"^- `detailed`: .*$", text, flags=re.M).group(0)
    halves = re.findall(r": (ok|miss)[;)]", line)
    assert [chars["verdict"], overlap["verdict"]] == [("pass" if h == "ok" else "miss") for h in halves], line
    both = "PASS" if chars["verdict"] == overlap["verdict"] == "pass" else "MISS"
    assert table["target"] == both
