"""Graph access: structural projection, the indexed neighbours reader, hydration."""

from . import compiled
from .frontier import traversal_engine
from .reader import GraphReader, Neighbor, Support

__all__ = ["GraphReader", "Neighbor", "Support", "compiled", "traversal_engine"]
