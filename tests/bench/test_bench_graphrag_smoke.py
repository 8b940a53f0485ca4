"""Smoke test for ``bench/graphrag_import.py``: the ``--small`` run imports the shared GraphRAG index and
writes complete import and cost tables whose numbers agree with each other.

Timings are reported, never asserted (they depend on the machine).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from crux_nb.testing import require_system
from bench_summary import by_measure, load_summary, summary_problems, run_small

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "graphrag_import.py"
INDEX = ROOT.parent / "shared" / "data" / "graphrag-christmas-carol"

IMPORT_COLUMNS = ["operation", "mean time (ms)", "peak Python allocations (MiB)", "process peak RSS (MiB)"]
IMPORT_ROWS = ["read_graphrag(shared index)", "write_graphrag(imported kb)", "read_graphrag(export)"]
COST_COLUMNS = ["method", "reports mapped", "map calls", "rating calls", "input chars", "input tokens (~chars/4)"]
CRUX_ROWS = [f"crux_nb global_search(scan={s}, detail={d})"
             for s, d in (("all", "overview"), ("all", "detailed"), ("adaptive", "overview"), ("adaptive", "detailed"))]

pytestmark = pytest.mark.shared_data


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _num(cell: str) -> float:
    value = float(cell.replace(",", ""))
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a finite non-negative number: {cell!r}")
    return value


def table(text: str, heading: str, columns: list[str]) -> dict[str, list[str]]:
    """Rows (by first cell) of the first table under ``## heading``; AssertionError when malformed."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not match:
        raise AssertionError(f"no '## {heading}' section")
    lines = [line for line in match.group(1).splitlines() if line.startswith("|")]
    if len(lines) < 3 or _cells(lines[0]) != columns:
        raise AssertionError(f"'{heading}': columns {(_cells(lines[0]) if lines else None)} != {columns}")
    if not re.fullmatch(r"\|[ :\-|]+\|", lines[1].strip()):
        raise AssertionError(f"'{heading}': second line is not a Markdown rule")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(columns):
            raise AssertionError(f"'{heading}': row has {len(cells)} cells: {line!r}")
        rows[cells[0]] = cells
    return rows


def problems(text: str) -> list[str]:
    out = []
    try:
        imports = table(text, "Import", IMPORT_COLUMNS)
        costs = table(text, "Global search cost", COST_COLUMNS)
        counts = table(text, "Import report", ["what", "count"])
    except AssertionError as exc:
        return [str(exc)]
    out += [f"missing import row {r!r}" for r in IMPORT_ROWS if r not in imports]
    for name, cells in imports.items():
        try:
            if not all(_num(c) > 0 for c in cells[1:]):
                out.append(f"{name!r}: a value is not positive")
        except ValueError as exc:
            out.append(f"{name!r}: {exc}")
    out += [f"missing cost row {r!r}" for r in CRUX_ROWS if r not in costs]
    graphrag = [r for r in costs if r.startswith("GraphRAG static global search")]
    if len(graphrag) < 3:
        out.append("fewer than 3 GraphRAG rows")
    for name, cells in costs.items():
        try:
            reports, maps, rates, chars, tokens = (_num(c) for c in cells[1:])
        except ValueError as exc:
            out.append(f"{name!r}: {exc}")
            continue
        if reports <= 0 or maps < 1 or chars <= 0:
            out.append(f"{name!r}: no reports, calls or characters")
        if abs(tokens - chars / 4) > max(1.0, chars * 0.001):
            out.append(f"{name!r}: tokens {tokens} != chars / 4")
        if name.startswith("GraphRAG") and (rates != 0 or maps < math.ceil(chars / 48_000)):
            out.append(f"{name!r}: {maps} windows cannot hold {chars} characters")
        if "scan=all" in name and rates != 0:
            out.append(f"{name!r}: scan all made rating calls")
    try:
        if int(counts["references resolved"][1]) > int(counts["references cited"][1]):
            out.append("more references resolved than cited")
    except (KeyError, ValueError):
        out.append("the import report lacks the reference counts")
    return out


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "graphrag_import_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    require_system(INDEX.is_dir(), f"shared data not found at {INDEX}")
    return run_small(SCRIPT, small_out)


def test_small_run_writes_complete_tables(small_report):
    proc, text = small_report
    assert problems(text) == []
    assert "## Global search cost" in proc.stdout  # the same report is printed
    costs = table(text, "Global search cost", COST_COLUMNS)
    assert costs["GraphRAG static global search, all levels"][1] == "122"
    assert _num(costs["crux_nb global_search(scan=all, detail=detailed)"][1]) == 98


def test_small_run_reports_the_import(small_report):
    _, text = small_report
    counts = {k: v[1] for k, v in table(text, "Import report", ["what", "count"]).items()}
    assert (counts["chunks"], counts["communities"], counts["findings"]) == ("42", "122", "847")
    assert (counts["references cited"], counts["references resolved"]) == ("3814", "3805")
    assert "communities: ready" in text


def test_table_check_can_fail(small_report):
    _, text = small_report
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| GraphRAG static global search, all levels"))
    cells = _cells(lines[row])
    broken = "\n".join(lines[:row] + ["| " + " | ".join([cells[0], cells[1], "1", *cells[3:]]) + " |"] + lines[row + 1:])
    assert any("windows cannot hold" in p for p in problems(broken))
    dropped = "\n".join(line for line in lines if not line.startswith("| crux_nb global_search(scan=all, detail=overview)"))
    assert any("missing cost row" in p for p in problems(dropped))
    assert problems(text.replace("## Import report", "## Other")) == ["no '## Import report' section"]


def test_missing_shared_data_exits_2(tmp_path):
    """The script looks for ../shared/data next to the project; a copy of it elsewhere finds none."""
    bench = tmp_path / "project" / "bench"
    bench.mkdir(parents=True)
    for name in ("graphrag_import.py", "_common.py"):
        (bench / name).write_bytes((ROOT / "bench" / name).read_bytes())
    env = {"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"}
    proc = subprocess.run([sys.executable, str(bench / "graphrag_import.py"), "--small"], cwd=tmp_path,
                          capture_output=True, text=True, timeout=120, env=env)
    assert proc.returncode == 2, proc.stderr[-2000:]
    assert "shared data not found" in proc.stderr


def test_small_run_writes_a_summary(small_report, small_out):
    """Information rows: import time, resolved references, and each crux_nb configuration's input characters
    against GraphRAG's default static global search, with the tables' figures."""
    _, text = small_report
    rows = load_summary(small_out)
    assert summary_problems(rows, "graphrag_import") == []
    assert {r["verdict"] for r in rows} == {"info"}
    got = by_measure(rows)
    costs = table(text, "Global search cost", COST_COLUMNS)
    rollup = _num(costs["GraphRAG static global search, default community_level=2 (roll-up)"][4])
    for method in CRUX_ROWS:
        config = method.split("(", 1)[1].rstrip(")")
        row = got[f"global search input chars per question, {config}"]
        assert math.isclose(row["ours"], _num(costs[method][4]), rel_tol=0.01)
        assert row["baseline"] == pytest.approx(rollup, rel=0.01)
    imported = table(text, "Import", IMPORT_COLUMNS)
    assert math.isclose(got["read_graphrag(shared index) mean time (ms)"]["ours"],
                        _num(imported["read_graphrag(shared index)"][1]), rel_tol=0.01)
    refs = got["report [Data: ...] references resolved (count)"]
    counts = {k: v[1] for k, v in table(text, "Import report", ["what", "count"]).items()}
    assert (refs["ours"], refs["baseline"]) == (int(counts["references resolved"]), int(counts["references cited"]))
