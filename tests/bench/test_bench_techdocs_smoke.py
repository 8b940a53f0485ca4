"""Smoke test for ``bench/techdocs.py``: the ``--small`` run (the Python reference topics, their first questions)
with one registered variant finishes, prints every recipe with numbers in [0, 1], and writes a summary whose gain
rows follow from the table. Recall values are reported, never asserted against the target here."""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest

from bench_summary import by_measure, load_summary, run_small, summary_problems

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench import techdocs  # noqa: E402

RECIPES = ["retrieve(5)", "retrieve(3) + expand(2)", "retrieve(10)", "retrieve(5) + expand(5)",
           "retrieve(3) + expand(2) d2", "retrieve(5) + expand(5) d2"]
BUDGET = dict(zip(RECIPES, [5, 5, 10, 10, 5, 10]))
SHARES = ["via entity", "via sequence", "via hierarchy"]


def table(text: str) -> dict[str, dict[str, str]]:
    rows = {}
    for line in text.split("## R@k by question kind")[0].splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == len(techdocs.COLUMNS) and cells[0] == "pyref":
            rows[cells[1]] = dict(zip(techdocs.COLUMNS, cells))
    return rows


@pytest.fixture(scope="module")
def small(tmp_path_factory):
    out = tmp_path_factory.mktemp("bench") / "techdocs_small.md"
    _, text = run_small(techdocs.ROOT / "bench" / "techdocs.py", out, "--variant", "d2: depth=2")
    return out, text


def test_small_run_reports_every_recipe(small):
    _, text = small
    rows = table(text)
    assert list(rows) == RECIPES
    n = techdocs.SMALL_QUESTIONS
    for name, cells in rows.items():
        expanded = "expand" in name
        assert int(cells["k"]) == BUDGET[name], name
        assert 0.0 <= float(cells["R@k"]) <= 1.0 and 0.0 <= float(cells["MRR"]) <= 1.0, name
        assert float(cells["p50 ms"]) > 0
        assert bool(cells["gain (pts)"]) == expanded == bool(cells["added/q"]), name
        shares = [cells[c] for c in SHARES]
        assert all(0.0 <= float(v) <= 1.0 for v in shares if v) and (expanded or not any(shares)), (name, shares)
        assert 0.0 <= float(cells["useful"]) <= 1.0, name  # added hits (expanded) or retrieve's tail (plain)
        if expanded and cells["via entity"]:
            assert math.isclose(sum(float(cells[c]) for c in SHARES[:3]), 1.0, abs_tol=0.011), name
            assert 0 < float(cells["added/q"]) <= BUDGET[name] - (3 if BUDGET[name] == 5 else 5), name
        short, total = cells["short"].split("/")
        assert int(total) == n and 0 <= int(short) <= n
    assert "| pyref  |" in text.split("## Knowledge bases")[1]
    by_kind = [[c.strip() for c in line.strip().strip("|").split("|")]
               for line in text.split("## R@k by question kind")[1].split("## Knowledge bases")[0].splitlines()
               if line.startswith("| pyref")]
    assert sum(int(r[2]) for r in by_kind) == n and all(len(r) == 3 + len(RECIPES) for r in by_kind)
    assert all(0.0 <= float(v) <= 1.0 for r in by_kind for v in r[3:])


def test_small_run_summary_follows_from_the_table(small):
    out, text = small
    rows = load_summary(out)
    assert summary_problems(rows, "techdocs") == []
    got = by_measure(rows)
    cells = table(text)
    for name, base, k in (("retrieve(3) + expand(2)", "retrieve(5)", 5), ("retrieve(5) + expand(5) d2", "retrieve(10)", 10)):
        gain = got[f"pyref: Recall@{k} gain of {name} over {base} (points)"]
        expected = (float(cells[name]["R@k"]) - float(cells[base]["R@k"])) * 100
        assert math.isclose(gain["ours"], expected, abs_tol=0.11)
        assert math.isclose(gain["ours"], float(cells[name]["gain (pts)"]), abs_tol=0.051)
        assert gain["verdict"] == ("pass" if gain["ours"] >= 3 else "miss")


def test_variants_parse_and_register():
    assert techdocs.parse_variant("x: depth=2, ranking='upstream'") == ("x", {"depth": 2, "ranking": "upstream"})
    with pytest.raises(SystemExit):
        techdocs.parse_variant(": depth=2")
    with pytest.raises(Exception):
        techdocs.register_variant("bad", no_such_parameter=1)
    names = techdocs.register_variant("probe", depth=2)
    try:
        assert [techdocs.VARIANTS[n].k for n in names] == [5, 10]
        assert [techdocs.VARIANTS[n].baseline for n in names] == ["retrieve(5)", "retrieve(10)"]
    finally:
        for n in names:
            techdocs.VARIANTS.pop(n)


def test_table_parser_can_fail():
    assert table("| pyref | retrieve(5) | 5 |\n") == {}
