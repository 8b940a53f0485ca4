"""Smoke test for ``bench/dense.py``: the ``--small`` run finishes, its tables are complete, its summary is valid.

Latency targets are reported as pass/miss, never asserted here (timings depend on the machine).
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from crux_nb.embeddings import minilm_available

from bench_summary import by_measure, load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "bench" / "dense.py"
pytestmark = pytest.mark.shared_data


@pytest.fixture(scope="module")
def small(tmp_path_factory, shared_data):
    out = tmp_path_factory.mktemp("bench") / "dense_small.md"
    _, text = run_small(SCRIPT, out)
    return out, text


def test_small_run_writes_complete_tables(small):
    _, text = small
    for heading in ("## Embedding throughput", "## Query latency", "## Memory", "## Recall on the multi-hop samples"):
        assert heading in text
    for chunks in ("1,000", "3,000"):
        for recipe in ("numpy floor", "bm25", "dense (previous)", "dense", "dense, filter", "hybrid (previous)",
                       "hybrid"):
            assert re.search(rf"^\| {chunks}\s+\|\s+256 \|\s+{re.escape(recipe)} \|\s+[\d.,]+ \|\s+[\d.,]+ \|", text,
                             re.M), (chunks, recipe)
    for recipe in ("bm25", "wordllama dense", "wordllama hybrid rrf", "wordllama hybrid rrf, dense weight 0.5"):
        assert re.search(rf"^\| hotpotqa\s+\|\s+{re.escape(recipe)} \|\s+5 \|\s+[01]\.\d+ \|", text, re.M), recipe


def test_small_run_writes_a_valid_summary(small):
    out, _ = small
    rows = load_summary(out)
    assert summary_problems(rows, "dense") == []
    memory = by_measure(rows)
    assert 90 < memory["stored vectors per 100k chunks (MiB)"]["ours"] < 110  # 100k x 256 x 4 bytes = 97.7 MiB
    assert memory["StaticEmbedder throughput (texts/s)"]["ours"] > 0
    recall = [r for r in rows if r["measure"].startswith("hotpotqa Recall@5")]
    assert len(recall) == 4 + 3 * minilm_available() and all(0 <= r["ours"] <= 1 and r["baseline_name"] == "BM25 Recall@5" for r in recall)
