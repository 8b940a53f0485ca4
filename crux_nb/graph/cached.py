"""The graph's two indexes (the traversal index and the adjacency: :func:`~crux_nb.graph.build.build_with_adjacency`)
and the views cut from the traversal index, kept in the disk cache of derived arrays
(:mod:`crux_nb.store.array_cache`) under a key naming the saved tables they are built from, so a process that
opens the same generation again reads them (0.2-0.3 s at 200k chunks and 1M edges) instead of building them
(1.3-2 s, the longest step of ``crux_nb.open`` + a first query).

The key also names this code (the SHA-256 of the graph and store packages' source files): an entry written by
another crux_nb is never read. They are not saved with the generation: their codes follow the sorted refs, so one
small source renumbers most of them and every save would rewrite them (about 15-20% of a full save at 100k
chunks, against < 5%).
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np

from ..store.array_cache import code_digest, read_arrays, write_arrays
from ..store.indexes import fingerprint
from .adjacency import AdjacencyIndex
from .frontier_index import TraversalIndex, View

__all__ = ["KIND", "DEPENDS", "cache_key", "load", "store", "restore", "keep"]

KIND = "graph"
#: The tables the two indexes are built from (their part checksums name the cache entry)
DEPENDS = ["edges", "edge_evidence", "chunks", "parents", "documents"]
_ADJACENCY, _VIEW = "adjacency.", "view."
#: A view's arrays that may be the index's own (the default view cuts nothing): view field -> index attribute
_SHARED = {"peer": "peer", "owner": "node", "etype": "etype"}


def cache_key(manifest_tables: dict) -> str | None:
    """The key of the indexes built from a generation's tables (its manifest's ``tables``) by this code (the
    source of the graph and store packages: an entry another crux_nb wrote is never read); None when the manifest
    lists no part checksums (format 1).

    >>> tables = {t: {"parts": [{"sha256": t}]} for t in DEPENDS}
    >>> len(cache_key(tables)), cache_key({})
    (64, None)
    """
    code = code_digest("graph", "store")
    return None if code is None else fingerprint(manifest_tables, DEPENDS, {"index": KIND, "code": code})


def restore(reader: Any, key: str | None) -> bool:
    """Give ``reader`` (a :class:`~crux_nb.graph.reader.GraphReader`) its state's indexes from the cache entry
    ``key``; whether it took them (not when there is none that fits, or the reader built them first)."""
    found = load(key, reader._state)
    return found is not None and reader.adopt(*found)


def keep(reader: Any, key: str | None) -> bool:
    """Cache the indexes ``reader`` built, under ``key``; whether they were written."""
    return store(key, reader.traversal_index, reader._adjacency)


def store(key: str | None, traversal: TraversalIndex, adjacency: AdjacencyIndex) -> bool:
    """Cache both indexes under ``key``; whether they were written (:func:`~crux_nb.store.array_cache.write_arrays`)."""
    if key is None:
        return False
    arrays = dict(traversal.arrays())
    arrays.update({_ADJACENCY + name: values for name, values in adjacency.arrays().items()})
    with traversal._view_lock:  # a query may cut another view meanwhile
        views = sorted(traversal._views.items(), key=lambda item: repr(item[0]))
    for i, (view_key, view) in enumerate(views):
        found = _view_arrays(traversal, view_key, view)
        arrays.update({f"{_VIEW}{i}.{name}": values for name, values in found.items()})
    return write_arrays(KIND, key, arrays)


def _view_arrays(index: TraversalIndex, key: tuple, view: View) -> dict[str, np.ndarray]:
    """A cut of the index (:meth:`TraversalIndex.view`) and its incoming lists when built, as arrays; an array
    that is the index's own (the default view cuts nothing) is named, not stored."""
    types, direction, fan_out, hub_share = key
    shared = {name: whole for name, whole in _SHARED.items() if getattr(view, name).shape == getattr(index, whole).shape
              and np.shares_memory(getattr(view, name), getattr(index, whole))}
    about = {"key": [None if types is None else sorted(types), direction, fan_out, hub_share],
             "fan_out": view.fan_out, "hubs": view.hubs, "shared": shared}
    arrays = {"about": np.array([json.dumps(about)], dtype=object)}
    for name in ("indptr", "peer", "etype", "truncated", "spec", "df", "owner", "degree"):
        if name not in shared:
            arrays[name] = getattr(view, name)
    for rule in view.cost:
        arrays[f"cost.{rule}"], arrays[f"zero_cost.{rule}"] = view.cost[rule], view.zero_cost[rule]
    if "transposed" in view._lazy:
        arrays["transposed.indptr"], arrays["transposed.order"] = view._lazy["transposed"]
    return arrays


def _restore_views(index: TraversalIndex, arrays: dict[str, np.ndarray]) -> None:
    """Put the views :func:`_view_arrays` stored back into ``index`` (a ValueError when one does not fit it)."""
    n, entries = len(index.refs), len(index.peer)
    for i in sorted({name.split(".")[1] for name in arrays if name.startswith(_VIEW)}):
        prefix = f"{_VIEW}{i}."
        got = {name[len(prefix):]: v for name, v in arrays.items() if name.startswith(prefix)}
        about = json.loads(got.pop("about")[0])
        got.update({name: getattr(index, _SHARED[name]) for name in about["shared"]})
        rules = [name[len("cost."):] for name in got if name.startswith("cost.")]
        view = View(indptr=got["indptr"], peer=got["peer"], etype=got["etype"], truncated=got["truncated"],
                    spec=got["spec"], df=got["df"], fan_out=int(about["fan_out"]), owner=got["owner"],
                    cost={r: got[f"cost.{r}"] for r in rules}, zero_cost={r: got[f"zero_cost.{r}"] for r in rules},
                    degree=got["degree"], hubs=int(about["hubs"]))
        kept = len(view.peer)
        if len(view.indptr) != n + 1 or view.indptr[-1] != kept or kept > entries or \
                any(len(a) != n for a in (view.truncated, view.spec, view.df, view.degree)) or \
                any(len(a) != kept for a in (view.etype, view.owner, *view.cost.values())) or \
                any(len(a) != n for a in view.zero_cost.values()):
            raise ValueError("a view does not fit the index")
        if "transposed.order" in got:
            pointers, order = got["transposed.indptr"], got["transposed.order"]
            if len(pointers) != n + 1 or len(order) != kept or (kept and (order.min() < 0 or order.max() >= kept)):
                raise ValueError("a view's incoming lists do not fit it")
            view._lazy["transposed"] = (pointers, order)
        types, direction, fan_out, hub_share = about["key"]
        index._views[(None if types is None else frozenset(types), direction, fan_out, hub_share)] = view


def load(key: str | None, state: Any) -> tuple[TraversalIndex, AdjacencyIndex] | None:
    """Both indexes of ``state`` from the cache entry ``key``, or None (no entry, or one that does not fit
    ``state``'s tables: then it is not used)."""
    arrays = read_arrays(KIND, key) if key is not None else None
    if arrays is None:
        return None
    try:
        ours = {name: v for name, v in arrays.items() if not name.startswith((_ADJACENCY, _VIEW))}
        theirs = {name[len(_ADJACENCY):]: v for name, v in arrays.items() if name.startswith(_ADJACENCY)}
        _check(ours, theirs, state)
        traversal = TraversalIndex.from_arrays(ours)
        adjacency = AdjacencyIndex.from_arrays(theirs, traversal.refs[traversal.adjacency_code], state.edges,
                                               state.edge_evidence)
        _restore_views(traversal, arrays)
    except (KeyError, ValueError, IndexError, TypeError, AttributeError):
        return None
    return traversal, adjacency


def _check(ours: dict, theirs: dict, state: Any) -> None:
    """The cheap agreements of the arrays with each other and with ``state`` (a ValueError when one fails): the
    key names the content, these catch an entry written by code that numbered differently."""
    n, edges = len(ours["refs"]), len(state.edges)
    for indptr, peer, rows in ((ours["indptr"], ours["peer"], n), (theirs["indptr"], theirs["peer"],
                                                                  len(ours["adjacency_code"]))):
        if len(indptr) != rows + 1 or indptr[0] != 0 or indptr[-1] != len(peer) or np.any(np.diff(indptr) < 0):
            raise ValueError("a CSR's row pointers do not fit")
        if len(peer) and (peer.min() < 0 or peer.max() >= rows):
            raise ValueError("a peer code is out of range")
    if len(ours["chunk_code"]) != len(state.chunks) or len(theirs["edge_row"]) != 2 * edges + \
            2 * int((state.edges["direction"] == "symmetric").sum()):
        raise ValueError("the arrays were built from other tables")
    for name in ("etype", "direction"):
        if len(ours[name]) != len(ours["peer"]) or len(theirs[name]) != len(theirs["peer"]):
            raise ValueError(f"{name} does not fit the CSR")
    codes = ours["adjacency_code"]
    if len(codes) and (codes.min() < 0 or codes.max() >= n):
        raise ValueError("an adjacency code is out of range")
