"""``expand_relations``: add evidence hits reached through the knowledge graph.

Upstream's algorithm (section 3.3), kept exactly: a breadth-first traversal per
seed, hops to or from an entity cost nothing, candidates ordered by (distance,
seed rank, support size desc, ref, discovery), scores
``1/(60 + position) + 1/(60 + seed rank + 1)``, at most 64 neighbours per read
and 512 candidates per run, incoming hits kept in order and unchanged.

Beyond upstream, ``"query"`` seeds work: entity names and aliases found in the
query (case- and whitespace-normalised, longest match first) seed after the hits.
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, replace
from typing import Any, Literal

from ...errors import ParameterError, RetrievalRunError
from ...refs import ChunkRef, KnowledgeRef, encode_ref
from .entity_match import match_entities
from ...hits import EvidenceHit, FindingHit, GraphProvenance, Provenance, hit_key
from ..trace import KnowledgeTrace
from ...validation import check_int
from ..base import Step
from ..types import StepContext, StepInput, StepOutput

__all__ = ["ExpandRelationsStep", "expand_relations", "FAN_OUT", "MAX_CANDIDATES", "RRF_K"]

FAN_OUT = 64
MAX_CANDIDATES = 512
RRF_K = 60
SEED_KINDS = ("hits", "query")
COVERAGE_BASIS = "visible graph neighbors from the bound knowledge reader"


@dataclass
class _Candidate:
    distance: int
    seed_rank: int
    support: set[str]
    path: tuple[str, ...]
    edges: tuple[str, ...]
    discovery: int


@dataclass(frozen=True)
class Expansion:
    """One added hit and how it was reached (what the expansion view shows)."""

    key: str
    ref: str
    seed: str
    path: tuple[str, ...]
    edges: tuple[str, ...]
    distance: int
    score: float
    position: int
    supports: tuple[str, ...]


@dataclass(frozen=True, repr=False)
class ExpandRelationsStep(Step):
    types: tuple[str, ...] | None = None
    direction: Literal["out", "in", "both"] = "both"
    depth: int = 1
    limit: int = 20
    seeds: tuple[str, ...] = SEED_KINDS
    entity_hops: Literal["free", "counted"] = "free"
    id: str = "expand-relations"
    kind: str = "custom"
    phase: tuple[str, str] = ("hits", "hits")
    factory = "expand_relations"

    def __post_init__(self) -> None:
        owner = "expand_relations()"
        if self.types is not None:
            if isinstance(self.types, str) or not hasattr(self.types, "__iter__"):
                raise ParameterError(owner, "types", "a list of relation type names or None", self.types)
            types = tuple(self.types)
            if not all(isinstance(t, str) for t in types):
                raise ParameterError(owner, "types", "a list of strings", self.types)
            object.__setattr__(self, "types", types)
        if not isinstance(self.direction, str) or self.direction not in ("out", "in", "both"):
            raise ParameterError(owner, "direction", "one of 'out', 'in', 'both'", self.direction)
        object.__setattr__(self, "depth", check_int(owner, "depth", self.depth, minimum=0))
        object.__setattr__(self, "limit", check_int(owner, "limit", self.limit, minimum=0))
        if isinstance(self.seeds, str) or not hasattr(self.seeds, "__iter__"):
            raise ParameterError(owner, "seeds", "a list drawn from 'hits', 'query'", self.seeds)
        seeds = tuple(self.seeds)
        if not all(isinstance(s, str) and s in SEED_KINDS for s in seeds):
            raise ParameterError(owner, "seeds", "a list drawn from 'hits', 'query'", self.seeds)
        object.__setattr__(self, "seeds", tuple(dict.fromkeys(seeds)))
        if not isinstance(self.entity_hops, str) or self.entity_hops not in ("free", "counted"):
            raise ParameterError(owner, "entity_hops", "'free' (upstream) or 'counted'", self.entity_hops)

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"direction": self.direction, "depth": self.depth, "limit": self.limit,
                                  "seeds": list(self.seeds)}
        if self.types is not None:
            config["types"] = list(self.types)
        if self.entity_hops != "free":
            config["entity_hops"] = self.entity_hops
        return config

    def __repr__(self) -> str:
        config = self.config()
        args = ([f"types={config.pop('types')!r}"] if "types" in config else []) + [f"{k}={v!r}" for k, v in config.items()]
        return f"expand_relations({', '.join(args)})"

    def run(self, input: StepInput, context: StepContext) -> StepOutput:
        binding = context.knowledge
        if binding is None:
            raise RetrievalRunError("expand_relations() requires a knowledge binding. Use kb.recipe(...) or a view "
                                    "recipe so graph access and visibility are bound.", code="missing_knowledge")
        hits = tuple(input.hits)
        if self.limit == 0 or self.depth == 0 or not self.seeds:
            return StepOutput(hits=hits)
        warnings: list[str] = []
        findings = sum(isinstance(h, FindingHit) for h in hits)
        if findings:
            warnings.append(f"expand_relations skipped {findings} finding hit{'s' if findings != 1 else ''}.")
        evidence = [h for h in hits if isinstance(h, EvidenceHit)]
        seeds = self._seeds(evidence, context)
        candidates = self._traverse(binding.reader, seeds, warnings)
        added, records = self._hydrate(binding, candidates, evidence)
        trace = KnowledgeTrace(contributor="expand-relations", coverage="exact", coverage_basis=COVERAGE_BASIS,
                               available={"reports": 0}, processed={"reports": 0, "findings": len(added)})
        return StepOutput(hits=hits + tuple(added), warnings=tuple(warnings), knowledge=trace,
                          details={"seeds": tuple(encode_ref(s) for s in seeds), "expansions": tuple(records)})

    def _seeds(self, evidence: list[EvidenceHit], context: StepContext) -> list[KnowledgeRef]:
        seeds: list[KnowledgeRef] = []
        if "hits" in self.seeds:
            seeds += [ChunkRef(h.source.id, h.chunk_id) for h in evidence]
        if "query" in self.seeds:
            seeds += match_entities(context.state, context.request.query)
        return seeds

    def _traverse(self, reader: Any, seeds: list[KnowledgeRef], warnings: list[str]) -> dict[str, _Candidate]:
        types = list(self.types) if self.types is not None else None
        direction = None if self.direction == "both" else self.direction
        candidates: dict[str, _Candidate] = {}
        capped = False
        discovery = 0
        for rank, seed in enumerate(seeds):
            seed_ref = encode_ref(seed)
            seen = {seed_ref}
            queue = deque([(seed, seed_ref, 0, (seed_ref,), ())])
            while queue:
                ref, encoded, distance, path, edges = queue.popleft()
                if distance >= self.depth:
                    continue
                neighbors = reader.neighbors(ref, types=types, direction=direction, limit=FAN_OUT)
                if len(neighbors) >= FAN_OUT:
                    warnings.append(f"expand_relations truncated neighbors for {encoded} at {FAN_OUT}.")
                for n in neighbors:
                    peer = encode_ref(n.ref)
                    cost = self._cost(ref.kind, n.ref.kind)
                    nxt = distance + cost
                    if nxt > self.depth:
                        continue
                    route = (path + (peer,), edges + (n.type,))
                    if peer != seed_ref:
                        current = candidates.get(peer)
                        if current is not None:
                            current.support.add(seed_ref)
                            if (nxt, rank) < (current.distance, current.seed_rank):
                                current.distance, current.seed_rank = nxt, rank
                                current.path, current.edges = route
                        elif len(candidates) < MAX_CANDIDATES:
                            discovery += 1
                            candidates[peer] = _Candidate(nxt, rank, {seed_ref}, route[0], route[1], discovery)
                        elif not capped:
                            capped = True
                            warnings.append(f"expand_relations truncated graph candidates at {MAX_CANDIDATES}.")
                    if peer not in seen:
                        seen.add(peer)
                        queue.append((n.ref, peer, nxt, *route))
        return candidates

    def _cost(self, here: str, there: str) -> int:
        if self.entity_hops == "free":  # upstream: any hop to or from an entity is free
            return 0 if here == "entity" or there == "entity" else 1
        return 0 if there == "entity" and here != "entity" else 1  # an entity is a free waypoint, not a free hub

    def _hydrate(self, binding: Any, candidates: dict[str, _Candidate], evidence: list[EvidenceHit]):
        ordered = sorted(candidates.items(), key=lambda kv: (kv[1].distance, kv[1].seed_rank, -len(kv[1].support),
                                                             kv[0], kv[1].discovery))
        taken = {hit_key(h) for h in evidence}
        added: list[EvidenceHit] = []
        records: list[Expansion] = []
        for i, (ref, cand) in enumerate(ordered):
            if len(added) >= self.limit:
                break
            hit = binding.hydrate(ref)
            if hit is None or not isinstance(hit, EvidenceHit) or hit_key(hit) in taken:
                continue
            taken.add(hit_key(hit))
            score = 1 / (RRF_K + i + 1) + 1 / (RRF_K + cand.seed_rank + 1)
            graph = GraphProvenance(seed=cand.path[0], path=cand.path, edges=cand.edges, distance=cand.distance)
            base = hit.provenance or Provenance()
            raw = base.raw_score if base.raw_score is not None else hit.score
            added.append(replace(hit, score=score, provenance=replace(base, raw_score=raw, fused_score=score, graph=graph)))
            records.append(Expansion(key=hit_key(hit), ref=ref, seed=cand.path[0], path=cand.path, edges=cand.edges,
                                     distance=cand.distance, score=score, position=i,
                                     supports=tuple(sorted(cand.support))))
        return added, records


def expand_relations(*, types: list[str] | None = None, direction: Literal["out", "in", "both"] = "both",
                     depth: int = 1, limit: int = 20, seeds: tuple[str, ...] = SEED_KINDS,
                     entity_hops: Literal["free", "counted"] = "free") -> ExpandRelationsStep:
    """Expand evidence hits through the graph (additive: incoming hits are kept in order, unchanged).

    ``entity_hops="free"`` is upstream's rule: a hop to or from an entity costs nothing, so
    chunks sharing an entity sort first, and with ``mentions``/``related`` a traversal reaches
    the entity graph's whole component (bounded by the 64 and 512 ceilings). ``"counted"``
    makes an entity a free waypoint only when entered from a chunk: chunk → entity → chunk is
    one hop, entity → entity is one hop.

    >>> expand_relations(types=["mentions", "related"], limit=8)
    expand_relations(types=['mentions', 'related'], direction='both', depth=1, limit=8, seeds=['hits', 'query'])
    """
    return ExpandRelationsStep(types=types, direction=direction, depth=depth, limit=limit, seeds=seeds,
                               entity_hops=entity_hops)
