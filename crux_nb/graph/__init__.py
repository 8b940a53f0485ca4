"""Graph access: structural projection, the indexed neighbours reader, hydration."""

from .reader import GraphReader, Neighbor, Support

__all__ = ["GraphReader", "Neighbor", "Support"]
