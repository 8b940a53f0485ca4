"""The benchmarks' summary JSON (``bench/_common.write_summary``), its checker, and ``bench/run_all.py``'s
aggregation (``--no-run``: "Targets at a glance", plots, sections) on synthetic outputs in a temporary folder.

The real ``--small`` runs and their summaries are covered by the per-benchmark smoke tests; nothing here
runs a benchmark.
"""

from __future__ import annotations

import json
import math
import re
import sys
from pathlib import Path

import pytest

from bench_summary import summary_file, summary_problems

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "bench"))

import run_all  # noqa: E402
from _common import SUMMARY_KEYS, write_summary  # noqa: E402

PNG = b"\x89PNG\r\n\x1a\n"


def _rows(path: Path) -> list[dict]:
    return json.loads(summary_file(path).read_text(encoding="utf-8"))


# ------------------------------------------------------------------- writer
def test_write_summary_fills_the_schema(tmp_path):
    report = tmp_path / "demo_small.md"
    path = write_summary(report, "demo", [
        {"measure": "op mean (us)", "ours": 12.345678912, "baseline": 4.0, "baseline_name": "igraph",
         "target": "ratio <= 3", "verdict": "miss"},
        {"measure": "recall (count)", "ours": 9, "baseline": 10, "baseline_name": "hand list"},
        {"measure": "rss (MiB)", "ours": 800.0, "target": "ours <= 1024", "verdict": "pass"},
        {"measure": "nan figure", "ours": math.nan, "baseline": 2.0, "baseline_name": "x"},
        {"measure": "zero baseline", "ours": 1.0, "baseline": 0, "baseline_name": "y"},
    ])
    assert path == tmp_path / "demo_small.summary.json" == summary_file(report)
    rows = _rows(report)
    assert [list(r) for r in rows] == [list(SUMMARY_KEYS)] * 5
    assert summary_problems(rows, "demo") == []
    first, recall, rss, nan, zero = rows
    assert first["ours"] == 12.3457 and first["ratio"] == pytest.approx(12.3457 / 4, rel=1e-5)
    assert (recall["ours"], recall["baseline"], recall["ratio"], recall["verdict"]) == (9, 10, 0.9, "info")
    assert (rss["baseline"], rss["baseline_name"], rss["ratio"]) == (None, None, None)
    assert (nan["ours"], nan["ratio"]) == (None, None)
    assert zero["ratio"] is None
    assert "NaN" not in summary_file(report).read_text()


@pytest.mark.parametrize("row, message", [
    ({"measure": "m", "ours": 1, "verdict": "ok", "target": "ours > 0"}, "verdict"),
    ({"measure": "m", "ours": 1, "baseline": 2, "ratio": 0.5}, "ratio is computed"),
    ({"measure": "m", "ours": 1, "verdict": "pass"}, "needs a target"),
    ({"measure": "m", "ours": "fast"}, "number"),
    ({"measure": "m", "ours": True}, "number"),
    ({"measure": "", "ours": 1}, "measure"),
    ({"measure": "m", "ours": 1, "target": 3}, "target"),
])
def test_write_summary_rejects_bad_rows(tmp_path, row, message):
    with pytest.raises((ValueError, TypeError), match=message):
        write_summary(tmp_path / "x.md", "x", [row])


def test_write_summary_rejects_a_measure_twice(tmp_path):
    row = {"measure": "m", "ours": 1.0, "baseline": 2.0, "baseline_name": "a"}
    write_summary(tmp_path / "x.md", "x", [row, dict(row, baseline_name="b")])  # other baseline: fine
    with pytest.raises(ValueError, match="twice"):
        write_summary(tmp_path / "x.md", "x", [row, row])


def test_checker_catches_broken_summaries(tmp_path):
    write_summary(tmp_path / "x.md", "x", [
        {"measure": "a (ms)", "ours": 2.0, "baseline": 4.0, "baseline_name": "nx", "target": "ratio <= 0.1 (10x)",
         "verdict": "miss"},
        {"measure": "b (MiB)", "ours": 10.0, "target": "ours <= 1024", "verdict": "pass"},
        {"measure": "c (s)", "ours": 1.0, "baseline": 2.0, "baseline_name": "gn", "target": "ratio <= 1 and "
         "deterministic", "verdict": "miss"},  # a plain-words condition may fail where the numbers pass
    ])
    rows = _rows(tmp_path / "x.md")
    assert summary_problems(rows, "x") == []

    def broken(i: int, **change) -> list[dict]:
        copy = [dict(r) for r in rows]
        copy[i].update(change)
        return copy

    cases = [
        (broken(0, verdict="ok"), "verdict 'ok'"),
        (broken(0, ratio=0.6), "ratio"),
        (broken(1, ratio=1.0), "without two numbers"),
        (broken(0, verdict="pass"), "does not follow"),
        (broken(1, ours=2000.0), "does not follow"),
        (broken(2, verdict="pass", ours=3.0, ratio=1.5), "does not follow"),
        (broken(1, target=None), "without a target"),
        (broken(0, ours="2"), "not a number"),
        (broken(0, ours=math.inf), "not a number"),
        (broken(0, baseline_name=None), "without a baseline_name"),
        (broken(0, benchmark="y"), "benchmark"),
        (rows + [rows[0]], "twice"),
        ([{k: v for k, v in rows[0].items() if k != "target"}], "keys"),
        ([], "non-empty"),
    ]
    for case, expected in cases:
        assert any(expected in p for p in summary_problems(case, "x")), (expected, summary_problems(case, "x"))


# -------------------------------------------------------------- aggregation
SYNTHETIC = {
    "neighbors": [{"measure": "neighbors(ref) - mean (us)", "ours": 3.0, "baseline": 2.0,
                   "baseline_name": "igraph (python)", "target": "ratio <= 3", "verdict": "pass"},
                  {"measure": "neighbors(ref) - mean (us)", "ours": 3.0, "baseline": 60.0, "baseline_name": "networkx",
                   "target": "ratio <= 0.1 (>= 10x faster than networkx)", "verdict": "pass"}],
    "clustering": [{"measure": f"cluster() time (s), {n:,} nodes", "ours": s, "baseline": b,
                    "baseline_name": "graspologic-native", "target": "ratio <= 1 and deterministic", "verdict": "miss"}
                   for n, s, b in ((10_000, 1.05, 0.31), (100_000, 59.7, 5.71))],
    "models_quality": [{"measure": "entity recall, sample (hand-listed entities found, count)", "ours": 38,
                        "baseline": 40, "baseline_name": "hand list (40 of 45 named in the text)"},
                       {"measure": "report grounding, sample (share of 18 findings)", "ours": 1.0,
                        "target": "ours == 1", "verdict": "pass"}],
    "global_search": [{"measure": "input chars per question, adaptive, detail=detailed", "ours": 300_000.0,
                       "baseline": 400_000.0, "baseline_name": "scan all (same run)", "target": "ratio <= 0.5",
                       "verdict": "miss"}],
    "graphrag_import": [{"measure": "global search input chars per question, scan=all, detail=detailed",
                         "ours": 405_850.0, "baseline": 436_770, "baseline_name": "GraphRAG (computed)"}],
    "scale": [{"measure": "process RSS after reader indexes, 100,000 edges (MiB)", "ours": 400.0,
               "target": "ours <= 1024", "verdict": "pass"}],
}


def _outputs(out_dir: Path, suffix: str = "_small") -> int:
    """A report for every benchmark and a summary for those in SYNTHETIC; returns the number of summary rows."""
    for _, _, name in run_all.BENCHMARKS:
        report = out_dir / f"{name}{suffix}.md"
        report.parent.mkdir(parents=True, exist_ok=True)
        report.write_text(f"# {name} report\n\n| a | b |\n| - | - |\n| 1 | 2 |\n", encoding="utf-8")
        if name in SYNTHETIC:
            write_summary(report, name, SYNTHETIC[name])
    return sum(len(v) for v in SYNTHETIC.values())


def _collect(tmp_path: Path, *extra: str) -> tuple[int, str]:
    results = tmp_path / "site" / "RESULTS.md"
    rc = run_all.main(["--small", "--no-run", "--out-dir", str(tmp_path / "out"), "--results", str(results),
                       "--plots-dir", str(tmp_path / "site" / "plots"), *extra])
    return rc, results.read_text(encoding="utf-8")


def test_every_benchmark_is_collected():
    scripts = {script for _, script, _ in run_all.BENCHMARKS}
    # underscore modules are shared helpers of the benchmarks, not benchmarks
    assert scripts == {p.name for p in (ROOT / "bench").glob("*.py") if not p.name.startswith("_")} - {"run_all.py"}
    assert all(name for _, _, name in run_all.BENCHMARKS)


def test_no_run_collects_targets_plots_and_sections(tmp_path):
    n_rows = _outputs(tmp_path / "out")
    (tmp_path / "out" / "expand_latency_small.summary.json").write_text("{broken", encoding="utf-8")
    rc, text = _collect(tmp_path)
    assert rc == 1  # one summary is unreadable
    heads = [line for line in text.splitlines() if line.startswith("## ")]
    assert heads[:3] == ["## Machine and versions", "## Targets at a glance", "## Plots"]
    assert heads[3:] == [f"## {title}" for title, _, _ in run_all.BENCHMARKS]

    glance = text.split("## Targets at a glance", 1)[1].split("## Plots", 1)[0]
    table = [line for line in glance.splitlines() if line.startswith("|")]
    cells = [[c.strip() for c in line.strip("|").split("|")] for line in table]
    assert cells[0] == ["benchmark", "measure", "ours", "baseline (name)", "ratio", "target", "verdict"]
    body = cells[2:]
    assert len(body) == n_rows
    assert f"{n_rows} measures" in glance and "4 pass, 3 miss, 2 for information" in glance
    by_key = {(r[0], r[1], r[3]): r for r in body}
    assert by_key["neighbors", "neighbors(ref) - mean (us)", "60.0 (networkx)"][4:] == [
        "0.0500", "ratio <= 0.1 (>= 10x faster than networkx)", "pass"]
    assert by_key["scale", "process RSS after reader indexes, 100,000 edges (MiB)", "-"][2:] == [
        "400", "-", "-", "ours <= 1024", "pass"]
    assert by_key["models_quality", "entity recall, sample (hand-listed entities found, count)",
                  "40 (hand list (40 of 45 named in the text))"][4:] == ["0.950", "-", "info"]

    top = text.split("## Machine and versions", 1)[0]
    runs = {r[0]: r for r in ([c.strip() for c in line.strip("|").split("|")] for line in top.splitlines()
                              if line.startswith("| "))}
    assert runs["expand_relations latency vs networkx"][2:4] == ["collected", "-"]
    assert runs["expand_relations latency vs networkx"][4].startswith("unreadable summary")
    assert runs["retrieval quality with expansion (Christmas Carol)"][4] == "no summary"
    assert runs["hierarchical clustering vs graspologic-native"][4] == "2"

    images = re.findall(r"^!\[[^]]+\]\(([^)]+)\)$", text, flags=re.M)
    assert images == ["plots/ratios_small.png", "plots/clustering_time_small.png",
                      "plots/global_search_chars_small.png"]
    first = {}
    for rel in images:
        data = (tmp_path / "site" / rel).read_bytes()
        assert data.startswith(PNG) and len(data) > 2_000
        first[rel] = data
    assert "# neighbors report" in text.split("## neighbors() and 2-hop", 1)[1]

    # deterministic: drawing the same rows again gives the same image, byte for byte
    rows = [r for name in SYNTHETIC for r in _rows(tmp_path / "out" / f"{name}_small.md")]
    again = run_all.plot_ratios(rows, tmp_path / "again.png")
    assert again.read_bytes() == first["plots/ratios_small.png"]


def test_no_run_without_outputs_says_so(tmp_path):
    rc, text = _collect(tmp_path)
    assert rc == 1
    assert "(no summaries found)" in text and "## Plots" not in text
    assert text.count("| missing ") == len(run_all.BENCHMARKS)
    assert text.count("(no report)") == len(run_all.BENCHMARKS)
    assert not (tmp_path / "site" / "plots").exists()


def test_full_mode_names_and_no_plots(tmp_path):
    _outputs(tmp_path / "out", suffix="")
    results = tmp_path / "RESULTS.md"
    rc = run_all.main(["--no-run", "--no-plots", "--out-dir", str(tmp_path / "out"), "--results", str(results)])
    text = results.read_text(encoding="utf-8")
    assert rc == 1  # expand_latency and expand_quality have no summary here
    assert text.startswith("# Benchmark results\n\nMode: full (collected") and "![" not in text
    assert "`python -m bench.scale`" in text


def test_plots_skip_what_the_summaries_cannot_show(tmp_path):
    one_size = [dict(r, benchmark="clustering", ratio=None) for r in SYNTHETIC["clustering"][:1]]
    assert run_all.plot_clustering(one_size, tmp_path / "c.png") is None
    assert run_all.plot_ratios(one_size, tmp_path / "r.png") is None
    assert run_all.plot_global_search(one_size, tmp_path / "g.png") is None
    assert not list(tmp_path.iterdir())
    assert run_all.ratio_targets("ratio <= 0.1 (>= 10x faster) and deterministic and ours >= 2") == [("<=", 0.1)]
