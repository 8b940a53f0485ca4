"""Smoke test for ``bench/extract_scale.py``: the ``--small`` run (300 and 900 passages, this checkout and the code
before issue 35, each in its own process; the script exits non-zero when the two extracted graphs differ) writes
its table and summary, with a positive per-passage time on both sides at both sizes and a flatness verdict that
follows from them. Timings are reported, never asserted. The passages are the shared multi-hop samples
(skips without ``../shared/data`` unless ``CRUX_REQUIRE_SYSTEM=1``)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_summary import load_summary, run_small, summary_problems

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "extract_scale.py"

pytestmark = pytest.mark.shared_data


def test_extract_scale_small(tmp_path, shared_data):
    assert (shared_data / "multihop" / "2wiki" / "corpus.json").is_file()
    out = tmp_path / "extract_scale_small.md"
    _proc, text = run_small(SCRIPT, out)
    assert "hashed equal on both sides" in text and "code before issue 35 (fe656db)" in text
    assert "peak MiB" in text and "renamed per round" in text
    rows = load_summary(out)
    assert summary_problems(rows, "extract_scale") == []
    per_size = [r for r in rows if r["measure"].startswith("extract_entities per passage")]
    assert [r["measure"] for r in per_size] == [f"extract_entities per passage, {n} passages (ms)"
                                                for n in ("300", "900")]
    assert all(r["ours"] > 0 and r["baseline"] > 0 and r["baseline_name"] == "code before issue 35 (fe656db)"
               for r in per_size)
    spread = rows[-1]
    assert spread["measure"] == "per-passage time, max / min over 2 corpus sizes"
    ours = [r["ours"] for r in per_size]
    assert spread["ours"] == pytest.approx(max(ours) / min(ours), rel=1e-4)
    assert spread["verdict"] == ("pass" if spread["ours"] <= 1.5 else "miss")
