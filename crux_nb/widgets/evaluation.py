"""``EvaluationView``: an ipywidgets drill-down over a :class:`~crux_nb.evaluation.Evaluation`.

A question list (each labelled with every recipe's Recall@k) beside the drill-down of the
selected question: each recipe's hits side by side, gold marked, and for a gold hit only an
expanding recipe found, its expansion path. ``view.selected_id`` (an observable trait) is the
selected question id. Without a widget manager the same view shows as static HTML.
"""

from __future__ import annotations

from html import escape
from typing import Any

import ipywidgets as widgets
import traitlets

from ..errors import ParameterError
from ._base import SelectionView

__all__ = ["EvaluationView"]


def _summary_html(evaluation: Any, k: int) -> str:
    summary = evaluation.summary()
    metrics = [m for m in (f"recall@{k}", "mrr", f"ndcg@{max(evaluation.ks)}") if m in summary.columns]
    head = "".join(f"<th>{escape(m)}</th>" for m in metrics)
    rows = "".join(f"<tr data-recipe='{escape(name)}'><td>{escape(name)}</td>"
                   + "".join(f"<td>{summary.loc[name, m]:.3f}</td>" for m in metrics) + "</tr>"
                   for name in evaluation.recipes)
    return (f"<table class='crux-eval-summary' style='font-family:sans-serif;font-size:12px;border-collapse:collapse'>"
            f"<tr><th>recipe</th>{head}</tr>{rows}</table>")


class EvaluationView(SelectionView):
    """Pick a question, see each recipe's hits side by side (``evaluation.drilldown``).

    Children (for tests and layout): ``header`` (HTML, mean metrics per recipe), ``question_select``
    (Select) beside ``detail`` (HTML, the drill-down of the selected question).

    Examples
    --------
    >>> import crux_nb, pandas as pd
    >>> from crux_nb.widgets import EvaluationView
    >>> kb = crux_nb.knowledge_base(id="w")
    >>> kb.add_text("a.md", "# A\\n\\nThe launch moved to May.")
    >>> ev = crux_nb.evaluate({"bm25": kb.recipe()}, pd.DataFrame({"question": ["launch"], "gold": [["a.md"]]}))
    >>> EvaluationView(ev)
    EvaluationView(recipes=['bm25'], questions=1, selected='q001')
    """

    selected_id = traitlets.Unicode(None, allow_none=True, help="id of the selected question")

    def __init__(self, evaluation: Any, *, k: int = 5, **kwargs: Any):
        self.evaluation = evaluation
        self.k = k if k in evaluation.ks else max(evaluation.ks)
        self._syncing = False
        self.header = widgets.HTML(_summary_html(evaluation, self.k))
        self.question_select = widgets.Select(
            options=[(self._label(q), q) for q in evaluation.question_ids], value=None,
            rows=max(3, min(len(evaluation.question_ids), 16)), description="question",
            style={"description_width": "initial"}, layout=widgets.Layout(width="420px"))
        self.detail = widgets.HTML(layout=widgets.Layout(flex="1 1 auto", min_width="0", margin="0 0 0 12px"))
        for w, cls in ((self.header, "crux-eval-header"), (self.question_select, "crux-eval-select"),
                       (self.detail, "crux-eval-detail")):
            w.add_class(cls)
        body = widgets.HBox([self.question_select, self.detail], layout=widgets.Layout(align_items="flex-start"))
        super().__init__(children=[self.header, body], **kwargs)
        self.add_class("crux-eval")
        self.question_select.observe(self._on_pick, names="value")
        self.selected_id = evaluation.question_ids[0]

    def _label(self, qid: str) -> str:
        scores = " ".join(f"{self.evaluation.run(r, qid).metrics[f'recall@{self.k}']:.1f}"
                          for r in self.evaluation.recipes)
        text = " ".join(self.evaluation.run(self.evaluation.recipes[0], qid).question.split())
        return f"{qid} [{scores}] {text[:50]}{'…' if len(text) > 50 else ''}"

    @traitlets.validate("selected_id")
    def _check_id(self, proposal: dict) -> str | None:
        value = proposal["value"]
        if value is not None and value not in self.evaluation.question_ids:
            raise ParameterError("EvaluationView", "selected", "a question id of the evaluation", value)
        return value

    def _on_pick(self, change: dict) -> None:
        if not self._syncing:
            self.selected_id = change["new"]

    @traitlets.observe("selected_id")
    def _on_id(self, change: dict) -> None:
        self._follow(self.question_select, change["new"])

    def _render(self) -> None:
        self.detail.value = self.evaluation.drilldown(self.selected_id).to_html() if self.selected_id else ""

    def to_html(self) -> str:
        """The summary and the selected question's drill-down as static HTML.

        Examples
        --------
        >>> import crux_nb, pandas as pd
        >>> from crux_nb.widgets import EvaluationView
        >>> kb = crux_nb.knowledge_base(id="w")
        >>> kb.add_text("a.md", "The launch moved to May."); kb.add_text("b.md", "Priya leads the platform team.")
        >>> qs = pd.DataFrame({"question": ["launch", "platform lead"], "gold": [["a.md"], ["b.md"]]})
        >>> view = EvaluationView(crux_nb.evaluate({"bm25": kb.recipe()}, qs))
        >>> view.selected_id = "q002"
        >>> html = view.to_html()
        >>> "q002: platform lead" in html, "<td>1.000</td>" in html  # mean recall@5 in the summary table
        (True, True)
        """
        body = self.evaluation.drilldown(self.selected_id).to_html() if self.selected_id else ""
        return f"<div class='crux-eval-static'>{_summary_html(self.evaluation, self.k)}{body}</div>"

    def _repr_html_(self) -> str:
        return self.to_html()

    def __repr__(self) -> str:
        return (f"EvaluationView(recipes={list(self.evaluation.recipes)}, questions={len(self.evaluation.question_ids)}, "
                f"selected={self.selected_id!r})")
