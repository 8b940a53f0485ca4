"""``expand_relations``: add evidence hits reached through the knowledge graph.

Two rankings over one vectorised traversal (``crux_nb.graph.frontier``: upstream's per-seed
breadth-first search, a generation at a time over CSR arrays), at most 64 neighbours per read and
512 candidates per run, incoming hits kept in order and unchanged:

* ``ranking="relevance"`` (the default): entity hops are counted (chunk → entity → chunk is one
  hop); every path carries its seed's weight ``1/(seed rank + 1)``, divided at each entity (or
  section, document) it passes by the number of chunks adjacent to that node -- HippoRAG's node
  specificity, so a rare entity is a strong link and a hub a weak one (``hub_share`` cuts hubs out
  altogether). A candidate's graph mass is the sum over its paths. Candidates are scored in the units of the query's relevance from the ``retrieve``
  step of the same run (0..1, the best chunk 1; :mod:`.joint`): a chunk reached through an entity scores
  ``relevance + graph_weight x sqrt(mass)``, a structural neighbour (the chunk before or after a hit, a
  chunk of its section) its relevance alone, and one with no relevance is left out; every candidate adds
  ``title_weight`` x how fully the query names its source (:mod:`.titles`). With ``compete=True`` (the default)
  the retrieve step's next candidates join the pool with their relevance, so graph candidates have to beat what a
  larger ``retrieve`` would have returned. Ordered by (score desc, distance, seed rank, ref). Past the first hop, a
  node whose read would pass each neighbour less than ``min_share`` of its seed's weight is not read (default
  ``MIN_SHARE`` = 1/16: what reaches a node through an entity adjacent to more than 16 chunks, or a
  path as thin, stops there instead of spreading a vanishing share over many neighbours), and each hop
  past the first keeps ``damping`` (0.01) of the mass: a second hop mostly fills in where the first
  found too little (measured: weighing every hop alike at depth 2 lost 5-14 points of Recall@5).
* ``ranking="upstream"``: upstream's algorithm (section 3.3) exactly: free entity hops, order (distance, seed
  rank, support size desc, ref, discovery), score ``1/(60 + position) + 1/(60 + seed rank + 1)``.

``"query"`` seeds work (beyond upstream): entity names and aliases found in the query (case- and
whitespace-normalised, longest match first) seed after the hits; with ``dense_entities=k`` and a dense leg in
the run, the k entities whose name vectors are nearest the query's follow them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from ...errors import ParameterError, RetrievalRunError
from ...graph.frontier import traverse
from ...hits import EvidenceHit, FindingHit, hit_key
from ...refs import ChunkRef, KnowledgeRef, encode_ref
from ...validation import check_int, check_name, check_number
from ..base import Step, changed
from ..retriever.lexical import RRF_K, ranked
from ..trace import KnowledgeTrace
from ..types import CHUNK_RANKING, CHUNK_RELEVANCE, QUERY_VECTOR, StepContext, StepInput, StepOutput
from .entity_match import match_entities, nearest_entities
from .records import Expansion, ExpansionReason, graph_hit, tail_hit
from .joint import Pool, default_graph_weight, graph_pool, joint_pool, shortfall, upstream_pool
from .titles import TITLE_DEPTH, TITLE_WEIGHT, name_term

__all__ = ["ExpandRelationsStep", "expand_relations", "Expansion", "ExpansionReason", "FAN_OUT", "MAX_CANDIDATES",
           "RRF_K", "RANKINGS", "RELEVANCE_KEY", "DAMPING", "MIN_SHARE"]

FAN_OUT = 64
#: the relevance ranking's share of mass kept per hop past the first (bench/multihop.py, depth 2 and 3)
DAMPING = 0.01
#: the relevance ranking's read floor past the first hop: depth-2 Recall@5 on the multi-hop samples is the same at
#: 1/24, 1/16 and 1/8 and at least as good as at 1/64 (the former default) on two of three; 1/16 reads about half
#: the nodes 1/64 reads on the 100k-node bench graph (bench/HISTORY.md)
MIN_SHARE = 1 / 16
MAX_CANDIDATES = 512
SEED_KINDS = ("hits", "query")
RANKINGS = ("relevance", "upstream")
RELEVANCE_KEY = CHUNK_RELEVANCE
COVERAGE_BASIS = "visible graph neighbors from the bound knowledge reader"


@dataclass(frozen=True, repr=False)
class ExpandRelationsStep(Step):
    types: tuple[str, ...] | None = None
    direction: Literal["out", "in", "both"] = "both"
    depth: int = 1
    limit: int = 20
    seeds: tuple[str, ...] = SEED_KINDS
    ranking: Literal["relevance", "upstream"] = "relevance"
    entity_hops: Literal["free", "counted"] | None = None  # None: the ranking's rule (counted / free)
    fan_out: int = FAN_OUT
    max_candidates: int = MAX_CANDIDATES
    dense_entities: int = 0
    min_share: float | None = None  # None: MIN_SHARE under the relevance ranking
    damping: float | None = None  # None: DAMPING under the relevance ranking
    compete: bool | None = None  # None: True under the relevance ranking (graph candidates vs retrieve's next)
    graph_weight: float | None = None  # None: by the corpus' shape (default_graph_weight)
    hub_share: float | None = None  # None: every entity routes (specificity alone damps hubs)
    title_weight: float | None = None  # None: TITLE_WEIGHT under the relevance ranking (the source-name match)
    id: str = "expand-relations"
    kind: str = "custom"
    phase: tuple[str, str] = ("hits", "hits")
    factory = "expand_relations"
    #: parameters shown by repr and to_dict() only when changed
    DEFAULTS = {"ranking": "relevance", "entity_hops": None, "fan_out": FAN_OUT, "max_candidates": MAX_CANDIDATES,
                "dense_entities": 0, "min_share": None, "damping": None, "compete": None, "graph_weight": None,
                "hub_share": None, "title_weight": None, "id": "expand-relations"}

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
        if not isinstance(self.ranking, str) or self.ranking not in RANKINGS:
            raise ParameterError(owner, "ranking", "'relevance' (default) or 'upstream'", self.ranking)
        if self.entity_hops is not None and (not isinstance(self.entity_hops, str)
                                             or self.entity_hops not in ("free", "counted")):
            raise ParameterError(owner, "entity_hops", "'free' (upstream), 'counted' or None", self.entity_hops)
        object.__setattr__(self, "fan_out", check_int(owner, "fan_out", self.fan_out, minimum=1))
        object.__setattr__(self, "max_candidates", check_int(owner, "max_candidates", self.max_candidates, minimum=1))
        object.__setattr__(self, "dense_entities", check_int(owner, "dense_entities", self.dense_entities, minimum=0))
        for name in ("min_share", "damping", "hub_share"):  # the relevance ranking's; upstream: every node, undamped
            value = getattr(self, name)
            if value is not None:
                if self.ranking != "relevance":
                    raise ParameterError(owner, name, "None under ranking='upstream'", value)
                object.__setattr__(self, name, check_number(owner, name, value, minimum=0.0, maximum=1.0))
        if self.compete is not None:
            if not isinstance(self.compete, bool):
                raise ParameterError(owner, "compete", "True, False or None", self.compete)
            if self.ranking != "relevance":
                raise ParameterError(owner, "compete", "None under ranking='upstream'", self.compete)
        if self.graph_weight is not None:
            if self.ranking != "relevance":
                raise ParameterError(owner, "graph_weight", "None under ranking='upstream'", self.graph_weight)
            object.__setattr__(self, "graph_weight", check_number(owner, "graph_weight", self.graph_weight, minimum=0.0,
                                                                          maximum=1e6))
        if self.title_weight is not None:
            if self.ranking != "relevance":
                raise ParameterError(owner, "title_weight", "None under ranking='upstream'", self.title_weight)
            object.__setattr__(self, "title_weight", check_number(owner, "title_weight", self.title_weight,
                                                                  minimum=0.0, maximum=1e6))
        check_name(owner, "id", self.id)

    @property
    def titles(self) -> float:
        """The weight of the source-name match in force (0 under upstream: no relevance units to add it to)."""
        if self.ranking != "relevance":
            return 0.0
        return TITLE_WEIGHT if self.title_weight is None else self.title_weight

    @property
    def competes(self) -> bool:
        """Whether graph candidates compete with the retrieve step's next candidates (the relevance ranking's
        default; never under upstream)."""
        return self.ranking == "relevance" and self.compete is not False

    def weight_for(self, state: Any) -> float:
        """The graph weight in force on ``state``: the parameter, else :func:`default_graph_weight` of its shape."""
        if self.graph_weight is not None:
            return self.graph_weight
        return default_graph_weight(len(state.chunks), len(state.documents))

    @property
    def floor(self) -> float | None:
        """The relevance ranking's read floor in force (None: every node is read)."""
        if self.ranking != "relevance":
            return None
        return (MIN_SHARE if self.min_share is None else self.min_share) or None

    @property
    def hubs(self) -> float | None:
        """The relevance ranking's hub cut in force (None: every entity routes; always None under upstream)."""
        return self.hub_share if self.ranking == "relevance" else None

    @property
    def hop_damping(self) -> float:
        """The share of mass a path keeps per hop past the first, in force (1.0 under upstream)."""
        if self.ranking != "relevance":
            return 1.0
        return DAMPING if self.damping is None else self.damping

    @property
    def hops(self) -> str:
        """The entity-hop rule in force: the override, else the ranking's own."""
        return self.entity_hops or ("counted" if self.ranking == "relevance" else "free")

    def config(self) -> dict[str, Any]:
        config: dict[str, Any] = {"direction": self.direction, "depth": self.depth, "limit": self.limit,
                                  "seeds": list(self.seeds)}
        if self.types is not None:
            config["types"] = list(self.types)
        return {**config, **changed(self, self.DEFAULTS)}

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
        index = binding.reader.traversal_index
        seed_codes = index.codes_of([encode_ref(s) for s in seeds])
        view = index.view(*self.view_key())
        relevance = self.ranking == "relevance"
        weights = 1.0 / (np.arange(len(seeds)) + 1.0) if relevance else None
        found = traverse(index, view, seed_codes, depth=self.depth,
                         entity_hops=self.hops, max_candidates=self.max_candidates, weights=weights, floor=self.floor,
                         damping=self.hop_damping)
        warnings += found.collapsed_warnings()  # as the trace shows them (collapse_warnings)
        weight = self.weight_for(context.state) if relevance else None
        # the hits' own codes: the first seeds when the hits seed, else looked up here (the tail must skip them)
        hit_codes = seed_codes[:len(evidence)] if "hits" in self.seeds else \
            index.codes_of([encode_ref(ChunkRef(h.source.id, h.chunk_id)) for h in evidence])
        pool = self._rank(index, found, context, hit_codes, weight) if relevance else upstream_pool(found)
        added, records, filled, skipped = self._hydrate(binding, index, view, found, pool, evidence)
        has_relevance = callable(context.extras.get(RELEVANCE_KEY)) if isinstance(context.extras, dict) else False
        short = shortfall(self.limit, len(added), skipped, pool, can_compete=relevance and has_relevance)
        if short is not None:
            warnings.append(short)
        trace = KnowledgeTrace(contributor="expand-relations", coverage="exact", coverage_basis=COVERAGE_BASIS,
                               available={"reports": 0}, processed={"reports": 0, "findings": len(added)})
        return StepOutput(hits=hits + tuple(added), warnings=tuple(warnings), knowledge=trace,
                          details={"seeds": tuple(encode_ref(s) for s in seeds), "expansions": tuple(records),
                                   "filled": tuple(filled), "pruned": found.pruned, "skipped": skipped,
                                   **({"graph_weight": weight, "title_weight": self.titles, "hubs": view.hubs}
                                      if relevance else {})})

    def view_key(self) -> tuple:  # TraversalIndex.view's arguments for a run: types, direction, fan-out, hubs
        return (None if self.types is None else frozenset(self.types),
                None if self.direction == "both" else (0 if self.direction == "out" else 1), self.fan_out, self.hubs)

    def _seeds(self, evidence: list[EvidenceHit], context: StepContext) -> list[KnowledgeRef]:
        seeds: list[KnowledgeRef] = []
        if "hits" in self.seeds:
            seeds += [ChunkRef(h.source.id, h.chunk_id) for h in evidence]
        if "query" in self.seeds:
            named = match_entities(context.state, context.request.query)
            seeds += named
            vector = context.extras.get(QUERY_VECTOR) if isinstance(context.extras, dict) else None
            if self.dense_entities and callable(vector):  # a dense leg ran: entities whose names are near the query
                embedder, unit = vector()
                if unit is not None:
                    seeds += nearest_entities(context.state, embedder, unit, self.dense_entities, exclude=named)
        return seeds

    def _rank(self, index, found, context: StepContext, hit_codes: list[int | None], weight: float) -> Pool:
        chunk_scores = context.extras.get(RELEVANCE_KEY) if isinstance(context.extras, dict) else None
        if callable(chunk_scores):  # retrieve leaves it to be computed on demand
            chunk_scores = chunk_scores()
        if chunk_scores is not None:
            chunk_scores = np.asarray(chunk_scores, dtype=float)
            if len(chunk_scores) != len(index.chunk_code):
                chunk_scores = None
        named = None if chunk_scores is None else name_term(context.state, context.request.query, self.titles,
                                                            rows=len(chunk_scores))
        if chunk_scores is None or not self.competes:
            return graph_pool(index, found, chunk_scores, weight=weight, named=named)
        head = context.extras.get(CHUNK_RANKING)
        if not callable(head):  # a producer that leaves relevance but no ranking: rank it here
            head = lambda top: ranked(chunk_scores, None, top=top)  # noqa: E731
        taken = index.row_of_code[np.array([c for c in hit_codes if c is not None], dtype=np.int64)]
        # a filter or view hides rows from the ranking already
        return joint_pool(index, found, chunk_scores, taken[taken >= 0], head, room=self.limit, weight=weight,
                          named=named, depth=TITLE_DEPTH)

    def _hydrate(self, binding: Any, index, view, found, pool: Pool, evidence: list[EvidenceHit]):
        taken = {hit_key(h) for h in evidence}
        added: list[EvidenceHit] = []
        records: list[Expansion] = []  # hits reached through the graph
        filled: list[Expansion] = []  # the retrieve step's next candidates that outranked the graph's
        order, n_graph = pool.order, pool.n_graph
        graph = order < n_graph
        rows = np.full(len(order), -1, dtype=np.int64)  # chunk rows; -1 for entities, sections, documents
        rows[graph] = index.row_of_code[found.codes[order[graph]]]
        rows[~graph] = pool.tail_rows[order[~graph] - n_graph]
        positions = np.flatnonzero(rows >= 0)  # a hit's position counts every candidate ranked above it
        skipped = {"candidates": len(positions), "hidden": 0, "already": 0, "gated": pool.gated}
        for position, i, row in zip(positions.tolist(), order[positions].tolist(), rows[positions].tolist()):
            if len(added) >= self.limit:
                break
            key = binding.row_key(row)  # admitted and new before its route and reason are built
            if key is None or key in taken:
                skipped["hidden" if key is None else "already"] += 1
                continue
            if i >= n_graph:
                hit, record = tail_hit(binding, pool, i, row, key, position)
            else:
                hit, record = graph_hit(binding, index, view, found, pool, i, row, key, position)
            taken.add(key)
            added.append(hit)
            (filled if i >= n_graph else records).append(record)
        return added, records, filled, skipped


def expand_relations(*, types: list[str] | None = None, direction: Literal["out", "in", "both"] = "both",
                     depth: int = 1, limit: int = 20, seeds: tuple[str, ...] = SEED_KINDS,
                     ranking: Literal["relevance", "upstream"] = "relevance",
                     entity_hops: Literal["free", "counted"] | None = None, fan_out: int = FAN_OUT,
                     max_candidates: int = MAX_CANDIDATES, dense_entities: int = 0, min_share: float | None = None,
                     damping: float | None = None, compete: bool | None = None, graph_weight: float | None = None,
                     hub_share: float | None = None, title_weight: float | None = None,
                     id: str = "expand-relations") -> ExpandRelationsStep:
    """Expand evidence hits through the graph (additive: incoming hits are kept in order, unchanged).

    Parameters
    ----------
    types, direction, depth, limit, seeds
        Which edges to follow, how far, how many hits to add, and what seeds the traversal
        (``"hits"``: the incoming evidence hits, ``"query"``: entities named in the query).
    ranking
        ``"relevance"`` (default): counted entity hops, paths weighted by seed rank and by the
        specificity of the entities they pass (``1/|chunks mentioning it|``); a candidate scores the
        query's relevance from ``retrieve`` plus ``graph_weight x sqrt(mass)`` when reached through an
        entity, its relevance alone when reached as a structural neighbour; the reason is recorded per hit.
        ``"upstream"``: upstream's traversal, order and score exactly (free entity hops).
    compete
        The relevance ranking's pool (None, the default: True): the retrieve step's next candidates compete
        with the graph's, so at a budget of k hits the expansion never swaps a chunk ``retrieve(k)`` would
        have returned for a graph candidate that scores lower. A hit taken from that tail carries the
        retrieve step's rank (``provenance.ranks == {"retrieve": rank}``, no graph route) and is listed in
        the step's details under ``"filled"``. False: graph candidates only; fewer hits than ``limit``
        may come back, and the trace says why.
    title_weight
        The relevance ranking's weight of the source-name match (None, the default: ``TITLE_WEIGHT`` = 0.3): a
        candidate gains this times how fully the query names its source (the share of the source id's tokens,
        split as BM25 splits text and weighted by their rarity among the source ids, that the query holds;
        ``titles.SourceNames``), and the retrieve tail is read ``TITLE_DEPTH`` rows deeper so a candidate it
        lifts can compete. 0 turns it off. Measured (bench/HISTORY.md, round 5): the equal-budget gain over plain
        retrieve on the Python reference went from +1.8 / +2.6 to +4.4 / +4.4, on CMake's help from +3.6 / +1.2
        to +11.9 / +4.8; opaque ids are unaffected. The weight in force is in the step's details.
    graph_weight
        The relevance ranking's weight of graph support against relevance (None, the default: 1.0 in a
        knowledge base of one-chunk passages, 0.25 in one of multi-chunk documents, see
        ``joint.default_graph_weight``; 0 with ``title_weight=0`` ranks by relevance alone, reproducing ``retrieve``
        at equal budget).
        The weight in force is in the step's details (``"graph_weight"``).
    entity_hops
        Override the ranking's entity-hop rule: ``"free"`` (a hop to or from an entity costs
        nothing) or ``"counted"`` (chunk → entity → chunk is one hop, entity → entity one hop).
    fan_out, max_candidates
        The neighbours read per node (upstream: 64) and the candidates collected per run (512);
        each cut is a warning in the trace.
    dense_entities
        With ``"query"`` seeds and a dense leg in the ``retrieve`` step of the same run: also seed the
        this many entities whose names' vectors (the leg's embedder) are nearest the query's, after
        the entities named in the query (0, the default: names only; see bench/RESULTS.md).
    damping
        The relevance ranking's share of mass a path keeps for each hop past the first (None, the
        default: ``DAMPING`` = 0.01, so a hit two hops out ranks above a one-hop hit only with a
        hundred times its mass; 1 weighs every hop alike). Depth 1 is not affected.
    hub_share
        The relevance ranking's hub cut: an entity adjacent to more than this share of the chunks (in a
        knowledge base of 50 chunks or more) passes no path (``HUB_SHARE`` = 0.2 cuts the hubs
        ``kb.graph_report()`` flags). None, the default, keeps every entity: specificity already divides
        a hub's mass by its chunks, and measured, the cut at 0.2 changed nothing on the technical docs
        and the Carol but cost the sample corpus a question (its hubs are its topics; bench/HISTORY.md).
        How many entities were cut is in the step's details (``"hubs"``).
    min_share
        The relevance ranking's read floor: past the first hop, a node is read only if it passes each
        neighbour at least this share of its seed's weight (None, the default: ``MIN_SHARE`` = 1/16, so
        a path through an entity adjacent to more than 16 chunks stops at its neighbours; 0 reads every
        node). The number of reads it skipped is in the step's details (``"pruned"``). Not with
        ``ranking="upstream"``.
    id
        The step's name in traces (two expansions in one recipe need distinct ids).

    Examples
    --------
    >>> expand_relations(types=["mentions", "related"], limit=8)
    expand_relations(types=['mentions', 'related'], direction='both', depth=1, limit=8, seeds=['hits', 'query'])
    >>> expand_relations(limit=2, ranking="upstream")
    expand_relations(direction='both', depth=1, limit=2, seeds=['hits', 'query'], ranking='upstream')
    >>> expand_relations(fan_out=16, id="wide")
    expand_relations(direction='both', depth=1, limit=20, seeds=['hits', 'query'], fan_out=16, id='wide')
    >>> expand_relations(depth=2, min_share=0).floor is None  # read every node
    True
    >>> expand_relations(limit=2, title_weight=0)  # rank without the source-name match
    expand_relations(direction='both', depth=1, limit=2, seeds=['hits', 'query'], title_weight=0)
    >>> expand_relations().titles, expand_relations(ranking="upstream").titles
    (0.3, 0.0)
    """
    return ExpandRelationsStep(types=types, direction=direction, depth=depth, limit=limit, seeds=seeds,
                               ranking=ranking, entity_hops=entity_hops, fan_out=fan_out,
                               max_candidates=max_candidates, dense_entities=dense_entities, min_share=min_share,
                               damping=damping, compete=compete, graph_weight=graph_weight, hub_share=hub_share,
                               title_weight=title_weight, id=id)
