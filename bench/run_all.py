"""``make bench``: run every benchmark and collect their tables into ``bench/RESULTS.md``.

    python bench/run_all.py           # full runs (tens of minutes on 2 cores)
    python bench/run_all.py --small   # the small modes the test suite also runs
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import BENCH_DIR, OUT_DIR, load_average, machine_info, markdown_table  # noqa: E402

BENCHMARKS = [
    ("neighbors() and 2-hop traversal vs igraph and networkx", "neighbors.py", "neighbors"),
    ("expand_relations latency vs networkx", "expand_latency.py", "expand_latency"),
    ("retrieval quality with expansion (Christmas Carol)", "expand_quality.py", "expand_quality"),
    ("hierarchical clustering vs graspologic-native", "clustering.py", "clustering"),
    ("extraction recall and report grounding", "models_quality.py", None),
    ("global search: scan all vs adaptive (Christmas Carol)", "global_search.py", "global_search"),
    ("GraphRAG import and global-search cost", "graphrag_import.py", "graphrag_import"),
]


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--small", action="store_true")
    args = parser.parse_args(argv)
    sections, summary = [], []
    for title, script, out in BENCHMARKS:
        cmd = [sys.executable, str(BENCH_DIR / script)] + (["--small"] if args.small else [])
        t0 = time.perf_counter()
        done = subprocess.run(cmd, capture_output=True, text=True)
        seconds = time.perf_counter() - t0
        summary.append([title, script, "ok" if done.returncode == 0 else f"exit {done.returncode}", f"{seconds:.0f}"])
        suffix = "_small" if args.small else ""
        report = OUT_DIR / f"{out}{suffix}.md" if out else None
        body = report.read_text() if report is not None and report.exists() else done.stdout
        if done.returncode != 0:
            body += f"\n\n```\n{done.stderr[-3000:]}\n```\n"
        sections.append(f"## {title}\n\n`python bench/{script}{' --small' if args.small else ''}`\n\n{body.strip()}\n")
    info = machine_info(["pandas", "numpy", "pyarrow", "igraph", "leidenalg", "networkx", "crux_nb"])
    head = ["# Benchmark results", "", f"Mode: {'small' if args.small else 'full'}; load average at end: {load_average()}.",
            "", markdown_table(["key", "value"], list(info.items())), "",
            markdown_table(["benchmark", "script", "status", "seconds"], summary), ""]
    path = BENCH_DIR / "RESULTS.md"
    path.write_text("\n".join(head) + "\n" + "\n".join(sections))
    print(f"written to {path}")
    return 0 if all(row[2] == "ok" for row in summary) else 1


if __name__ == "__main__":
    sys.exit(main())
