"""Smoke test of bench/models_quality.py --small: it runs, prints its table, and the
offline model's reports are 100 % grounded with good entity recall."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BENCH = ROOT / "bench" / "models_quality.py"


@pytest.fixture(scope="module")
def bench_result():
    if not BENCH.is_file():
        pytest.fail(f"{BENCH} is missing")
    proc = subprocess.run([sys.executable, str(BENCH), "--small", "--json"], capture_output=True, text=True, timeout=300, cwd=ROOT)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    lines = proc.stdout.strip().splitlines()
    return proc.stdout, json.loads(lines[-1])


def test_table_is_printed(bench_result):
    stdout, result = bench_result
    assert result["small"] is True
    header = next(line for line in stdout.splitlines() if line.startswith("corpus"))
    for column in ("recall", "grounded", "findings"):
        assert column in header
    assert [row["corpus"] for row in result["rows"]] == ["sample", "christmas-carol"]


def test_sample_corpus_recall_and_grounding(bench_result):
    _stdout, result = bench_result
    row = result["rows"][0]
    if row.get("skipped"):
        pytest.skip("data/sample or data/sample_entities.csv not present")
    assert row["findings"] > 0 and row["grounded"] == 1.0
    assert row["gold"] >= 10 and row["recall"] >= 0.8, row


def test_christmas_carol_recall_and_grounding(bench_result, shared_data):
    _stdout, result = bench_result
    row = result["rows"][1]
    assert not row.get("skipped"), "shared data present but the bench skipped it"
    assert row["findings"] > 0 and row["grounded"] == 1.0
    assert row["gold"] >= 3 and row["recall"] >= 0.6, row
