"""Graph access: structural projection, the indexed neighbours reader, hydration."""

from . import compiled
from .frontier import traversal_engine
from .reader import GraphReader, Neighbor, ReachArrays, Support

__all__ = ["GraphReader", "Neighbor", "ReachArrays", "Support", "compiled", "traversal_engine"]
