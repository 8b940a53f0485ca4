"""The evaluation workbench: compare retrieval recipes on labelled questions.

* :func:`evaluate` — run recipes over a question frame (``question``, ``gold``), get an :class:`Evaluation`
  with ``to_frame()`` (one row per recipe × question), ``summary()``, ``compare(a, b)``,
  ``plot_recall()``, ``plot_scatter(a, b)`` and ``drilldown(question)``.

Labelled questions: ``crux_nb.datasets.load_sample_questions()`` (the bundled sample corpus) and
``crux_nb.datasets.load_multihop(name)`` (the public multi-hop samples, when present).

>>> from crux_nb.evaluation import as_gold
>>> as_gold("chunk:plan.md:c0000").items
('chunk:plan.md:c0000',)
"""

from .compare import Comparison, paired_comparison
from .drilldown import DrillDown, drilldown_html
from .metrics import Gold, GoldPassage, as_gold, metric_names, question_metrics
from .workbench import Evaluation, Run, evaluate

__all__ = ["evaluate", "Evaluation", "Run", "Comparison", "paired_comparison", "DrillDown", "drilldown_html",
           "Gold", "GoldPassage", "as_gold", "metric_names", "question_metrics"]
