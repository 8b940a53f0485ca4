"""A hand-made GraphRAG 3 index shared by the interop tests and the hostile-input tests."""

from __future__ import annotations

import pandas as pd


def tiny_tables() -> dict[str, pd.DataFrame]:
    """A hand-made GraphRAG 3 index: 2 documents, 4 text units, 3 entities, 2 relationships (one
    naming an entity the entities table lacks), 3 communities (one root, two leaves), 1 claim."""
    tu = ["tu-a1", "tu-a2", "tu-b1", "tu-b2"]
    return {
        "documents": pd.DataFrame({"id": ["doc-a", "doc-b"], "human_readable_id": [0, 1], "title": ["a.txt", "b.txt"],
                                   "text": ["A one. A two.", "B one. B two."],
                                   "text_unit_ids": [["tu-a2", "tu-a1"], ["tu-b1", "tu-b2"]],
                                   "creation_date": ["2025-01-01", "2025-01-01"]}),
        "text_units": pd.DataFrame({"id": tu, "human_readable_id": [0, 1, 2, 3],
                                    "text": ["A one.", "A two.", "B one.", "B two."], "n_tokens": [2, 2, 2, 2],
                                    "document_id": ["doc-a", "doc-a", "doc-b", "doc-b"],
                                    "entity_ids": [["e1"], ["e1", "e2"], ["e3"], []],
                                    "relationship_ids": [[], ["r1"], ["r2"], []], "covariate_ids": [[], [], [], []]}),
        "entities": pd.DataFrame({"id": ["e1", "e2", "e3"], "human_readable_id": [0, 1, 2],
                                  "title": ["ALICE", "BOB", "CAROL"], "type": ["PERSON", "PERSON", ""],
                                  "description": ["Alice.", "Bob.", None],
                                  "text_unit_ids": [["tu-a1", "tu-a2"], ["tu-a2"], ["tu-b1"]],
                                  "frequency": [2, 1, 1], "degree": [1, 1, 1]}),
        "relationships": pd.DataFrame({"id": ["r1", "r2"], "human_readable_id": [0, 1], "source": ["BOB", "CAROL"],
                                       "target": ["ALICE", "DAVE"], "description": ["Bob knows Alice.", "Carol met Dave."],
                                       "weight": [2.0, 0.0], "combined_degree": [2, 2],
                                       "text_unit_ids": [["tu-a2"], ["tu-b1"]]}),
        "communities": pd.DataFrame({"id": ["c-root", "c-a", "c-b"], "human_readable_id": [0, 1, 2],
                                     "community": [0, 1, 2], "level": [0, 1, 1], "parent": [-1, 0, 0],
                                     "children": [[1, 2], [], []], "title": ["Community 0", "Community 1", "Community 2"],
                                     "entity_ids": [["e1", "e2", "e3"], ["e1", "e2"], ["e3"]],
                                     "relationship_ids": [["r1", "r2"], ["r1"], ["r2"]],
                                     "text_unit_ids": [tu, ["tu-a1", "tu-a2"], ["tu-b1"]], "period": ["x"] * 3,
                                     "size": [3, 2, 1]}),
        "community_reports": pd.DataFrame({
            "id": ["rep0", "rep1", "rep2"], "human_readable_id": [0, 1, 2], "community": [0, 1, 2], "level": [0, 1, 1],
            "title": ["Everyone", "Alice and Bob", "Carol"], "summary": ["All of them.", "A pair.", "One."],
            "rank": [5.0, 7.5, 1.0], "rating_explanation": ["mid", "high", "low"],
            "findings": [
                [{"summary": "Pairs", "explanation": "Alice and Bob [Data: Reports (1); Entities (99)]."},
                 {"summary": "Unsourced", "explanation": "No references here."}],
                [{"summary": "Alice and Bob know each other",
                  "explanation": "Bob knows Alice [Data: Entities (1); Relationships (0, +more)]."},
                 {"summary": "Sources", "explanation": "Text unit three [Data: Sources (3)]."}],
                [{"summary": "Carol's claim", "explanation": "Carol claims [Data: Claims (0)]."}]]}),
        "covariates": pd.DataFrame({"id": ["cl0"], "human_readable_id": [0], "covariate_type": ["claim"],
                                    "type": ["MEETING"], "description": ["Carol met Dave."], "subject_id": ["CAROL"],
                                    "object_id": ["DAVE"], "status": ["TRUE"], "start_date": [None],
                                    "end_date": [None], "source_text": ["B one."], "text_unit_id": ["tu-b2"]}),
    }
