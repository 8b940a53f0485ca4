"""The whole pipeline against a real llama.cpp server (SmolLM2-135M): extraction, ``prepare`` and global
search (scan all and adaptive) on 20+ long chunks of CPython's reference topics at the server's defaults,
and on a few at a small context (2,048 tokens); a context overflow and a truncated answer each with their
own error and hint; the run recorded in a cassette that replays offline with the same results.

``CRUX_RECORD_CASSETTE=1`` also writes the recording to ``notebooks/data/llama_pyref.jsonl`` (notebook 02
replays it). Modest on purpose (4 topics, ``max_tokens=300``): CI runs it on 2 cores.
"""

from __future__ import annotations

import os
import shutil
import warnings
from pathlib import Path

import pandas as pd
import pytest

import crux_nb
from crux_nb.errors import ModelError
from crux_nb.models import CassetteModel, ChatModel

pytestmark = pytest.mark.server

ROOT = Path(__file__).resolve().parents[2]
TOPICS = ("calls", "function", "naming", "typesseq-mutable")
QUERY = "How are function arguments bound to parameters?"


def chat(url: str, **options) -> ChatModel:
    return ChatModel(base_url=url, model="smollm2", **{"max_tokens": 300, "timeout": 600, "max_retries": 1, **options})


def run(model, topics=TOPICS) -> dict:
    """Extraction -> prepare -> global search scan all and adaptive; what each did."""
    from pydoc_data.topics import topics as texts

    kb = crux_nb.knowledge_base(id="pyref", chunk_size=1200, communities=crux_nb.communities(model=model))
    kb.add_frame(pd.DataFrame({"id": list(topics), "text": [texts[t] for t in topics]}), format="text")
    extracted = kb.extract_entities(model, progress=False)
    prepared = kb.communities.prepare(progress=False)
    out = {"chunks": len(kb.state.chunks), "extract_calls": extracted.calls, "entities": extracted.entities,
           "types": sorted(set(kb.state.entities["type"].dropna())), "reports": prepared.reports_written,
           "names": sorted(kb.state.entities["canonical_name"])}
    for scan in ("all", "adaptive"):
        step = crux_nb.global_search(model=model, scan=scan, detail="detailed", limit=5)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # a 135M model's findings are often weak: the support warning
            hits, trace = kb.recipe(steps=[step]).retrieve_with_trace(QUERY)
        knowledge = trace.steps[0].knowledge
        maps = sum(1 for r in knowledge.calls.records if r.task == "map_findings" and not r.repaired)
        assert knowledge.preflight["calls"] == maps  # the preflight counts the map calls really made
        out[scan] = [h.content for h in hits]
        out[f"{scan}_calls"] = (maps, knowledge.preflight["batches"])
    return out


def test_pipeline_at_the_servers_defaults_and_its_replay(llama_url, tmp_path):
    model = chat(llama_url)
    assert model.server.context_window == 4096 and model.server.slots == 1  # llama-cpp-python's defaults
    path = tmp_path / "llama_pyref.jsonl"
    recorded = run(CassetteModel(inner=model, path=path, mode="record"))
    assert recorded["chunks"] >= 20
    assert recorded["extract_calls"] >= len(TOPICS) and recorded["reports"] >= 1
    assert set(recorded["types"]) <= set(crux_nb.schema.ENTITY_TYPES)
    assert not any(n.startswith(("c0", "chunk:")) for n in recorded["names"])  # no chunk id taken for a name
    replayer = CassetteModel(path=path)
    replayed = run(replayer)
    assert replayer.inner_calls == 0 and replayer.misses == 0
    assert replayed == recorded
    if os.environ.get("CRUX_RECORD_CASSETTE"):
        shutil.copy(path, ROOT / "notebooks" / "data" / "llama_pyref.jsonl")


def test_a_small_context_completes_through_smaller_batches(llama_small_url, llama_url):
    small, default = chat(llama_small_url), chat(llama_url)
    assert small.server.context_window == 2048
    for task in ("extract", "write_report", "map_findings", "rate"):
        assert small.input_budget(task) < default.input_budget(task) <= 24_000
    out = run(small, TOPICS[:1])
    per_call = small.input_budget("extract") // (small.evidence_chars + 16)
    assert out["extract_calls"] >= out["chunks"] / max(1, per_call) and out["reports"] >= 1


def test_a_context_overflow_names_the_numbers_and_the_knob(llama_url):
    liar = chat(llama_url, context_window=64_000)  # the user says more than the server holds
    units = [{"community_id": f"c{i}", "level": 0, "title": "Calls", "summary": "A call invokes a callable. " * 40,
              "findings": [{"id": f"c{i}:f1", "statement": "Arguments are bound to parameters. " * 20}]}
             for i in range(20)]
    with pytest.raises(ModelError) as info:
        liar.map_findings(QUERY, units)
    err = info.value
    assert err.code == "context_exceeded" and err.numbers["limit"] == 4096 and err.numbers["requested"] > 4096
    assert "context holds 4096 tokens" in str(err) and "context_window=4096" in err.hint
    assert "now 64000" in err.hint and "max_tokens" in err.hint


def test_a_truncated_answer_says_raise_max_tokens(llama_url):
    from pydoc_data.topics import topics as texts

    tight = chat(llama_url, max_tokens=8)
    leaf = {"community_id": "c1", "level": 0, "entities": [{"name": "call"}], "children": [],
            "chunks": [{"ref": "chunk:calls:c0000", "text": texts["calls"][:1000]}]}
    with pytest.raises(ModelError) as info:
        tight.write_report(leaf)
    err = info.value
    assert err.code == "output_truncated" and err.hint == "raise max_tokens (now 8) in ChatModel(max_tokens=...)."
    assert 'finish_reason "length"' in str(err) and err.code != "validation_exhausted"
