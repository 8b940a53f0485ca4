"""Smoke test for ``bench/scale.py``: the ``--small`` run finishes and its tables hold real numbers.

Memory targets are reported as pass/miss, never asserted here (they depend on
the machine); the checker below must be able to fail, so it is run on
corrupted copies of the report too.
"""

from __future__ import annotations

import math
import re
import subprocess
from pathlib import Path

import pytest

from bench_summary import load_summary, summary_problems, run_small
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "scale.py"

STAGES = ("ingest (kb.add_frame)", "extract (kb.extract_entities, offline)",
          "communities (kb.communities.prepare, offline)")
STAGE_COLUMNS = ["stage", "seconds", "peak RSS in stage (MiB)", "RSS after (MiB)", "RSS delta (MiB)"]
MEMORY_ROWS = ("process RSS before building", "process RSS after building", "process RSS after reader indexes",
               "peak RSS while building", "peak RSS while indexing")


def _number(cell: str, *, signed: bool = False) -> float:
    value = float(cell.replace(",", ""))
    if not math.isfinite(value) or (value < 0 and not signed):
        raise ValueError(f"not a finite{'' if signed else ' non-negative'} number: {cell!r}")
    return value


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _table(text: str, heading: str) -> list[list[str]]:
    """Rows (header first, rule dropped) of the first table under ``heading`` (a whole heading line)."""
    match = re.search(rf"^{re.escape(heading)}\n(.*?)(?=^#{{1,3}} |\Z)", text, flags=re.M | re.S)
    if not match:
        raise AssertionError(f"no {heading!r} section")
    lines = [line for line in match.group(1).splitlines() if line.startswith("|")]
    if len(lines) < 3:
        raise AssertionError(f"no table under {heading!r}")
    return [_cells(lines[0])] + [_cells(line) for line in lines[2:]]


def table_problems(text: str) -> list[str]:
    problems: list[str] = []
    try:
        stages = _table(text, "## Corpus pipeline")
    except AssertionError as exc:
        return [str(exc)]
    if stages[0] != STAGE_COLUMNS:
        return [f"stage columns {stages[0]} != {STAGE_COLUMNS}"]
    by_stage = {row[0]: row for row in stages[1:]}
    for stage in STAGES:
        row = by_stage.get(stage)
        if row is None:
            problems.append(f"missing stage {stage!r}")
            continue
        try:
            seconds, peak, after = (_number(c) for c in row[1:4])
            _number(row[4], signed=True)
        except (ValueError, IndexError) as exc:
            problems.append(f"stage {stage!r}: {exc}")
            continue
        if seconds <= 0 or peak <= 0 or after <= 0:
            problems.append(f"stage {stage!r} has a zero measurement: {row}")
    corpus = re.search(r"^([\d,]+) chunks in ([\d,]+) sources .*?([\d,]+) entities, ([\d,]+) mentions.*?"
                       r"([\d,]+) communities", text, flags=re.M)
    if not corpus or min(_number(g) for g in corpus.groups()) <= 0:
        problems.append("no corpus summary with chunk/source/entity/mention/community counts")

    try:
        memory = _table(text, "## 1M-edge memory")
    except AssertionError as exc:
        return problems + [str(exc)]
    for label in MEMORY_ROWS:
        hit = [row for row in memory[1:] if row[0].startswith(label)]
        if not hit:
            problems.append(f"missing memory row {label!r}")
            continue
        try:
            if _number(hit[0][1]) <= 0:
                problems.append(f"memory row {label!r} is zero")
        except (ValueError, IndexError) as exc:
            problems.append(f"memory row {label!r}: {exc}")
    indexed = [row for row in memory[1:] if row[0].startswith("process RSS after reader indexes")]
    if indexed and not re.fullmatch(r"pass|miss \(.+\)", indexed[0][2]):
        problems.append(f"memory verdict {indexed[0][2]!r} is not pass/miss")
    try:
        columns = _table(text, "### Columns of edges / edge_evidence (MiB)")
        cats = [row for row in columns[1:] if row[4] != "-"]
        if not cats:
            problems.append("no categorical measurement")
        for row in cats:
            if _number(row[4]) >= _number(row[3]):
                problems.append(f"categorical {row[0]} is not smaller: {row}")
    except (AssertionError, ValueError, IndexError) as exc:
        problems.append(f"columns table: {exc}")
    return problems


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "scale_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    return run_small(SCRIPT, small_out)


def test_small_run_writes_complete_tables(small_report):
    proc, text = small_report
    assert table_problems(text) == []
    assert "## Corpus pipeline" in proc.stdout  # the same report is printed
    chunks = int(re.search(r"^([\d,]+) chunks in", text, flags=re.M).group(1).replace(",", ""))
    assert chunks >= 1_000
    edges = re.search(r"process RSS after building \(([\d,]+) edges\)", text)
    assert edges and int(edges.group(1).replace(",", "")) >= 100_000


def test_checker_catches_broken_tables(small_report):
    _, text = small_report
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| extract (kb.extract_entities"))
    assert any("missing stage" in p for p in table_problems("\n".join(lines[:row] + lines[row + 1:])))
    cells = _cells(lines[row])
    cells[2] = "nan"
    broken = "\n".join(lines[:row] + ["| " + " | ".join(cells) + " |"] + lines[row + 1:])
    assert any("not a finite" in p for p in table_problems(broken))
    mem = next(i for i, line in enumerate(lines) if line.startswith("| process RSS after reader indexes"))
    cells = _cells(lines[mem])
    cells[2] = "ok"
    broken = "\n".join(lines[:mem] + ["| " + " | ".join(cells) + " |"] + lines[mem + 1:])
    assert any("verdict" in p for p in table_problems(broken))
    assert any("missing memory row" in p for p in table_problems("\n".join(lines[:mem] + lines[mem + 1:])))
    assert table_problems(text.replace("## Corpus pipeline", "## Other")) == ["no '## Corpus pipeline' section"]


def test_small_run_writes_a_summary(small_report, small_out):
    """Memory against the 1 GB target (pass/miss as in the table) and the stage times, without a baseline."""
    _, text = small_report
    rows = load_summary(small_out)
    assert summary_problems(rows, "scale") == []
    assert all(r["baseline"] is None and r["ratio"] is None for r in rows)
    memory = {row[0]: row for row in _table(text, "## 1M-edge memory")[1:]}
    targeted = [r for r in rows if r["verdict"] != "info"]
    assert [r["measure"].split(",")[0] for r in targeted] == ["process RSS after building",
                                                              "process RSS after reader indexes"]
    for r in targeted:
        assert r["target"] == "ours <= 1024"
        cells = next(v for k, v in memory.items() if k.startswith(r["measure"].split(",")[0]))
        assert math.isclose(r["ours"], _number(cells[1]), rel_tol=0.01)
        assert cells[2].split(" ")[0] == r["verdict"]
    stages = [r["measure"] for r in rows if r["verdict"] == "info"]
    assert [s.split(" time,")[0] for s in stages] == list(STAGES)
