"""``kb.extract_entities()``: run a model's ``extract`` task over changed sources and rebuild the entity graph.

A source's extraction is cached in the ``extractions`` table under its content
hash and the model's fingerprint, so re-running after sources change calls the
model only for sources that are new or changed; removed sources leave nothing
behind. The whole change is committed at once: a failing model call leaves
the knowledge base as it was.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pandas as pd
import pyarrow as pa

from .._hashing import canonical_json
from ..schema import coerce, empty_frame
from .graph import build_entity_frames, entity_id_for, with_entity_stage

__all__ = ["ExtractionResult", "extract_entities", "entity_id_for", "DEFAULT_BATCH_CHARS", "stale_extractor_note"]

#: Characters of chunk text per extraction call (upstream's derive batch size).
DEFAULT_BATCH_CHARS = 12_000
PROGRESS_THRESHOLD = 10
JSON_BLOCK = 1024  # sources whose output JSON is written into Arrow at once


@dataclass(frozen=True)
class ExtractionResult:
    """What one ``extract_entities`` run did."""

    model: str
    sources_extracted: int
    sources_reused: int
    calls: int
    entities: int
    mentions: int
    related: int
    call_log: Any = None

    def __repr__(self) -> str:
        return (f"ExtractionResult(model={self.model!r}, sources_extracted={self.sources_extracted}, "
                f"sources_reused={self.sources_reused}, calls={self.calls}, entities={self.entities}, "
                f"mentions={self.mentions}, related={self.related})")


def _batches(refs: list[str], texts: list[str], budget: int, shown: int | None = None) -> list[list[dict[str, str]]]:
    """Chunks packed in order under ``budget`` characters; ``shown``: a model that shows each chunk's first
    ``shown`` characters (and a label) is measured by what it shows."""
    from ..models.budget import ITEM_CHARS

    batches: list[list[dict[str, str]]] = []
    current: list[dict[str, str]] = []
    size = 0
    for ref, text in zip(refs, texts):
        chars = len(text) if shown is None else min(len(text), shown) + ITEM_CHARS
        if current and size + chars > budget:
            batches.append(current)
            current, size = [], 0
        current.append({"id": ref, "text": text})
        size += chars
    if current:
        batches.append(current)
    return batches


def _merge(outputs: list[dict[str, Any]]) -> dict[str, Any]:
    merged: dict[str, list] = {"entities": [], "mentions": [], "related": []}
    for out in outputs:
        for key in merged:
            merged[key].extend(out.get(key, []))
    return merged


def _extraction_frame(outputs: dict[str, dict[str, Any]], hashes: dict[str, str], fingerprint: str) -> pd.DataFrame:
    """The ``extractions`` table: each source's output as canonical JSON, written into Arrow a block of sources
    at a time (the JSON of a large corpus is not held as Python strings and as Arrow at once)."""
    from ..store.edge_ids import strings

    order = sorted(outputs)
    if not order:
        return empty_frame("extractions")
    blocks = [strings([canonical_json(outputs[s]) for s in order[i:i + JSON_BLOCK]])
              for i in range(0, len(order), JSON_BLOCK)]
    frame = pd.DataFrame({"source_id": order, "content_hash": [hashes[s] for s in order],
                          "model_fingerprint": fingerprint,
                          "output": pd.Series(pa.concat_arrays(blocks), dtype="str")})
    return coerce(frame, "extractions")


def _progress(total: int, enabled: bool | None):
    show = total >= PROGRESS_THRESHOLD if enabled is None else enabled
    from tqdm.auto import tqdm

    return tqdm(total=total, desc="extracting entities", unit="call", disable=not show)  # counts and time left


def extract_entities(kb: Any, model: Any = None, *, batch_chars: int | None = None,
                     progress: bool | None = None, executor: Any = None) -> ExtractionResult:
    """Add ``mentions`` (chunk → entity) and ``related`` (entity ↔ entity) edges with chunk evidence.

    ``model`` defaults to the offline model; ``progress`` shows a bar (default: when 10 or more calls are due).
    ``executor`` may be a ``concurrent.futures`` executor (or a Dask client) to run the calls concurrently.
    ``batch_chars`` (chunk text per call) defaults to the model's ``extract_batch_chars`` when it declares
    one (the offline model reads a whole source at once: its rules use the source's word statistics), else
    the model's input budget for ``extract`` (a chat model's follows its context window, see
    :mod:`crux_nb.models.budget`), else ``DEFAULT_BATCH_CHARS``.
    """
    from ..models import CallLog, OfflineModel, check_model
    from ..models.budget import input_budget
    from ..models.remote import run_calls
    from ..validation import check_int

    model = OfflineModel() if model is None else model
    check_model(model)
    if batch_chars is None:
        batch_chars = getattr(model, "extract_batch_chars", None) or input_budget(model, "extract", DEFAULT_BATCH_CHARS)
    batch_chars = check_int("extract_entities()", "batch_chars", batch_chars, minimum=1)
    state = kb.state
    fingerprint = model.fingerprint
    chunks = state.chunks
    chunk_sources = dict(zip(chunks["ref"], chunks["source_id"]))
    cache = {(s, h, f): o for s, h, f, o in zip(state.extractions["source_id"], state.extractions["content_hash"],
                                                 state.extractions["model_fingerprint"], state.extractions["output"])}
    hashes = dict(zip(state.documents["source_id"], state.documents["content_hash"]))
    due, reused = [], {}
    for source_id, content_hash in sorted(hashes.items()):
        cached = cache.get((source_id, content_hash, fingerprint))
        if cached is None:
            due.append(source_id)
        else:
            reused[source_id] = json.loads(cached)
    current_keys = {(s, h, fingerprint) for s, h in hashes.items()}
    stored_keys = set(zip(state.extractions["source_id"], state.extractions["content_hash"],
                          state.extractions["model_fingerprint"]))
    if not due and stored_keys == current_keys and (state.edges["stage"] == "entities").any():
        edges = state.edges[state.edges["stage"] == "entities"]  # nothing changed: the graph is current
        return ExtractionResult(model=model.name, sources_extracted=0, sources_reused=len(reused), calls=0,
                                entities=int(len(state.entities)), mentions=int((edges["type"] == "mentions").sum()),
                                related=int((edges["type"] == "related").sum()))
    grouped = chunks.groupby("source_id", sort=True)
    jobs = []
    for source_id in due:
        part = grouped.get_group(source_id)
        shown = getattr(model, "evidence_chars", None)
        for i, batch in enumerate(_batches(part["ref"].tolist(), part["content"].tolist(), batch_chars, shown)):
            jobs.append((source_id, f"extract:{source_id}:{i + 1}", batch))
    log = CallLog()

    bar = _progress(len(jobs), progress)
    try:
        results = run_calls([(model, "extract", (batch,), {"prompt_id": prompt_id}) for _, prompt_id, batch in jobs],
                            log=log, executor=executor, on_result=lambda: bar.update(1))
    finally:
        bar.close()
    fresh: dict[str, list] = {}
    for (source_id, _, _), output in zip(jobs, results):
        fresh.setdefault(source_id, []).append(output)
    del results, jobs  # the outputs are held once, by source, from here on
    outputs = {**reused, **{s: _merge(fresh.pop(s)) for s in sorted(fresh)}}
    extractions = _extraction_frame(outputs, hashes, fingerprint)
    entities, edges, evidence = build_entity_frames(sorted(outputs.items()), chunk_sources)
    kb.commit(lambda current: _apply(current, state, entities, edges, evidence, extractions))
    return ExtractionResult(model=model.name, sources_extracted=len(outputs) - len(reused), sources_reused=len(reused),
                            calls=len(log), entities=int(len(kb.state.entities)),
                            mentions=int((edges["type"] == "mentions").sum()),
                            related=int((edges["type"] == "related").sum()), call_log=log)


def _apply(current: Any, expected: Any, entities, edges, evidence, extractions) -> Any:
    from ..errors import CruxError

    if current is not expected:
        raise CruxError("the knowledge base changed while entities were being extracted.", code="concurrent_change",
                        hint="run kb.extract_entities() again.")
    return with_entity_stage(current, entities, edges, evidence, extractions)


def stale_extractor_note(state: Any, *, name: str, fingerprint: str) -> str | None:
    """A note when the stored entity graph was extracted by another model (or model version) than the model
    ``name`` with ``fingerprint``: the graph is not what that model extracts today, and the next
    ``kb.extract_entities(model)`` re-extracts those sources. None when the graph is current, or there is none.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> kb = crux_nb.knowledge_base(id="s")
    >>> kb.add_text("a.md", "Ada Lovelace met Charles Babbage in London.")
    >>> _ = kb.extract_entities(progress=False)
    >>> stale_extractor_note(kb.state, name="offline", fingerprint=OfflineModel().fingerprint) is None
    True
    >>> other = OfflineModel(name="other")
    >>> print(stale_extractor_note(kb.state, name=other.name, fingerprint=other.fingerprint))  # doctest: +ELLIPSIS
    the entity graph of 1 source(s) was extracted by a model with fingerprint ... ('other', fingerprint ...)...
    """
    stored = state.extractions["model_fingerprint"]
    if stored.empty or not (state.edges["stage"] == "entities").any():
        return None
    stale = stored[stored != fingerprint]
    if stale.empty:
        return None
    return (f"the entity graph of {len(stale)} source(s) was extracted by a model with fingerprint "
            f"{', '.join(sorted(set(stale))[:3])}, not by the configured model ({name!r}, "
            f"fingerprint {fingerprint}): an older crux_nb or other options. kb.extract_entities(model) "
            "re-extracts those sources; until then the graph is the older extractor's.")
