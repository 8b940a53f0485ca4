"""``kb.communities``: status, prepare, reports and frames of one community scope.

Lifecycle (upstream section 5.5): ``missing`` (never built), ``building`` (a
build is running), ``ready`` (the current generation was built from exactly the
current input with the current strategy) and ``stale`` (sources, the graph or
the strategy changed since). ``prepare()`` builds and publishes a new
generation in one commit; a failure leaves the previous generation current.
"""

from __future__ import annotations

import threading
from dataclasses import replace
from typing import Any, Literal

import pandas as pd

from .._hashing import stable_hash
from ..errors import ParameterError
from .cluster import Community
from .config import CommunitiesConfig
from .frames import (generation_frames, input_fingerprint, read_communities, read_reports,
                     reusable_reports, with_generation)
from .results import PrepareResult, ReportPage

Status = Literal["missing", "building", "ready", "stale"]
CORPUS = "corpus"


class CommunitySurface:
    """Communities of one scope of a knowledge base (the whole corpus, or a view revision): ``kb.communities``.

    Examples
    --------
    >>> import crux_nb
    >>> from crux_nb.models import OfflineModel
    >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=OfflineModel()))
    >>> kb.add_text("a.md", "Ada Park leads the Lumen launch. Ada Park works with Ben Ito in Dublin.")
    >>> kb.communities.status()
    'missing'
    >>> kb.communities.prepare(progress=False)
    PrepareResult(generation_id='cg-...', communities=1, reports_written=1, reports_reused=0, calls=1)
    >>> kb.communities.status(), len(kb.communities.reports())
    ('ready', 1)
    """

    def __init__(self, kb: Any, config: CommunitiesConfig, *, scope: str = CORPUS,
                 visible_sources: Any = None, view: tuple[str | None, str | None] = (None, None)):
        self.kb = kb
        self.config = config
        self.scope = scope
        self._visible = visible_sources  # None = every source; else a callable state -> set of source ids
        self.view = view
        self._lock = threading.Lock()
        self._building = False

    # ------------------------------------------------------------ inspection
    def _sources(self, state: Any) -> set[str] | None:
        return None if self._visible is None else self._visible(state)

    def _pointer(self, state: Any) -> dict | None:
        rows = state.community_generations[state.community_generations["scope"] == self.scope]
        return None if rows.empty else rows.iloc[0].to_dict()

    @property
    def generation_id(self) -> str | None:
        pointer = self._pointer(self.kb.state)
        return None if pointer is None else pointer["generation_id"]

    def visible_sources(self, state: Any | None = None) -> set[str]:
        """The source ids this scope clusters: every source, or a view's members (of ``state``, default now).

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> platform = kb.view(id="platform", where={"team": "platform"})
        >>> sorted(kb.communities.visible_sources()), sorted(platform.communities.visible_sources())
        (['ops.md', 'plan.md', 'team.md'], ['ops.md', 'team.md'])
        """
        state = self.kb.state if state is None else state
        sources = self._sources(state)
        return set(state.documents["source_id"]) if sources is None else set(sources)

    def pointer(self) -> dict | None:
        """The current generation's pointer row (generation id, fingerprints, source hashes), or None.

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> pointer = kb.communities.pointer()
        >>> pointer["scope"], pointer["generation_id"] == kb.communities.generation_id, sorted(pointer)[:3]
        ('corpus', True, ['generation_id', 'input_fingerprint', 'scope'])
        >>> print(kb.view(id="platform", where={"team": "platform"}).communities.pointer())  # never prepared
        None
        """
        return self._pointer(self.kb.state)

    def previous_pointer(self) -> dict | None:
        """This scope's pointer, or for a view the newest pointer of any of its revisions.

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> _ = kb.view(id="platform", where={"team": "platform"}).communities.prepare(progress=False)
        >>> kb.add_text("hr.md", "Priya Raman hires for the Platform team.", metadata={"team": "platform"})
        >>> later = kb.view(id="platform", where={"team": "platform"}).communities  # a new view revision
        >>> print(later.pointer())
        None
        >>> later.previous_pointer()["scope"].startswith("view:platform@vr-"), later.previous_pointer()["scope"] != later.scope
        (True, True)
        """
        own = self.pointer()
        if own is not None or self.view[0] is None:
            return own
        rows = self.kb.state.community_generations
        rows = rows[rows["view_id"] == self.view[0]]
        return None if rows.empty else rows.sort_values("sequence").iloc[-1].to_dict()

    def _lease(self):
        from pathlib import Path

        from ..store.lease import Lease

        return None if self.kb.path is None else Lease(Path(self.kb.path) / "communities.lease", wait=600.0)

    def _built_elsewhere(self) -> bool:
        """Another process holds this saved knowledge base's communities lease (and it is not stale)."""
        lease = self._lease()
        return lease is not None and lease.path.exists() and not lease.is_stale()

    def status(self) -> Status:
        """``missing`` (never built), ``building``, ``ready``, or ``stale`` (the sources changed since).

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> kb.add_text("hr.md", "Priya Raman hires for the Platform team.")
        >>> kb.communities.status()
        'stale'
        """
        if self._building or self._built_elsewhere():
            return "building"
        state = self.kb.state
        pointer = self._pointer(state)
        if pointer is None:
            return "missing"
        if pointer["strategy_fingerprint"] != self.config.strategy_fingerprint:
            return "stale"
        if pointer["input_fingerprint"] != input_fingerprint(state, self._sources(state)):
            return "stale"
        return "ready"

    # ----------------------------------------------------------------- build
    def prepare(self, *, force: bool = False, incremental: bool = True, progress: bool | None = None,
                executor: Any = None) -> PrepareResult:
        """Build and publish communities and reports unless they are ready (``force`` rebuilds anyway).

        ``incremental`` (default): start from the current generation's communities, keep every one whose
        members did not change (same id, report reused) and rewrite only the touched ones and their
        ancestors; ``incremental=False`` clusters from scratch (reports of unchanged communities are
        still reused).

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> first = kb.communities.prepare(progress=False)
        >>> kb.communities.prepare(progress=False).status, kb.communities.prepare(force=True, progress=False).calls
        ('ready', 0)
        """
        from ..models import CallLog

        if not isinstance(force, bool):
            raise ParameterError("communities.prepare()", "force", "a boolean", force)
        if not isinstance(incremental, bool):
            raise ParameterError("communities.prepare()", "incremental", "a boolean", incremental)
        with self._lock:
            if not force and self.status() == "ready":
                return PrepareResult(self.generation_id, "ready", self._count(), 0, 0, 0)
            lease = self._lease()
            if lease is not None:  # a saved knowledge base: one builder across processes, published by saving
                lease.acquire()
            try:
                published = None if force or lease is None else self._published()
                adopted = None if published is None else self._adopt_published(published)
                if adopted is None:
                    self._building = True
                    before = self.kb.state
                    self._ensure_entity_graph(progress)
                    if published is not None and self.kb.state is not before:
                        # the publisher extracted first too: with the graph in place, its generation may be ours
                        adopted = self._adopt_published(published)
                if adopted is not None:
                    result = adopted
                else:
                    result = self._build(CallLog(), force=force, incremental=incremental, progress=progress,
                                         executor=executor)
                    if lease is not None:
                        self.kb.save(self.kb.path)
            finally:
                self._building = False
                if lease is not None:
                    lease.release()
            return replace(result, status=self.status())  # "building" only while a build ran: report the outcome

    def _published(self) -> Any:
        """The state saved at this knowledge base's path (read under the communities lease)."""
        from ..store.persist import read_current

        return read_current(self.kb.path)[2]

    def _adopt_published(self, saved: Any) -> PrepareResult | None:
        """If another process published ready communities for this scope while we waited, take them."""
        from .frames import COMMUNITY_TABLES

        mine = self.kb.state
        rows = saved.community_generations[saved.community_generations["scope"] == self.scope]
        if rows.empty or rows.iloc[0]["strategy_fingerprint"] != self.config.strategy_fingerprint:
            return None
        if rows.iloc[0]["input_fingerprint"] != input_fingerprint(mine, self._sources(mine)):
            return None
        frames = {t: saved.frame(t)[saved.frame(t)["scope"] == self.scope] for t in COMMUNITY_TABLES}
        self.kb.commit(lambda current: with_generation(current, self.scope, frames))
        return PrepareResult(self.generation_id, self.status(), self._count(), 0, self._count(), 0)

    def _ensure_entity_graph(self, progress: bool | None) -> None:
        """Run the model's extraction (incrementally) unless the graph's mentions were authored elsewhere."""
        edges = self.kb.state.edges
        authored = ((edges["type"] == "mentions") & (edges["stage"] != "entities")).any()
        if not authored:
            self.kb.extract_entities(self.config.model, progress=progress)

    def _build(self, log: Any, *, force: bool, incremental: bool, progress: bool | None,
               executor: Any) -> PrepareResult:
        from .cluster import cluster
        from .graph_input import build_graph
        from .reports import write_reports

        state = self.kb.state
        sources = self._sources(state)
        input_fp = input_fingerprint(state, sources)
        strategy = self.config.strategy_fingerprint
        previous = self._pointer(state)
        tree = None
        if incremental and previous is not None and previous["strategy_fingerprint"] == strategy:
            tree = read_communities(state, self.scope)  # start from it: unchanged communities keep their ids
        comms = cluster(build_graph(state, sources), resolution=self.config.resolution, seed=self.config.seed,
                        budget=self.config.leaf_budget, max_children=self.config.max_children, previous=tree,
                        engine=self.config.incremental_engine)
        chunk_text = dict(zip(state.chunks["ref"], state.chunks["content"]))
        entities = {r: (n, d) for r, n, d in zip(state.entities["ref"], state.entities["canonical_name"],
                                                  state.entities["description"])}
        reusable = reusable_reports(state, strategy)
        reports, written = write_reports(comms, model=self.config.model, chunk_text=chunk_text, entities=entities,
                                         reusable=reusable, log=log, executor=executor, progress=progress)
        pointers = state.community_generations
        sequence = 1 if pointers.empty else int(pointers["sequence"].max()) + 1  # global publish order
        generation_id = "cg-" + stable_hash({"scope": self.scope, "input": input_fp, "strategy": strategy,
                                             "previous": None if previous is None else previous["generation_id"],
                                             "force": force})
        docs = state.documents
        hashes = {s: h for s, h in zip(docs["source_id"], docs["content_hash"]) if sources is None or s in sources}
        frames = generation_frames(self.scope, generation_id, comms, reports, input_fp=input_fp, strategy_fp=strategy,
                                   view=self.view, sequence=sequence, source_hashes=hashes)
        self.kb.commit(lambda current: with_generation(current, self.scope, frames))
        return PrepareResult(generation_id, self.status(), len(comms), written, len(comms) - written, len(log), log)

    def _count(self) -> int:
        c = self.kb.state.communities
        return int((c["scope"] == self.scope).sum())

    def resolution_profile(self, *, resolution_range: tuple[float, float] = (0.05, 5.0),
                           progress: bool | None = None) -> pd.DataFrame:
        """Resolution → communities, modularity and largest community of the leaf-level Leiden partition
        (leidenalg's ``Optimiser.resolution_profile``, seeded with the configuration's seed), so a
        ``resolution`` can be chosen by looking; ``crux_nb.display.plots.resolution_profile`` draws it.
        Extracts entities first if needed (as ``prepare()`` does).

        Examples
        --------
        >>> import crux_nb
        >>> from crux_nb.datasets import sample_path
        >>> from crux_nb.models import OfflineModel
        >>> kb = crux_nb.knowledge_base(id="doc", communities=crux_nb.communities(model=OfflineModel()))
        >>> _ = kb.add_path(sample_path())
        >>> list(kb.communities.resolution_profile(progress=False).columns)
        ['resolution', 'communities', 'modularity', 'largest', 'largest_share']
        """
        from .graph_input import build_graph
        from .profile import resolution_profile

        self._ensure_entity_graph(progress)
        state = self.kb.state
        return resolution_profile(build_graph(state, self._sources(state)), resolution_range=resolution_range,
                                  seed=self.config.seed)

    # --------------------------------------------------------------- reading
    def reports(self, *, level: int | None = None, parent_id: str | None = None, cursor: str | None = None,
                limit: int | None = None) -> ReportPage:
        """Reports of the current generation (prepared first if needed), sorted by (level, id).

        ``parent_id`` lists that parent's children; ``level`` one level; ``cursor`` continues after a
        community id; ``limit`` caps the page (the next cursor is set only if more remain).

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> page = kb.communities.reports(level=0)
        >>> len(page), page.cursor, type(page[0]).__name__, page[0].findings[0].evidence
        (2, None, 'Report', (ChunkRef(source_id='ops.md', chunk_id='c0000'),))
        """
        owner = "communities.reports()"
        if limit is not None and (isinstance(limit, bool) or not isinstance(limit, int) or limit < 1):
            raise ParameterError(owner, "limit", "a positive integer or None", limit)
        if level is not None and (isinstance(level, bool) or not isinstance(level, int) or level < 0):
            raise ParameterError(owner, "level", "a non-negative integer or None", level)
        self.prepare()
        reports = read_reports(self.kb.state, self.scope)
        if parent_id is not None:
            reports = [r for r in reports if r.parent_id == parent_id]
        elif level is not None:
            reports = [r for r in reports if r.level == level]
        if cursor is not None:
            reports = [r for r in reports if (r.level, r.community_id) > self._position(cursor)]
        more = limit is not None and len(reports) > limit
        page = reports[:limit] if limit is not None else reports
        return ReportPage(tuple(page), page[-1].community_id if more else None)

    def _position(self, cursor: str) -> tuple[int, str]:
        frame = self.frame("communities")
        match = frame[frame["community_id"] == cursor]
        if match.empty:
            raise ParameterError("communities.reports()", "cursor", "a community id from a previous page", cursor)
        return int(match["level"].iloc[0]), cursor

    def frame(self, table: str) -> pd.DataFrame:
        """One community table of the current generation (``communities``, ``community_members``,
        ``reports``, ``report_findings``).

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> kb.communities.frame("communities")[["level", "kind", "n_chunks"]]
           level  kind  n_chunks
        0      1  root         3
        1      0  leaf         2
        2      0  leaf         1
        >>> kb.communities.frame("reports")["title"].tolist()
        ['Platform and Atlas; Beacon and Priya Raman', 'Platform and Atlas', 'Beacon and Priya Raman']
        """
        frame = self.kb.state.frame(table)
        return frame[frame["scope"] == self.scope].drop(columns=["scope"]).reset_index(drop=True)

    @property
    def communities(self) -> pd.DataFrame:
        return self.frame("communities")

    def tree(self):
        """The hierarchy as a networkx DiGraph (parent → child), nodes carrying level, kind and title.

        >>> import crux_nb
        >>> kb = crux_nb.datasets.load_tiny(communities=True)
        >>> _ = kb.communities.prepare(progress=False)  # reading never builds
        >>> tree = kb.communities.tree()
        >>> [(data["level"], data["kind"]) for _, data in tree.nodes(data=True)]
        [(1, 'root'), (0, 'leaf'), (0, 'leaf')]
        """
        import networkx as nx

        graph = nx.DiGraph()
        titles = dict(zip(self.frame("reports")["community_id"], self.frame("reports")["title"]))
        for row in self.communities.itertuples(index=False):
            graph.add_node(row.community_id, level=int(row.level), kind=row.kind, title=titles.get(row.community_id),
                           n_chunks=int(row.n_chunks))
            if isinstance(row.parent_id, str):
                graph.add_edge(row.parent_id, row.community_id)
        return graph

    def records(self) -> list[Community]:
        """The current generation's communities as :class:`~crux_nb.community.Community` records, by (level, id):
        leaves with their members, parents with their children (empty before the first ``prepare()``).

        The ``previous=`` of :func:`~crux_nb.community.cluster_graph`, and what the frames hold, as objects.

        >>> import crux_nb
        >>> from crux_nb.models import OfflineModel
        >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=OfflineModel()))
        >>> kb.add_text("a.md", "Ada Park leads the Lumen launch. Ada Park works with Ben Ito in Dublin.")
        >>> kb.communities.records()  # reading never builds
        []
        >>> _ = kb.communities.prepare(progress=False)
        >>> [(c.kind, c.chunk_refs) for c in kb.communities.records()]
        [('root', ('chunk:a.md:c0000',))]
        """
        return read_communities(self.kb.state, self.scope)

    def __repr__(self) -> str:
        return f"Communities(id={self.config.id!r}, scope={self.scope!r}, status={self.status()!r}, communities={self._count()})"

    def _repr_html_(self) -> str:
        from ..display.html import communities_html

        return communities_html(self)
