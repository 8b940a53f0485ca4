"""Communities: hierarchical Leiden over the knowledge graph, reports, lifecycle."""
