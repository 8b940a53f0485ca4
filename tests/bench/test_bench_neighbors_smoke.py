"""Smoke test for ``bench/neighbors.py``: the ``--small`` run finishes and its table is complete.

The benchmark itself asserts that crux_nb, igraph and networkx return the same
neighbours, so a zero exit status also means the three sides agreed. Speed
targets are reported as pass/miss, never asserted here (timings depend on the
machine).
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

from bench_summary import by_measure, load_summary, summary_problems, run_small
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "neighbors.py"

ROWS = (
    "neighbors(ref) - first pass, cold caches - mean (us)",
    "neighbors(ref) - mean (us)",
    "neighbors(ref) - p50 (us)",
    "neighbors(ref) - p95 (us)",
    "neighbors(ref, types=[related], direction=out) - mean (us)",
    "neighbors(ref, types=[related], direction=out) - p50 (us)",
    "neighbors(ref, types=[related], direction=out) - p95 (us)",
    "2-hop typed traversal, all seeds - total (ms)",
    "2-hop typed traversal - per seed mean (ms)",
    "2-hop typed traversal - per seed p95 (ms)",
)
COLUMNS = ["operation", "crux_nb", "igraph (python)", "igraph C", "networkx",
           "crux/igraph", "networkx/crux", "target", "verdict"]
# igraph C only answers the whole traversal (one neighborhood() call), not single neighbours or per-seed p95
HAS_IGRAPH_C = {"2-hop typed traversal, all seeds - total (ms)", "2-hop typed traversal - per seed mean (ms)"}
# the per-seed comparison with igraph's C BFS, like for like (ids against arrays, names against names)
C_ROWS = ("reach() as set of refs vs C ids", "reach() as set of refs vs C ids + vertex names", "reach_arrays() vs C ids")
C_COLUMNS = ["2-hop per seed", "stat", "crux_nb (ms)", "igraph C (ms)", "crux/igraph C", "target", "verdict"]
BUILD_PHASES = ("kb.add_frame", "kb.add_entities", "kb.add_edges", "reader indexes", "igraph Graph",
                "networkx MultiDiGraph")


def _number(cell: str) -> float:
    value = float(cell.replace(",", ""))
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a finite non-negative number: {cell!r}")
    return value


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _section(text: str, heading: str) -> list[str]:
    """The table lines of the first Markdown table under ``## heading``."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    if not match:
        raise AssertionError(f"no '## {heading}' section")
    lines = match.group(1).splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        raise AssertionError(f"no table under '## {heading}'")
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def table_problems(text: str) -> list[str]:
    """Everything wrong with the report's results and build tables (empty when complete)."""
    problems: list[str] = []
    try:
        lines = _section(text, "Results")
    except AssertionError as exc:
        return [str(exc)]
    if _cells(lines[0]) != COLUMNS:
        problems.append(f"columns {_cells(lines[0])} != {COLUMNS}")
        return problems
    if not re.fullmatch(r"\|[ :\-|]+\|", lines[1].strip()):
        problems.append(f"second line is not a Markdown rule: {lines[1]!r}")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            problems.append(f"row has {len(cells)} cells: {line!r}")
            continue
        rows[cells[0]] = dict(zip(COLUMNS, cells))
    for label in ROWS:
        row = rows.get(label)
        if row is None:
            problems.append(f"missing row {label!r}")
            continue
        numeric = ["crux_nb", "igraph (python)", "networkx", "crux/igraph", "networkx/crux"]
        numeric += ["igraph C"] if label in HAS_IGRAPH_C else []
        for col in numeric:
            try:
                value = _number(row[col])
            except ValueError:
                problems.append(f"{label!r} / {col!r} is not a number: {row[col]!r}")
                continue
            if value == 0 and col not in ("crux/igraph", "networkx/crux"):
                problems.append(f"{label!r} / {col!r} is zero")
        if label not in HAS_IGRAPH_C and row["igraph C"] != "-":
            problems.append(f"{label!r} has an igraph C value {row['igraph C']!r}, expected '-'")
        if not re.fullmatch(r"pass|miss \(.+\)", row["verdict"]):
            problems.append(f"{label!r} verdict {row['verdict']!r} is not pass/miss")
        try:
            crux, igraph_py, networkx = (_number(row[c]) for c in ("crux_nb", "igraph (python)", "networkx"))
            ratio_ig, ratio_nx = _number(row["crux/igraph"]), _number(row["networkx/crux"])
        except ValueError:
            continue
        if igraph_py and not math.isclose(ratio_ig, crux / igraph_py, rel_tol=0.05, abs_tol=0.01):
            problems.append(f"{label!r}: crux/igraph {ratio_ig} != {crux}/{igraph_py}")
        if crux and not math.isclose(ratio_nx, networkx / crux, rel_tol=0.05, abs_tol=0.01):
            problems.append(f"{label!r}: networkx/crux {ratio_nx} != {networkx}/{crux}")
    extra = set(rows) - set(ROWS)
    if extra:
        problems.append(f"unexpected rows {sorted(extra)}")

    problems += c_table_problems(text)
    try:
        build = _section(text, "Build")
    except AssertionError as exc:
        return problems + [str(exc)]
    phases = {_cells(line)[0]: _cells(line)[1:] for line in build[2:]}
    for phase in BUILD_PHASES:
        hit = [cells for name, cells in phases.items() if phase in name]
        if not hit:
            problems.append(f"missing build phase {phase!r}")
            continue
        try:
            _number(hit[0][0])
            _number(hit[0][1])
        except (ValueError, IndexError):
            problems.append(f"build phase {phase!r} has no seconds / peak RSS: {hit[0]}")
    peak = re.search(r"^Peak RSS of the whole run: ([\d,.]+) MiB\.$", text, flags=re.M)
    if not peak or _number(peak.group(1)) <= 0:
        problems.append("no peak RSS line")
    return problems


def c_table_problems(text: str) -> list[str]:
    """Everything wrong with the igraph C table: every (row, stat) once, numbers, ratios, verdicts."""
    try:
        lines = _section(text, "Against igraph's C BFS")
    except AssertionError as exc:
        return [str(exc)]
    if _cells(lines[0]) != C_COLUMNS:
        return [f"igraph C columns {_cells(lines[0])} != {C_COLUMNS}"]
    problems, seen = [], set()
    for line in lines[2:]:
        row = dict(zip(C_COLUMNS, _cells(line)))
        seen.add((row["2-hop per seed"], row["stat"]))
        try:
            ours, theirs, ratio = (_number(row[c]) for c in ("crux_nb (ms)", "igraph C (ms)", "crux/igraph C"))
        except ValueError:
            problems.append(f"igraph C row {line!r} is not numeric")
            continue
        if not (ours > 0 and theirs > 0 and math.isclose(ratio, ours / theirs, rel_tol=0.05, abs_tol=0.01)):
            problems.append(f"igraph C row {line!r}: ratio {ratio} != {ours}/{theirs}")
        passed = row["verdict"] == "pass"
        if not re.fullmatch(r"pass|miss \(.+\)", row["verdict"]) or (passed and ratio > 3.01) or (
                not passed and ratio < 2.99):
            problems.append(f"igraph C row {line!r}: verdict {row['verdict']!r}")
    missing = {(r, s) for r in C_ROWS for s in ("mean", "p95")} - seen
    if missing:
        problems.append(f"igraph C rows missing: {sorted(missing)}")
    return problems


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "neighbors_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    return run_small(SCRIPT, small_out)


def test_small_run_writes_a_complete_table(small_report):
    proc, text = small_report
    assert table_problems(text) == []
    assert "## Results" in proc.stdout  # the same report is printed
    assert "5,000 nodes; 25,000 semantic edges" in text


def test_report_names_the_workload(small_report):
    _, text = small_report
    assert "200 sampled nodes" in text
    assert "Edge build: kb.add_edges() (public API)." in text


def test_checker_catches_broken_tables(small_report):
    """The table check can fail: each corruption below must be reported."""
    _, text = small_report
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| neighbors(ref) - p95 (us)"))
    dropped = "\n".join(lines[:row] + lines[row + 1:])
    assert any("missing row" in p for p in table_problems(dropped))

    cells = _cells(lines[row])
    cells[1] = "nan"
    broken = "\n".join(lines[:row] + ["| " + " | ".join(cells) + " |"] + lines[row + 1:])
    assert any("not a number" in p for p in table_problems(broken))

    cells = _cells(lines[row])
    cells[-1] = "ok"
    broken = "\n".join(lines[:row] + ["| " + " | ".join(cells) + " |"] + lines[row + 1:])
    assert any("verdict" in p for p in table_problems(broken))

    assert table_problems(text.replace("## Results", "## Something else")) == ["no '## Results' section"]
    row = next(i for i, line in enumerate(lines) if line.startswith("| reach_arrays() vs C ids"))
    assert any("igraph C rows missing" in p for p in table_problems("\n".join(lines[:row] + lines[row + 1:])))
    cells = _cells(lines[row])
    cells[4] = "99.0"
    broken = "\n".join(lines[:row] + ["| " + " | ".join(cells) + " |"] + lines[row + 1:])
    assert any("ratio" in p for p in table_problems(broken))
    assert any("peak RSS" in p for p in table_problems(re.sub(r"Peak RSS of the whole run.*", "", text)))


def test_small_run_writes_a_summary(small_report, small_out):
    """The summary holds every results row twice (against igraph and networkx) with the table's figures."""
    _, text = small_report
    rows = load_summary(small_out)
    assert summary_problems(rows, "neighbors") == []
    table = {_cells(line)[0]: dict(zip(COLUMNS, _cells(line))) for line in _section(text, "Results")[2:]}
    for name, ratio_col in (("igraph (python)", "crux/igraph"), ("networkx", "networkx/crux")):
        got = by_measure(rows, name)
        assert set(got) == set(ROWS), name
        for label, row in got.items():
            assert row["verdict"] in ("pass", "miss") and row["target"].startswith("ratio <= ")
            assert math.isclose(row["ours"], _number(table[label]["crux_nb"]), rel_tol=0.01)
            assert math.isclose(row["baseline"], _number(table[label][name]), rel_tol=0.01)
            shown = _number(table[label][ratio_col])
            ratio = row["ratio"] if name == "igraph (python)" else 1 / row["ratio"]
            assert math.isclose(ratio, shown, rel_tol=0.01, abs_tol=0.006), (label, name)
        # the table's verdict passes only when both of its summary rows pass (below)
        for label in ROWS:
            both = all(by_measure(rows, n)[label]["verdict"] == "pass" for n in ("igraph (python)", "networkx"))
            assert both == (table[label]["verdict"] == "pass"), label
    c_rows = {**by_measure(rows, "igraph C (vertex ids)"), **by_measure(rows, "igraph C + names")}
    assert len(c_rows) == 2 * len(C_ROWS)
    for line in _section(text, "Against igraph's C BFS")[2:]:
        row = dict(zip(C_COLUMNS, _cells(line)))
        got = c_rows[f"2-hop per seed, {row['2-hop per seed']} - {row['stat']} (ms)"]
        assert math.isclose(got["ours"], _number(row["crux_nb (ms)"]), rel_tol=0.01)
        assert math.isclose(got["baseline"], _number(row["igraph C (ms)"]), rel_tol=0.01)
        assert got["verdict"] == ("pass" if row["verdict"] == "pass" else "miss")
