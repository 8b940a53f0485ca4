"""Restoring the communities configuration saved with a knowledge base (``crux_nb.open``).

``kb.save`` records the configuration (id, resolution, seed, max_children, incremental_engine, the model's
class, name, fingerprint and, for models that state them, their options). ``open()`` rebuilds it when the model
can be rebuilt from that record (the offline model); a model that cannot (a ``ChatModel``: its endpoint key is never saved) has to be
passed again, and :class:`ModelRequired` stands in for ``kb.communities`` until it is.
"""

from __future__ import annotations

from typing import Any

from ..errors import CruxError, ParameterError
from .config import INCREMENTAL_ENGINE, CommunitiesConfig

__all__ = ["restore_config", "ModelRequired"]


def restore_config(saved: dict) -> CommunitiesConfig | None:
    """The saved configuration with its model rebuilt, or None when the model cannot be rebuilt.

    Examples
    --------
    >>> from crux_nb.models import OfflineModel
    >>> import crux_nb
    >>> record = {"id": "c", "resolution": 0.5, "seed": 1, "max_children": 8,
    ...           "model": {"class": "OfflineModel", "name": "offline", "fingerprint": OfflineModel().fingerprint,
    ...                     "options": OfflineModel().options()}}
    >>> restore_config(record)
    communities(model='offline', id='c', resolution=0.5, seed=1)
    >>> restore_config({**record, "model": {**record["model"], "class": "ChatModel"}}) is None
    True
    """
    from ..models import OfflineModel

    model = saved.get("model") if isinstance(saved.get("model"), dict) else {}
    if model.get("class") != "OfflineModel" or not isinstance(model.get("options"), dict):
        return None
    try:
        rebuilt = OfflineModel(name=model.get("name"), **model["options"])
        if rebuilt.fingerprint != model.get("fingerprint"):
            return None  # options this crux_nb does not know, or another offline-model version
        return CommunitiesConfig(model=rebuilt, id=saved.get("id"), resolution=saved.get("resolution"),
                                 seed=saved.get("seed"), max_children=saved.get("max_children"),
                                 incremental_engine=saved.get("incremental_engine", INCREMENTAL_ENGINE))
    except (TypeError, ParameterError):
        return None


class ModelRequired:
    """``kb.communities`` of a knowledge base opened without the model its communities were configured with.

    ``status()`` is ``"model_required"``; everything else raises :class:`~crux_nb.errors.CruxError`
    (code ``communities_model_required``) naming the model and how to pass it.

    Examples
    --------
    >>> surface = ModelRequired("kb", {"model": {"class": "ChatModel", "name": "gpt-4o-mini", "fingerprint": "f1"}})
    >>> surface.status()
    'model_required'
    >>> surface
    Communities(status='model_required', model='gpt-4o-mini')
    """

    def __init__(self, kb_id: str, saved: dict):
        self.kb_id = kb_id
        self.saved = dict(saved)

    @property
    def model(self) -> dict:
        model = self.saved.get("model")
        return model if isinstance(model, dict) else {}

    def status(self) -> str:
        return "model_required"

    def error(self) -> CruxError:
        m = self.model
        return CruxError(f"knowledge base {self.kb_id!r} was saved with communities configured for the model "
                         f"{m.get('name')!r} (a {m.get('class')}, fingerprint {m.get('fingerprint')}); crux_nb cannot "
                         "rebuild that model from the saved folder (credentials such as a ChatModel's key are never "
                         "saved), so it must be given again.", code="communities_model_required",
                         hint="pass communities=crux_nb.communities(model=<that model>, ...) to crux_nb.open(path), "
                              "or call kb.configure_communities(...); the saved settings are on kb.saved_communities.")

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):
            raise AttributeError(name)
        raise self.error()

    def __repr__(self) -> str:
        return f"Communities(status='model_required', model={self.model.get('name')!r})"

    def _repr_html_(self) -> str:
        from html import escape

        return (f"<div><b>Communities</b>: status <code>model_required</code> — pass the model "
                f"{escape(repr(self.model.get('name')))} again: <code>crux_nb.open(path, communities=...)</code></div>")
