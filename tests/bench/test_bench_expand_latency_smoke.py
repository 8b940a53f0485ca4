"""Smoke test for ``bench/expand_latency.py``: the ``--small`` run finishes, checks its upstream-ranking results
against the networkx implementation of the same traversal (it asserts equality on every run), and prints both
tables: the defaults (retrieve + expand against networkx's 2-hop reach, the targets) and the exactness cells."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from bench_summary import by_measure, load_summary, summary_problems

from crux_nb.graph import traversal_engine

ROOT = Path(__file__).resolve().parents[2]


def rows(text: str, section: str = "## Exactness") -> list[list[str]]:
    body = text.split(section, 1)[1].split("\n## ", 1)[0] if section in text else text
    lines = [line for line in body.splitlines() if line.startswith("| ") and not line.startswith(("| entity hops",
                                                                                                  "| ranking"))]
    return [[c.strip() for c in line.strip("|").split("|")] for line in lines if not set(line) <= set("|-: ")]


def test_small_run_prints_every_row_with_numbers(tmp_path):
    out = tmp_path / "expand_latency_small.md"
    done = subprocess.run([sys.executable, "-m", "bench.expand_latency", "--small", "--out", str(out)],
                          capture_output=True, text=True, timeout=900, cwd=ROOT)
    assert done.returncode == 0, done.stderr[-2000:]
    assert out.read_text(encoding="utf-8").strip() in done.stdout  # the printed report is the written one
    table = rows(done.stdout)
    assert {(r[0], r[1], r[2]) for r in table} == {(h, d, n) for h in ("free", "counted") for d in ("1", "2")
                                                    for n in ("1", "10")}
    for r in table:
        for cell in r[3:6]:
            assert float(cell) >= 0
        assert re.fullmatch(r"\d+(\.\d+)?x", r[6])
    assert re.search(r"checked equal to the networkx implementation \((\d+) checks\)", done.stdout)

    # the defaults table and the summary: both targets per ranking, agreeing with the table
    defaults = rows(done.stdout, "## Defaults")
    # with the compiled traversal (the `fast` extra) the default also runs on the numpy one, for comparison
    numpy_side = ["relevance, numpy traversal"] if traversal_engine() == "kernel" else []
    # and under a filter admitting only the query's own source (every candidate elsewhere hidden)
    assert [r[0] for r in defaults] == ["relevance [default]", "upstream", *numpy_side,
                                        "relevance, filter to the query's source"]
    summary = load_summary(out)
    assert summary_problems(summary, "expand_latency") == []
    got = by_measure(summary)
    for r in defaults[:2]:
        name = f"retrieve(10) + expand_relations(depth 2, ranking={r[0].split()[0]})"
        p95, p50 = got[f"{name} - p95 (ms)"], got[f"{name} - p50 (ms)"]
        assert (p95["target"], p95["baseline"]) == ("ours < 20", None)
        assert p50["baseline_name"] == "networkx 2-hop reach from the same seeds"
        assert p50["target"].startswith("ratio <= 0.1")
        assert abs(p95["ours"] - float(r[2])) <= 0.006 and abs(p50["ours"] - float(r[1])) <= 0.006
        assert abs(p50["baseline"] - float(r[3])) <= 0.006
        assert r[5] == ("pass" if p95["verdict"] == p50["verdict"] == "pass" else "miss")
    assert len(summary) == 4


def test_table_parser_rejects_a_broken_table():
    broken = "| entity hops | depth |\n| --- | --- |\n| free | 1 | 1 | x |\n"
    table = rows(broken)
    assert table and not table[0][3].replace(".", "").isdigit()
