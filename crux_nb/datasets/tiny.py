"""A three-sentence knowledge base for examples and quick experiments.

``load_tiny()`` holds three one-line sources (a launch plan, a team and what the team
runs) that link through shared names (Beacon, Priya Raman, the Platform team), so
entity extraction, relation expansion and communities all have something to show;
``load_tiny_questions()`` gives two labelled questions about it, for ``crux_nb.evaluate``.
Everything runs offline in well under a second.
"""

from __future__ import annotations

import pandas as pd

from ..knowledgebase import KnowledgeBase, knowledge_base

__all__ = ["TINY_TEXTS", "TINY_TEAMS", "load_tiny", "load_tiny_questions"]

TINY_TEXTS: dict[str, str] = {
    "plan.md": "Beacon launches in April. Priya Raman owns Beacon.",
    "team.md": "Priya Raman leads the Platform team.",
    "ops.md": "The Platform team runs Atlas.",
}
TINY_TEAMS: dict[str, str] = {"plan.md": "product", "team.md": "platform", "ops.md": "platform"}


def load_tiny(*, id: str = "docs", entities: bool = False, communities: bool = False) -> KnowledgeBase:
    """A knowledge base of the three ``TINY_TEXTS`` sources (one chunk each, metadata ``team`` from ``TINY_TEAMS``).

    Parameters
    ----------
    id : str
        The knowledge base's id.
    entities : bool
        Extract the entities and their relations offline (``kb.extract_entities()``).
    communities : bool
        Configure communities with the offline model and prepare them (entities,
        clusters, reports); implies ``entities``.

    Examples
    --------
    >>> kb = load_tiny()
    >>> kb
    KnowledgeBase(id='docs', namespace='docs', documents=3, sections=0, chunks=3, entities=0, edges=0)
    >>> [hit.source.id for hit in kb.recipe().retrieve("Platform team")]
    ['ops.md', 'team.md']
    >>> load_tiny(entities=True).entities["canonical_name"].tolist()
    ['Atlas', 'Beacon', 'Platform', 'Priya Raman']
    >>> load_tiny(communities=True).communities
    Communities(id='communities', scope='corpus', status='ready', communities=3)
    """
    if communities:
        from ..community.config import communities as configure
        from ..models import OfflineModel

        kb = knowledge_base(id=id, communities=configure(model=OfflineModel()))
    else:
        kb = knowledge_base(id=id)
    for source_id, text in TINY_TEXTS.items():
        kb.add_text(source_id, text, metadata={"team": TINY_TEAMS[source_id]})
    if communities:
        kb.communities.prepare(progress=False)
    elif entities:
        kb.extract_entities(progress=False)
    return kb


def load_tiny_questions() -> pd.DataFrame:
    """Two labelled questions about ``load_tiny()``: ``question`` and ``gold`` (source ids).

    The second needs two sources, so a recipe that keeps one hit reaches half its gold.

    Examples
    --------
    >>> import crux_nb
    >>> questions = load_tiny_questions()
    >>> questions
                                   question               gold
    0              When does Beacon launch?         (plan.md,)
    1  What does Priya Raman's team run?  (team.md, ops.md)
    >>> kb = load_tiny()
    >>> crux_nb.evaluate({"bm25": kb.recipe()}, questions).summary()[["recall@5", "questions"]]
            recall@5  questions
    recipe
    bm25         1.0          2
    """
    frame = pd.DataFrame({"question": ["When does Beacon launch?", "What does Priya Raman's team run?"]})
    frame["question"] = frame["question"].astype("str")
    frame["gold"] = pd.Series([("plan.md",), ("team.md", "ops.md")], dtype="object")
    return frame
