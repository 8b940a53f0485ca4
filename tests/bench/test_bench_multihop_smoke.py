"""Smoke test for ``bench/multihop.py``: the ``--small`` run (MuSiQue, its first 300 passages and the questions
whose gold lies in them) finishes, prints every configuration with recalls in [0, 1], and writes a summary whose
gain row follows from the table. Recall values are reported, never asserted against the target here."""

from __future__ import annotations

import math
import re
import sys
from pathlib import Path

import pytest

from crux_nb.testing import require_system
from bench_summary import by_measure, load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "multihop.py"
DATA = ROOT.parent / "shared" / "data" / "multihop"
CONFIGS = ["BM25(5)", "BM25(3) + expand(2) upstream", "BM25(3) + expand(2) relevance [default]", "BM25(2)",
           "BM25(1) + expand(1) relevance", "BM25(3) + expand(2) relevance, depth 2",
           "BM25(3) + expand(2) relevance, depth 2, damping=1 (every hop alike)",
           "BM25(3) + expand(2) relevance, depth 2, min_share=0 (every node read)"]

pytestmark = pytest.mark.shared_data


def table(text: str) -> dict[str, list[str]]:
    rows = {}
    for line in text.split("## Stability")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 7 and cells[0] == "musique" and "published" not in cells[1]:
            rows[cells[1]] = cells
    return rows


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    require_system(DATA.is_dir(), f"shared data not found at {DATA}")
    out = tmp_path_factory.mktemp("bench") / "multihop_small.md"
    _, text = run_small(SCRIPT, out)
    return out, text


def test_small_run_reports_every_configuration(small):
    _, text = small
    rows = table(text)
    assert list(rows) == CONFIGS
    for name, cells in rows.items():
        r2, r5 = float(cells[2]), float(cells[3])
        assert 0.0 <= r2 <= r5 <= 1.0, name
        assert float(cells[5]) > 0 and float(cells[6]) > 0, name
    # expansion is additive: the first 3 hits are BM25's, so Recall@2 equals BM25(5)'s
    assert rows[CONFIGS[1]][2] == rows[CONFIGS[2]][2] == rows["BM25(5)"][2]
    assert re.search(r"HippoRAG 2 \(published\) \|\s+- \|\s+0\.747", text)
    assert re.search(r"\| musique +\| even \|", text) and re.search(r"\| musique +\| +odd \|", text)


def test_small_run_summary_follows_from_the_table(small):
    out, text = small
    rows = load_summary(out)
    assert summary_problems(rows, "multihop") == []
    got = by_measure(rows)
    gain = got["musique: Recall@5 gain of the default expansion over BM25(5) (points)"]
    cells = table(text)
    expected = (float(cells[CONFIGS[2]][3]) - float(cells["BM25(5)"][3])) * 100
    assert math.isclose(gain["ours"], expected, abs_tol=0.11)
    assert gain["target"] == "ours >= 3" and gain["verdict"] == ("pass" if gain["ours"] >= 3 else "miss")


def test_table_parser_can_fail():
    assert table("| musique | BM25(5) | x |\n") == {}
    assert list(table("| musique | BM25(5) | 0.1 | 0.2 | +0.0 | 1.0 | 2.0 |\n")) == ["BM25(5)"]
