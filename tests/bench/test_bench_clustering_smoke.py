"""Smoke test for ``bench/clustering.py``: the ``--small`` run finishes, its tables are complete and consistent.

The benchmark exits non-zero when crux_nb's clustering is not deterministic
(three same-seed runs and one on shuffled link rows), when its leaves do not
partition the nodes within the budget, or when the Christmas Carol rebuild
calls the model, so a zero exit status covers those. The speed target is
reported as pass/miss, never asserted here (timings depend on the machine).
When graspologic-native is not installed, its columns must say so and only
crux_nb's numbers are checked.
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from pathlib import Path

import pytest

from bench_summary import by_measure, load_summary, summary_problems, run_small
ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "clustering.py"
BASELINE = "graspologic-native"
NO_BASELINE = "not installed"

COLUMNS = ["nodes", "edges", "crux_nb s", f"{BASELINE} s", "ratio", "leaves crux_nb", f"leaves {BASELINE}",
           "levels crux_nb", f"levels {BASELINE}", "modularity crux_nb", f"modularity {BASELINE}",
           "NMI crux_nb", f"NMI {BASELINE}", "deterministic", "target"]
BASELINE_COLUMNS = [f"{BASELINE} s", f"leaves {BASELINE}", f"levels {BASELINE}", f"modularity {BASELINE}",
                    f"NMI {BASELINE}"]
CAROL_COLUMNS = ["stage", "seconds", "model calls", "result"]
SHAPE_COLUMNS = ["graph", "level", "parents", "children per parent (min / median / max)",
                 "largest child share of chunks (median / max)", "non-leaf child over half", "chunks per leaf (median / max)"]
INCREMENTAL_COLUMNS = ["case", "engine", "seconds", "communities", "rewritten", "rewritten share", "leaf modularity",
                       "from-scratch modularity", "modularity vs scratch", "target"]
CAROL_STAGES = ("knowledge_base() + add_path()", "kb.extract_entities()", "communities.prepare() - first build",
                "of which build_graph()", "of which cluster()", "communities.prepare(force=True) - identical rebuild")


def _number(cell: str) -> float:
    value = float(cell.replace(",", ""))
    if not math.isfinite(value) or value < 0:
        raise ValueError(f"not a finite non-negative number: {cell!r}")
    return value


def _cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def _section(text: str, heading: str) -> str | None:
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", text, flags=re.M | re.S)
    return match.group(1) if match else None


def _table(body: str) -> list[str]:
    lines = body.splitlines()
    start = next((i for i, line in enumerate(lines) if line.startswith("|")), None)
    if start is None:
        return []
    table = []
    for line in lines[start:]:
        if not line.startswith("|"):
            break
        table.append(line)
    return table


def results_problems(text: str, sizes: tuple[int, ...], *, baseline: bool) -> list[str]:
    """Everything wrong with the ``## Results`` table (empty when complete and consistent)."""
    body = _section(text, "Results")
    if body is None:
        return ["no '## Results' section"]
    lines = _table(body)
    if not lines:
        return ["no table under '## Results'"]
    if _cells(lines[0]) != COLUMNS:
        return [f"columns {_cells(lines[0])} != {COLUMNS}"]
    problems = []
    if len(lines) < 2 or not re.fullmatch(r"\|[ :\-|]+\|", lines[1].strip()):
        problems.append("second line is not a Markdown rule")
    rows = {}
    for line in lines[2:]:
        cells = _cells(line)
        if len(cells) != len(COLUMNS):
            problems.append(f"row has {len(cells)} cells: {line!r}")
            continue
        rows[cells[0]] = dict(zip(COLUMNS, cells))
    for n in sizes:
        row = rows.get(f"{n:,}")
        if row is None:
            problems.append(f"missing row for {n:,} nodes")
            continue
        where = f"{n:,} nodes"
        values = {}
        numeric = ["edges", "crux_nb s", "leaves crux_nb", "levels crux_nb", "modularity crux_nb", "NMI crux_nb"]
        numeric += BASELINE_COLUMNS + ["ratio"] if baseline else []
        for col in numeric:
            try:
                values[col] = _number(row[col])
            except ValueError:
                problems.append(f"{where} / {col!r} is not a number: {row[col]!r}")
        if not baseline:
            for col in BASELINE_COLUMNS:
                if row[col] != NO_BASELINE:
                    problems.append(f"{where} / {col!r} is {row[col]!r}, expected {NO_BASELINE!r}")
            if row["ratio"] != "-":
                problems.append(f"{where} / ratio is {row['ratio']!r}, expected '-'")
        if row["deterministic"] != "yes":
            problems.append(f"{where}: deterministic is {row['deterministic']!r}")
        verdict = r"pass|miss \(.+\)" if baseline else r"n/a \(.+\)|miss \(.+\)"
        if not re.fullmatch(verdict, row["target"]):
            problems.append(f"{where}: target {row['target']!r} is not {verdict}")
        for side in ("crux_nb",) + ((BASELINE,) if baseline else ()):
            if f"{side} s" in values and values[f"{side} s"] <= 0:
                problems.append(f"{where}: {side} time is zero")
            if values.get(f"leaves {side}", 1) < 2:
                problems.append(f"{where}: {side} has fewer than 2 leaves")
            if values.get(f"levels {side}", 1) < 1:
                problems.append(f"{where}: {side} has no level")
            for col in (f"modularity {side}", f"NMI {side}"):
                if col in values and not 0 < values[col] <= 1:
                    problems.append(f"{where}: {col} {values[col]} outside (0, 1]")
        # the budget forces splits: crux_nb needs a level above its leaves
        if values.get("levels crux_nb", 2) < 2:
            problems.append(f"{where}: crux_nb has a single level")
        if values.get("edges", 0) < 2 * n:
            problems.append(f"{where}: only {values.get('edges')} edges for {n:,} nodes")
        if baseline and all(c in values for c in ("crux_nb s", f"{BASELINE} s", "ratio")):
            crux, base = values["crux_nb s"], values[f"{BASELINE} s"]
            if base and not math.isclose(values["ratio"], crux / base, rel_tol=0.06, abs_tol=0.01):
                problems.append(f"{where}: ratio {values['ratio']} != {crux}/{base}")
            passed = values["ratio"] <= 1.0 and row["deterministic"] == "yes"
            if passed != (row["target"] == "pass"):
                problems.append(f"{where}: target {row['target']!r} does not match ratio {values['ratio']}")
    extra = set(rows) - {f"{n:,}" for n in sizes}
    if extra:
        problems.append(f"unexpected rows {sorted(extra)}")
    return problems


def carol_problems(text: str) -> list[str]:
    """Everything wrong with the Christmas Carol table (empty when complete; a skip note is accepted)."""
    body = _section(text, "Christmas Carol (offline model)")
    if body is None:
        return ["no Christmas Carol section"]
    lines = _table(body)
    if not lines:
        return [] if re.search(r"^Skipped", body, flags=re.M) else ["no Carol table and no skip note"]
    if _cells(lines[0]) != CAROL_COLUMNS:
        return [f"Carol columns {_cells(lines[0])} != {CAROL_COLUMNS}"]
    rows = [dict(zip(CAROL_COLUMNS, _cells(line))) for line in lines[2:]]
    problems = []
    for stage in CAROL_STAGES:
        hit = [r for r in rows if stage in r["stage"]]
        if not hit:
            problems.append(f"missing Carol stage {stage!r}")
            continue
        try:
            _number(hit[0]["seconds"])
            calls = _number(hit[0]["model calls"])
        except ValueError:
            problems.append(f"Carol stage {stage!r} has no seconds / calls: {hit[0]}")
            continue
        result = hit[0]["result"]
        if stage.startswith("communities.prepare() - first"):
            m = re.search(r"^(\d+) communities \((\d+) leaves.*\), (\d+) levels", result)
            if not m or int(m.group(1)) < 2 or int(m.group(3)) < 2:
                problems.append(f"first build result has no community/level counts: {result!r}")
            elif calls < 1:
                problems.append("the first build made no model call")
        if stage.startswith("communities.prepare(force=True)"):
            if calls != 0:
                problems.append(f"identical rebuild made {calls:g} model calls")
            if "identical ids: yes" not in result:
                problems.append(f"identical rebuild changed the community ids: {result!r}")
    return problems


def _baseline_installed() -> bool:
    proc = subprocess.run([sys.executable, "-c", "import graspologic_native"], capture_output=True)
    return proc.returncode == 0


@pytest.fixture(scope="module")
def small_out(tmp_path_factory) -> Path:
    """Where the --small run writes its report (its summary JSON goes beside it)."""
    return tmp_path_factory.mktemp("bench") / "clustering_small.md"


@pytest.fixture(scope="module")
def small_report(small_out) -> tuple[subprocess.CompletedProcess, str]:
    return run_small(SCRIPT, small_out)


def test_small_run_writes_complete_tables(small_report):
    proc, text = small_report
    assert results_problems(text, (2_000,), baseline=_baseline_installed()) == []
    assert carol_problems(text) == []
    assert "## Results" in proc.stdout  # the same report is printed
    assert "All correctness checks passed." in text
    assert re.search(r"^Peak RSS of the whole run: [\d,]+ MiB\.$", text, flags=re.M)
    assert re.search(r"load average \(1/5/15 min\) at start \| [\d.]+ / [\d.]+ / [\d.]+", text)


def test_checker_catches_broken_tables(small_report):
    """The table checks can fail: each corruption below must be reported."""
    _, text = small_report
    baseline = _baseline_installed()
    lines = text.splitlines()
    row = next(i for i, line in enumerate(lines) if line.startswith("| 2,000 |"))

    def with_cell(col: str, value: str) -> str:
        cells = _cells(lines[row])
        cells[COLUMNS.index(col)] = value
        return "\n".join(lines[:row] + ["| " + " | ".join(cells) + " |"] + lines[row + 1:])

    dropped = "\n".join(lines[:row] + lines[row + 1:])
    assert any("missing row" in p for p in results_problems(dropped, (2_000,), baseline=baseline))
    assert any("not a number" in p for p in results_problems(with_cell("crux_nb s", "nan"), (2_000,),
                                                             baseline=baseline))
    assert any("deterministic" in p for p in results_problems(with_cell("deterministic", "no (differs)"), (2_000,),
                                                              baseline=baseline))
    assert any("outside" in p for p in results_problems(with_cell("NMI crux_nb", "1.5"), (2_000,), baseline=baseline))
    assert any("single level" in p for p in results_problems(with_cell("levels crux_nb", "1"), (2_000,),
                                                             baseline=baseline))
    assert any("target" in p for p in results_problems(with_cell("target", "ok"), (2_000,), baseline=baseline))
    if baseline:
        assert any("ratio" in p for p in results_problems(with_cell("ratio", "123.00"), (2_000,), baseline=True))
    # a table that claims the baseline ran must not pass as "not installed", and vice versa
    assert results_problems(text, (2_000,), baseline=not baseline) != []
    assert results_problems(text.replace("## Results", "## Other"), (2_000,), baseline=baseline) == [
        "no '## Results' section"]

    if "| communities.prepare(force=True)" in text:
        rebuild = next(i for i, line in enumerate(lines) if line.startswith("| communities.prepare(force=True)"))
        cells = _cells(lines[rebuild])
        cells[2] = "33"
        broken = "\n".join(lines[:rebuild] + ["| " + " | ".join(cells) + " |"] + lines[rebuild + 1:])
        assert any("model calls" in p for p in carol_problems(broken))
        stage = next(i for i, line in enumerate(lines) if "kb.extract_entities()" in line)
        assert any("missing Carol stage" in p for p in carol_problems("\n".join(lines[:stage] + lines[stage + 1:])))


def test_small_run_writes_a_summary(small_report, small_out):
    """Time, modularity and NMI at 2,000 nodes against graspologic-native, with the table's figures and verdict."""
    _, text = small_report
    baseline = _baseline_installed()
    rows = load_summary(small_out)
    assert summary_problems(rows, "clustering") == []
    got = by_measure(rows)
    assert set(got) == {"cluster() time (s), 2,000 nodes", "leaf modularity (weighted), 2,000 nodes",
                        "leaf NMI vs planted blocks, 2,000 nodes"}
    table = dict(zip(COLUMNS, _cells(next(line for line in text.splitlines() if line.startswith("| 2,000 |")))))
    time_row = got["cluster() time (s), 2,000 nodes"]
    assert time_row["target"] == "ratio <= 1 and deterministic"
    assert math.isclose(time_row["ours"], _number(table["crux_nb s"]), rel_tol=0.01)
    assert math.isclose(got["leaf NMI vs planted blocks, 2,000 nodes"]["ours"], _number(table["NMI crux_nb"]),
                        abs_tol=6e-5)
    if baseline:
        assert all(r["baseline_name"] == BASELINE and r["baseline"] is not None for r in rows)
        assert math.isclose(time_row["baseline"], _number(table[f"{BASELINE} s"]), rel_tol=0.01)
        assert time_row["verdict"] == table["target"].split(" ")[0]
    else:
        assert all(r["baseline"] is None and r["ratio"] is None for r in rows)
        assert time_row["verdict"] == "info"


def test_small_run_shows_tree_shape_and_incremental_rebuilds(small_report):
    """The tree-shape table has no non-leaf child over half its parent and at most 8 children per parent;
    the incremental table compares leidenalg, igraph and a from-scratch build, leidenalg within target."""
    _, text = small_report
    shape = _table(_section(text, "Tree shape"))
    assert _cells(shape[0]) == SHAPE_COLUMNS
    rows = [dict(zip(SHAPE_COLUMNS, _cells(line))) for line in shape[2:]]
    assert {r["graph"] for r in rows} >= {"planted 2,000"}
    for r in rows:
        low, _, high = (int(float(x)) for x in r["children per parent (min / median / max)"].split(" / "))
        assert 2 <= low <= high <= 8 and r["non-leaf child over half"] == "0"
    inc = _table(_section(text, "Incremental rebuilds (one added source)"))
    assert _cells(inc[0]) == INCREMENTAL_COLUMNS
    rows = [dict(zip(INCREMENTAL_COLUMNS, _cells(line))) for line in inc[2:]]
    engines = {r["engine"] for r in rows}
    assert {"leidenalg", "igraph"} <= engines
    for r in rows:
        if r["engine"] == "leidenalg" and (r["case"].startswith("Carol") or r["case"].startswith("sample")):
            # the Carol on the cleaner entity graph misses the modularity target (0.965, issue 16 note), and so
            # does the sample corpus on the offline graph v5 (0.88, issue 31 note): the report must say so rather
            # than claim a pass
            assert r["target"] == ("pass" if float(r["modularity vs scratch"]) >= 0.98 else "miss")
        elif r["engine"] == "leidenalg":
            assert r["target"] == "pass" and float(r["modularity vs scratch"]) >= 0.98
            assert int(r["rewritten"].split(" ")[0]) <= int(r["communities"]) / 4
