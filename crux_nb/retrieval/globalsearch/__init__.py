"""Global search over community reports: the step (``step``), report units and freshness (``units``),
the adaptive descent (``descent``), batch packing, map and reduce (``mapreduce``).

Step authors can run the stages themselves: :func:`resolve` the units of ``kb.communities``,
:func:`select_detail`, pack batches under :data:`BATCH_BUDGET` characters, call the model's
``map_findings`` per batch with the :func:`corpus_statistics` of the query on every unit, then
:func:`candidates` and :func:`reduce` give the step's hits (and :func:`support` their support status):

>>> import crux_nb
>>> from crux_nb.models import OfflineModel
>>> from crux_nb.retrieval.globalsearch import candidates, corpus_statistics, reduce, resolve, select_detail
>>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=OfflineModel()))
>>> kb.add_text("a.md", "Ada Park leads the Lumen launch. Ada Park works with Ben Ito in Dublin.")
>>> _ = kb.communities.prepare(progress=False)
>>> units = list(resolve(kb.communities).units)
>>> corpus = corpus_statistics(kb.state, None, "Ben Ito")
>>> batch = [{**u.payload(), "corpus": corpus} for u in select_detail(units, "detailed")]
>>> hits = reduce(candidates(OfflineModel().map_findings("Ben Ito", batch)), units, namespace="docs", limit=3)
>>> step = kb.recipe(steps=[crux_nb.global_search(model=OfflineModel(), detail="detailed", limit=3)])
>>> [h.content for h in hits] == [h.content for h in step.retrieve("Ben Ito")]
True
"""

from .mapreduce import candidates, reduce
from .step import GlobalSearchStep, Preflight, global_search
from .support import MIN_SUPPORT, corpus_statistics, support
from .units import BATCH_BUDGET, Freshness, resolve, select_detail

# the step, and for step authors (a variant of global search, or a check of its batching) the stages it
# runs: resolve the units, select a detail, pack batches under BATCH_BUDGET, map (with the corpus' statistics),
# candidates, reduce, support
__all__ = ["GlobalSearchStep", "Preflight", "global_search",
           "BATCH_BUDGET", "Freshness", "resolve", "select_detail", "corpus_statistics", "candidates", "reduce",
           "support", "MIN_SUPPORT"]
