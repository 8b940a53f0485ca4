"""Checks of a benchmark's summary JSON (``bench/out/<name>[_small].summary.json``), shared by the smoke tests.

Written independently of ``bench/_common.write_summary`` (which validates what it writes), so a
writer that drifts from the schema is caught here.
"""

from __future__ import annotations

import json
import math
import operator
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

KEYS = {"benchmark", "measure", "ours", "baseline", "baseline_name", "ratio", "target", "verdict"}
VERDICTS = {"pass", "miss", "info"}
_OPS = {"<=": operator.le, "<": operator.lt, ">=": operator.ge, ">": operator.gt, "==": operator.eq}
_CONDITION = re.compile(r"^(ours|ratio) (<=|>=|==|<|>) ([-+]?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)(?: \(.*\))?$")


def run_small(script: Path, out: Path, *extra: str) -> tuple[subprocess.CompletedProcess, str]:
    """Run ``python -m bench.<script> --small --out out`` from the repository root; its exit status 0 and its
    report text."""
    proc = subprocess.run([sys.executable, "-m", f"bench.{script.stem}", "--small", *extra, "--out", str(out)],
                          cwd=script.parents[1], capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"bench/{script.name} --small failed:\n{proc.stderr[-4000:]}"
    assert out.exists(), "the report file was not written"
    return proc, out.read_text(encoding="utf-8")


def summary_file(report: Path) -> Path:
    """The summary beside a Markdown report: ``x_small.md`` -> ``x_small.summary.json``."""
    return report.with_name(report.name.removesuffix(".md") + ".summary.json")


def load_summary(report: Path) -> list[dict[str, Any]]:
    path = summary_file(report)
    assert path.is_file(), f"no summary written beside {report.name}: {path.name}"
    rows = json.loads(path.read_text(encoding="utf-8"))
    assert isinstance(rows, list), f"{path.name} is not a JSON list"
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _target_verdict(row: dict[str, Any]) -> str | None:
    """The verdict the row's target implies: "miss" when a numeric condition fails, "pass" when every condition
    is numeric and holds, None when undecidable here (a plain-words condition, a missing figure, a tie)."""
    undecided = False
    for part in row["target"].split(" and "):
        m = _CONDITION.match(part.strip())
        if not m:
            undecided = True
            continue
        value, op, bound = row[m.group(1)], _OPS[m.group(2)], float(m.group(3))
        if not _is_number(value) or math.isclose(value, bound, rel_tol=1e-6, abs_tol=1e-12):
            undecided = True
            continue
        if not op(value, bound):
            return "miss"
    return None if undecided else "pass"


def summary_problems(rows: Any, benchmark: str) -> list[str]:
    """Everything wrong with one benchmark's summary rows (empty when valid)."""
    if not isinstance(rows, list) or not rows:
        return ["the summary is not a non-empty list"]
    problems: list[str] = []
    seen: set[tuple[str, Any]] = set()
    for i, row in enumerate(rows):
        if not isinstance(row, dict) or set(row) != KEYS:
            problems.append(f"row {i}: keys {sorted(row) if isinstance(row, dict) else row!r} != {sorted(KEYS)}")
            continue
        name = row["measure"]
        if row["benchmark"] != benchmark:
            problems.append(f"{name!r}: benchmark {row['benchmark']!r} != {benchmark!r}")
        if not isinstance(name, str) or not name.strip():
            problems.append(f"row {i}: empty measure")
            continue
        if (name, row["baseline_name"]) in seen:
            problems.append(f"{name!r} vs {row['baseline_name']!r} appears twice")
        seen.add((name, row["baseline_name"]))
        for key in ("ours", "baseline", "ratio"):
            if row[key] is not None and not _is_number(row[key]):
                problems.append(f"{name!r}: {key} {row[key]!r} is not a number or null")
        if row["baseline"] is not None and not (isinstance(row["baseline_name"], str) and row["baseline_name"]):
            problems.append(f"{name!r}: a baseline figure without a baseline_name")
        if row["verdict"] not in VERDICTS:
            problems.append(f"{name!r}: verdict {row['verdict']!r} not in {sorted(VERDICTS)}")
        if row["target"] is not None and not isinstance(row["target"], str):
            problems.append(f"{name!r}: target {row['target']!r} is not a string or null")
            continue
        if row["verdict"] in ("pass", "miss") and not row["target"]:
            problems.append(f"{name!r}: verdict {row['verdict']} without a target")
        ours, base, ratio = row["ours"], row["baseline"], row["ratio"]
        if _is_number(ours) and _is_number(base) and base != 0:
            if not _is_number(ratio) or not math.isclose(ratio, ours / base, rel_tol=1e-4, abs_tol=1e-12):
                problems.append(f"{name!r}: ratio {ratio!r} != ours / baseline = {ours} / {base}")
        elif ratio is not None:
            problems.append(f"{name!r}: ratio {ratio!r} without two numbers to divide")
        if row["target"] and row["verdict"] in ("pass", "miss"):
            implied = _target_verdict(row)
            if implied is not None and implied != row["verdict"]:
                problems.append(f"{name!r}: verdict {row['verdict']} does not follow from the target "
                                f"{row['target']!r} (ours {ours}, ratio {ratio})")
    return problems


def by_measure(rows: list[dict[str, Any]], baseline_name: str | None = None) -> dict[str, dict[str, Any]]:
    return {r["measure"]: r for r in rows if baseline_name is None or r["baseline_name"] == baseline_name}
