"""The communities side of a knowledge base (``kb.communities``, ``kb.has_communities``), as a mixin."""

from __future__ import annotations

from typing import Any

from ..errors import CruxError, ParameterError

__all__ = ["CommunityAccess"]


class CommunityAccess:
    """Attach, restore and reach a knowledge base's communities surface (mixed into ``KnowledgeBase``)."""

    def configure_communities(self, config: Any) -> None:
        """Attach a communities configuration (``crux_nb.communities(model=...)``)."""
        from .config import CommunitiesConfig
        from .surface import CommunitySurface

        if not isinstance(config, CommunitiesConfig):
            raise ParameterError("knowledge_base()", "communities", "a configuration from crux_nb.communities(model=...)",
                                 config)
        self.communities_config = config
        self._communities = CommunitySurface(self, config)

    def restore_communities(self, saved: dict) -> None:
        """Restore the communities configuration saved with this knowledge base (called by ``crux_nb.open``);
        a model that cannot be rebuilt leaves ``kb.communities.status() == "model_required"``."""
        from .restore import ModelRequired, restore_config

        self.saved_communities = dict(saved)
        config = restore_config(saved)
        if config is not None:
            self.configure_communities(config)
        else:
            self._communities = ModelRequired(self.id, saved)

    @property
    def has_communities(self) -> bool:
        """Whether a communities configuration is attached (then :attr:`communities` is its surface).

        Examples
        --------
        >>> import crux_nb
        >>> crux_nb.knowledge_base(id="docs").has_communities
        False
        >>> kb = crux_nb.knowledge_base(id="docs", communities=crux_nb.communities(model=crux_nb.models.OfflineModel()))
        >>> kb.has_communities
        True
        """
        return self._communities is not None

    @property
    def communities(self):
        """The communities surface: ``status()``, ``prepare()``, ``reports()``, frames and the tree."""
        if self._communities is None:
            raise CruxError(f"knowledge base {self.id!r} has no communities configured.", code="communities_missing",
                            hint="pass communities=crux_nb.communities(model=...) to crux_nb.knowledge_base(), "
                                 "or call kb.configure_communities(...).")
        return self._communities
