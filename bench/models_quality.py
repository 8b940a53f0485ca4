"""Quality of the offline model: entity recall and report grounding.

Usage::

    python bench/models_quality.py            # full run (about 20 s)
    python bench/models_quality.py --small    # fast subset (used by tests/models/test_bench_smoke.py)
    python bench/models_quality.py --json     # also print the results as one JSON line

Besides the printed table it writes a Markdown report, bench/out/models_quality[_small].md (``--out``),
and a summary JSON beside it.

Measures, for two corpora:

* **Entity recall**: the share of hand-listed main entities that the offline
  ``extract`` finds (an entity counts as found when an extracted name or alias
  equals its name or one of its aliases, case- and whitespace-insensitively).
  (a) the bundled sample corpus ``data/sample/*.md`` (front matter stripped)
  against ``data/sample_entities.csv``; (b) *A Christmas Carol* from
  ``../shared/data`` against the character list at the top of the book — the
  list itself is cut from the text before extraction, so it cannot help.
  Only gold entities whose name, an alias or the name without its title occurs in
  the measured text count (``listed`` vs ``gold`` in the table); ``--small`` uses
  the first documents / chunks.
  ``extracted`` is the number of distinct entity names found (a rough view of
  precision: compare it with ``gold``).
* **Report grounding**: the share of report findings whose every cited chunk
  contains the finding's sentence verbatim, over leaf reports written for
  groups of 10 consecutive chunks and parent reports over groups of 5 leaves.
  It must be 100 %: the script exits with status 1 otherwise.

Texts are chunked by paragraphs (packed up to about 1,200 characters) here, not
by the knowledge base, so the numbers depend on this module only. Extraction runs
on batches of 10 chunks, as a derive pass would.
"""

from __future__ import annotations

import argparse
import csv
import json
import re
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from crux_nb.models import CallLog, OfflineModel, call_task  # noqa: E402

from bench._common import OUT_DIR, machine_info, markdown_table, write_summary, write_text  # noqa: E402

SAMPLE_DIR = ROOT / "data" / "sample"
SAMPLE_GOLD = ROOT / "data" / "sample_entities.csv"
CAROL = ROOT.parent / "shared" / "data" / "christmas-carol" / "a-christmas-carol.txt"
CHUNK_CHARS = 1200
GROUP = 10
PARENT_GROUP = 5
_TITLE_DOT = re.compile(r"\b(Mr|Mrs|Ms|Dr|St)\.", re.I)
_TITLE = re.compile(r"^(?:Mr|Mrs|Ms|Miss|Master|Dr)\.?\s+(?=\S)")


def norm(name: str) -> str:
    """Comparison form of a name: casefolded, title periods and extra whitespace removed."""
    return " ".join(_TITLE_DOT.sub(r"\1", name).split()).casefold()


def chunk_paragraphs(text: str, *, max_chars: int = CHUNK_CHARS) -> list[str]:
    """Paragraphs (blank-line separated) packed into chunks of at most ``max_chars`` (a longer paragraph stays whole)."""
    chunks, cur = [], ""
    for para in (p.strip("\n") for p in re.split(r"\n[ \t]*\n", text)):
        if not para.strip():
            continue
        if cur and len(cur) + 2 + len(para) > max_chars:
            chunks.append(cur)
            cur = ""
        cur = f"{cur}\n\n{para}" if cur else para
    if cur:
        chunks.append(cur)
    return chunks


def strip_front_matter(text: str) -> str:
    if text.startswith("---\n"):
        end = text.find("\n---", 4)
        if end != -1:
            return text[end + 4:].lstrip("\n")
    return text


def load_sample(small: bool) -> tuple[list[dict], list[dict]] | None:
    if not SAMPLE_DIR.is_dir() or not SAMPLE_GOLD.is_file():
        return None
    files = sorted(SAMPLE_DIR.glob("*.md"))[: 6 if small else None]
    chunks = []
    for path in files:
        for i, text in enumerate(chunk_paragraphs(strip_front_matter(path.read_text(encoding="utf-8")))):
            chunks.append({"id": f"chunk:{path.name}:c{i:04d}", "text": text})
    gold = []
    with SAMPLE_GOLD.open(encoding="utf-8", newline="") as fh:
        for row in csv.DictReader(fh):
            aliases = [a.strip() for a in re.split(r"[;|]", row.get("aliases") or "") if a.strip()]
            gold.append({"name": row["name"].strip(), "aliases": aliases})
    return chunks, gold


def carol_gold(text: str) -> tuple[list[dict], str]:
    """The character list (name before the first comma; "Tiny Tim" in parentheses is an alias;
    "Belinda and Martha Cratchit" is two people) and the text after it."""
    head, sep, body = text.partition("\nSTAVE ONE")
    listing = head.split("CHARACTERS", 1)[1]
    entries: list[str] = []
    for line in listing.splitlines():
        if not line.strip():
            continue
        if line[0].isupper():
            entries.append(line.strip())
        elif entries:
            entries[-1] += " " + line.strip()
    gold = []
    for entry in entries:
        name = entry.split(",", 1)[0].strip()
        aliases = re.findall(r'\("([^"]+)"\)', name)
        name = re.sub(r'\s*\("[^"]+"\)', "", name).strip()
        both = re.match(r"^(\w+) and (\w+) (\w+)$", name)
        if both:  # listed by first name: the first names are aliases
            gold.append({"name": f"{both.group(1)} {both.group(3)}", "aliases": [both.group(1)]})
            gold.append({"name": f"{both.group(2)} {both.group(3)}", "aliases": [both.group(2)]})
        else:
            gold.append({"name": name, "aliases": aliases})
    return gold, "STAVE ONE" + body if sep else text


def load_carol(small: bool) -> tuple[list[dict], list[dict]] | None:
    if not CAROL.is_file():
        return None
    gold, body = carol_gold(CAROL.read_text(encoding="utf-8"))
    texts = chunk_paragraphs(body)[: 60 if small else None]
    chunks = [{"id": f"chunk:a-christmas-carol.txt:c{i:04d}", "text": t} for i, t in enumerate(texts)]
    return chunks, gold


def gold_forms(entity: dict) -> set[str]:
    """Accepted forms of a gold entity: its name, its aliases and its name without a title
    (``Mr. Topper`` is found as ``Topper``: the book never writes "Mr. Topper")."""
    forms = [entity["name"], *entity["aliases"], _TITLE.sub("", entity["name"])]
    return {norm(f) for f in forms if f.strip()}


def occurs(entity: dict, chunks: list[dict]) -> bool:
    """Whether any accepted form of ``entity`` occurs in the chunks as whole words."""
    text = norm("\n".join(c["text"] for c in chunks))
    return any(re.search(r"(?<!\w)" + re.escape(f) + r"(?!\w)", text) for f in gold_forms(entity))


def measure(label: str, chunks: list[dict], gold: list[dict], model: OfflineModel) -> dict:
    listed = len(gold)
    gold = [g for g in gold if occurs(g, chunks)]  # an entity the text never names cannot be found
    log = CallLog()
    started = time.perf_counter()
    found_names: set[str] = set()
    canonical: set[str] = set()
    leaves = []
    for g, start in enumerate(range(0, len(chunks), GROUP)):
        batch = chunks[start:start + GROUP]
        extracted = call_task(model, "extract", batch, prompt_id=f"extract:{label}:{g + 1}", log=log)
        for entity in extracted["entities"]:
            canonical.add(norm(entity["name"]))
            found_names.update(norm(n) for n in [entity["name"], *entity["aliases"]])
        community = {
            "community_id": f"{label}:leaf:{g + 1}",
            "level": 0,
            "entities": [{"name": e["name"]} for e in extracted["entities"]],
            "chunks": [{"ref": c["id"], "text": c["text"]} for c in batch],
            "children": [],
        }
        report = call_task(model, "write_report", community, prompt_id=f"community:{community['community_id']}", log=log)
        leaves.append(dict(report, community_id=community["community_id"], entities=community["entities"]))
    parents = []
    for p, start in enumerate(range(0, len(leaves), PARENT_GROUP)):
        children = leaves[start:start + PARENT_GROUP]
        entities = list({e["name"]: e for child in children for e in child["entities"]}.values())
        community = {"community_id": f"{label}:parent:{p + 1}", "level": 1, "entities": entities, "chunks": [], "children": children}
        parents.append(call_task(model, "write_report", community, prompt_id=f"community:{community['community_id']}", log=log))
    elapsed = time.perf_counter() - started
    missed = [g["name"] for g in gold if not (gold_forms(g) & found_names)]
    text_by_ref = {c["id"]: c["text"] for c in chunks}
    findings = [f for r in leaves + parents for f in r["findings"]]
    grounded = sum(1 for f in findings if f["evidence"] and all(f["statement"] in text_by_ref.get(ref, "") for ref in f["evidence"]))
    return {
        "corpus": label,
        "chunks": len(chunks),
        "listed": listed,
        "gold": len(gold),
        "found": len(gold) - len(missed),
        "recall": round((len(gold) - len(missed)) / len(gold), 4) if gold else None,
        "extracted": len(canonical),
        "reports": len(leaves) + len(parents),
        "findings": len(findings),
        "grounded": round(grounded / len(findings), 4) if findings else None,
        "calls": len(log),
        "seconds": round(elapsed, 2),
        "missed": missed,
    }


def table(rows: list[dict]) -> str:
    cols = ["corpus", "chunks", "listed", "gold", "found", "recall", "extracted", "reports", "findings", "grounded", "calls", "seconds"]

    def cell(row: dict, col: str) -> str:
        value = row.get(col)
        if value is None:
            return "n/a"
        if col in ("recall", "grounded"):
            return f"{100 * value:.1f}%"
        return str(value)

    widths = {c: max(len(c), *(len(cell(r, c)) for r in rows)) for c in cols}
    lines = [" | ".join(c.ljust(widths[c]) for c in cols), "-+-".join("-" * widths[c] for c in cols)]
    lines += [" | ".join(cell(r, c).ljust(widths[c]) for c in cols) for r in rows]
    return "\n".join(lines)


def markdown_report(rows: list[dict], *, small: bool, fingerprint: str) -> str:
    """The printed table as a Markdown report (same columns and cells)."""
    lines = table(rows).splitlines()
    header = [c.strip() for c in lines[0].split(" | ")]
    body = [[c.strip() for c in line.split(" | ")] for line in lines[2:]]
    out = [f"# Offline model quality ({'small' if small else 'full'})", "",
           f"Model `{fingerprint}`. Recall: share of the hand-listed entities named in the measured text (`gold`, "
           "of `listed`) that the offline `extract` finds; grounded: share of report findings whose every cited chunk "
           "holds the finding verbatim (must be 100%).", "",
           markdown_table(header, body), ""]
    notes = [f"- missed in {r['corpus']}: {', '.join(r['missed'])}" for r in rows if r.get("missed")]
    notes += [f"- {r['corpus']}: skipped (data not found)" for r in rows if r.get("skipped")]
    out += notes + ([""] if notes else [])
    info = machine_info(["pandas", "numpy"])
    out += ["## Machine", "", markdown_table(["key", "value"], [[k, v] for k, v in info.items()], align=["l", "l"]),
            ""]
    return "\n".join(out)


def summary_rows(rows: list[dict]) -> list[dict]:
    """Per corpus: entity recall (found of the hand-listed gold entities; the benchmark sets no recall target)
    and report grounding (target: every finding grounded)."""
    out = []
    for r in rows:
        if r.get("skipped"):
            continue
        if r["gold"]:
            out.append({"measure": f"entity recall, {r['corpus']} (hand-listed entities found, count)",
                        "ours": r["found"], "baseline": r["gold"],
                        "baseline_name": f"hand list ({r['gold']} of {r['listed']} named in the text)"})
        if r["grounded"] is not None:
            out.append({"measure": f"report grounding, {r['corpus']} (share of {r['findings']} findings)",
                        "ours": r["grounded"], "target": "ours == 1",
                        "verdict": "pass" if r["grounded"] >= 1.0 else "miss"})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="fast subset (6 documents / 60 chunks)")
    parser.add_argument("--json", action="store_true", help="also print the results as one JSON line")
    parser.add_argument("--out", type=Path, help="Markdown output (default bench/out/models_quality[_small].md)")
    args = parser.parse_args(argv)
    model = OfflineModel()
    rows = []
    for label, loader, where in (("sample", load_sample, f"{SAMPLE_DIR} / {SAMPLE_GOLD}"), ("christmas-carol", load_carol, str(CAROL))):
        loaded = loader(args.small)
        if loaded is None:
            print(f"[skip] {label}: data not found at {where}")
            rows.append({"corpus": label, "missed": [], "skipped": True})
            continue
        rows.append(measure(label, *loaded, model))
    print(f"crux_nb offline model quality ({'small' if args.small else 'full'}; model {model.fingerprint})")
    print(table(rows))
    for row in rows:
        if row.get("missed"):
            print(f"missed in {row['corpus']}: {', '.join(row['missed'])}")
    out = args.out or OUT_DIR / ("models_quality_small.md" if args.small else "models_quality.md")
    write_text(out, markdown_report(rows, small=args.small, fingerprint=model.fingerprint))
    write_summary(out, "models_quality", summary_rows(rows))
    print(f"written to {out}", file=sys.stderr)
    if args.json:
        print(json.dumps({"small": args.small, "fingerprint": model.fingerprint, "rows": rows}, sort_keys=True))
    bad = [r["corpus"] for r in rows if r.get("grounded") is not None and r["grounded"] < 1.0]
    if bad:
        print(f"FAIL: report grounding below 100% for {', '.join(bad)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
