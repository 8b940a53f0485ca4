"""The evaluation workbench: compare retrieval recipes on labelled questions.

* :func:`evaluate` — run recipes over a question frame (``question``, ``gold``), get an :class:`Evaluation`
  with ``to_frame()`` (one row per recipe × question), ``summary()``, ``compare(a, b)``,
  ``plot_recall()``, ``plot_scatter(a, b)`` and ``drilldown(question)``.
* :func:`load_sample_questions` — the labelled questions for the bundled sample corpus;
  :func:`load_multihop` — the public multi-hop samples (knowledge base and questions) when present.

>>> from crux_nb.evaluation import load_sample_questions
>>> len(load_sample_questions()) >= 30
True
"""

from .compare import Comparison, paired_comparison
from .datasets import load_multihop, load_sample_questions, multihop_root, sample_questions_path
from .drilldown import DrillDown, drilldown_html
from .metrics import Gold, as_gold, metric_names, question_metrics
from .workbench import Evaluation, Run, evaluate

__all__ = ["evaluate", "Evaluation", "Run", "Comparison", "paired_comparison", "DrillDown", "drilldown_html",
           "Gold", "as_gold", "metric_names", "question_metrics", "load_sample_questions", "sample_questions_path",
           "load_multihop", "multihop_root"]
