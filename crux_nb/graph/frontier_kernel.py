"""The compiled traversal (numba, the ``fast`` extra): :mod:`.frontier`'s traversal one entry at a time.

Same generations, same order, same arithmetic: a generation's reads run in frontier order, each
entry in CSR order, so the first occurrence of a peer is its first discovery, a strict ``<`` on the
running best distance keeps the first entry with the shortest one, and a candidate's mass adds
each generation's part (a sum from 0 in entry order, as ``np.bincount`` sums) to a running total,
as :mod:`.frontier` adds its parts. Candidates, distances, routes, supports, warnings, pruned
reads and mass are the numpy traversal's bit for bit (``tests/test_frontier_kernel.py``).

Per entry a compiled loop costs nanoseconds where numpy pays a call per generation, so nothing is
deferred: a terminal generation after the candidate ceiling is settled at once, through the candidates'
incoming entries when they are fewer than its own (sorted into the forward read's order), else by its own
entries in a loop that only tests each peer's candidate bit (:func:`_read_fixed`). A seed's tree (the
entry that discovered each node, for routes) holds the nodes it read: a route passes read nodes only, and a
node the floor prunes never gets one. ``CRUX_NB_TRAVERSAL=numpy`` turns the kernel off (numba not
installed: it is off).

What an entry costs is memory, not arithmetic (bench/HISTORY.md, "packed entries and bit sets"): an entry
is one 4-byte word (peer and hop cost, :meth:`.View.hops`); whether a node was seen, was discovered in this
generation or is a candidate is a bit in a set of n/8 bytes that stays in the L1 cache, where a node-sized
array read per entry missed it; and the output buffers are pooled, since a fresh allocation per call paid
a page fault per page written. Most of what remains is waiting on memory: a read's row, the node
arrays of a frontier node and the position of a peer are random addresses, and the loops ask for them a few
iterations ahead (:func:`_prefetch`, a hint that changes no result; ~30% off the kernel's time, bench/HISTORY.md).
"""

from __future__ import annotations

import functools
import importlib.util
import os

import numpy as np

from .traversal import CAP

__all__ = ["available", "installed", "run"]

_compiled = None
# a node's pos during one seed's search: its index in the next frontier when discovered in this generation below
# depth (its bit in the fresh set says so), else UNSEEN
UNSEEN = -1
# how many iterations ahead the loops ask for memory: a frontier node's arrays, a read's row, a peer's position
AHEAD_NODE, AHEAD_ROW, AHEAD_PEER = 6, 10, 4


@functools.cache
def installed() -> bool:
    """True when numba (the ``fast`` extra) is installed; it is imported only when the kernel first compiles.
    Asked once per process: the module search costs ~5 us, and every expansion asks."""
    return importlib.util.find_spec("numba") is not None


def available() -> bool:
    """True when numba is installed and ``CRUX_NB_TRAVERSAL`` does not ask for the numpy traversal."""
    return installed() and os.environ.get("CRUX_NB_TRAVERSAL", "").lower() != "numpy"


def _prefetch(array, i):
    """Placeholder for the compiled prefetch hint (:func:`_prefetch_intrinsic`), set when the kernel compiles."""


def _prefetch_intrinsic():
    """``prefetch(array, i)``: a hint to load ``array[i]``'s cache line (LLVM's ``llvm.prefetch``: read, kept
    in every cache level); it never faults and changes no result, so ``i`` needs no bounds check."""
    from llvmlite import ir
    from numba.core import cgutils, types
    from numba.extending import intrinsic

    @intrinsic
    def prefetch(typingctx, array, i):
        def codegen(context, builder, signature, args):
            array_type = signature.args[0]
            struct = context.make_array(array_type)(context, builder, args[0])
            pointer = cgutils.get_item_pointer(context, builder, array_type, struct, [args[1]], wraparound=False,
                                               boundscheck=False)
            byte_pointer = ir.IntType(8).as_pointer()
            i32 = ir.IntType(32)
            hint = cgutils.get_or_insert_function(
                builder.module, ir.FunctionType(ir.VoidType(), [byte_pointer, i32, i32, i32]), "llvm.prefetch.p0")
            # (address, 0: a read, 3: keep in every cache level, 1: data)
            builder.call(hint, [builder.bitcast(pointer, byte_pointer), ir.Constant(i32, 0), ir.Constant(i32, 3),
                                ir.Constant(i32, 1)])
            return context.get_dummy_value()

        return types.void(array, i), codegen

    return prefetch


def _prefetch_rows(indptr, hops, exp, i, nexp):
    """Before reading node ``exp[i]``: ask for a later read's row (its first and last line) and for where an even
    later one starts."""
    if i + AHEAD_ROW < nexp:
        u = exp[i + AHEAD_ROW]
        _prefetch(hops, indptr[u])
        _prefetch(hops, indptr[u + 1] - 1)
        if i + 2 * AHEAD_ROW < nexp:
            _prefetch(indptr, exp[i + 2 * AHEAD_ROW])


def _read_fixed(exp, edist, passed, nexp, s, r, indptr, hops, slot, is_candidate, has_weights, damping, part,
                in_part, part_slots, touched, best_dist, best_rank, via, via_type, etype):
    """A terminal generation past the ceiling, read forward: an entry only counts when its peer is one of the
    fixed candidates (a bit test), so the loop does nothing else. Returns the number of slots in the mass part."""
    one = np.uint64(1)
    nparts = 0
    for i in range(nexp):
        _prefetch_rows(indptr, hops, exp, i, nexp)
        v, d, free = exp[i], edist[i], passed[i]
        counted = _counted(free, d, damping)
        for e in range(indptr[v], indptr[v + 1]):
            x = hops[e]
            p = x >> 1
            if is_candidate[p >> 6] & (one << (p & 63)) and p != s:
                cost = x & 1
                nparts = _reach(slot[p], e, v, d + cost, counted if cost == 1 else free, r, nparts, has_weights, part,
                                in_part, part_slots, touched, best_dist, best_rank, via, via_type, etype)
    return nparts


def _counted(passed, d, damping):
    """The mass a counted hop from a read at distance ``d`` carries: landing past distance 1, ``damping`` of the
    read node's share ``passed``; a free hop carries ``passed`` whole."""
    if damping != 1.0 and d >= 1:
        return passed * damping
    return passed


def _reach(sl, e, v, nx, carried, r, nparts, has_weights, part, in_part, part_slots, touched, best_dist, best_rank,
           via, via_type, etype):
    """Entry ``e`` of node ``v``'s read reaches candidate slot ``sl``: its mass joins this generation's part, seed
    ``r`` touches it, and a strictly shorter distance takes the route. Returns the part's slot count."""
    if has_weights:
        if not in_part[sl]:
            in_part[sl] = True
            part_slots[nparts] = sl
            nparts += 1
        part[sl] += carried
    touched[r, sl] = True
    if nx < best_dist[sl]:
        best_dist[sl], best_rank[sl] = nx, r
        via[sl], via_type[sl] = v, etype[e]
    return nparts


def _settle(exp, edist, passed, nexp, s, r, slot, codes, count, t_indptr, by_peer, owner, hops, etype, pos,
            keys, has_weights, damping, part, in_part, part_slots, touched, best_dist,
            best_rank, via, via_type):
    """A terminal generation past the ceiling through the candidates' incoming entries: those whose row is read
    here, sorted by (read position, entry) -- the forward read's order -- then added up as the forward read would.
    Returns the number of slots in this generation's mass part."""
    e_count = len(hops)
    for i in range(nexp):
        pos[exp[i]] = i
    nk = 0
    for k in range(count):
        c = codes[k]
        if c == s:
            continue
        for t in range(t_indptr[c], t_indptr[c + 1]):
            e = by_peer[t]
            o = pos[owner[e]]
            if o >= 0:
                keys[nk] = o * e_count + e
                nk += 1
    for i in range(nexp):
        pos[exp[i]] = UNSEEN
    order = np.sort(keys[:nk])
    nparts = 0
    for key in order:
        i, e = key // e_count, key % e_count
        cost = hops[e] & 1
        carried = _counted(passed[i], edist[i], damping) if cost == 1 else passed[i]
        nparts = _reach(slot[hops[e] >> 1], e, exp[i], edist[i] + cost, carried, r, nparts, has_weights, part,
                        in_part, part_slots, touched, best_dist, best_rank, via, via_type, etype)
    return nparts


def _kernel(indptr, hops, etype, owner, zero, spec, truncated, t_indptr, by_peer, seeds, weights,
            has_weights, depth, max_candidates, floor, damping, margin, slot, pos, front, fdist, fmass, fentry,
            exp, edist, passed, keys, seen, fresh, is_candidate, tokens, tree_node, tree_entry):
    n, ns, m = len(indptr) - 1, len(seeds), max(max_candidates, 1)
    big = np.iinfo(np.int64).max
    one = np.uint64(1)
    codes = np.empty(m, np.int64)
    best_dist, best_rank = np.full(m, big, np.int64), np.full(m, big, np.int64)
    via, via_type = np.full(m, -1, np.int64), np.full(m, -1, np.int64)
    mass, part = np.zeros(m), np.zeros(m)  # the running total; this generation's part
    in_part, part_slots = np.zeros(m, np.bool_), np.empty(m, np.int64)
    touched = np.zeros((ns, m), np.bool_)
    tree_ptr = np.zeros(ns + 1, np.int64)
    ntok = ntree = count = pruned = 0
    capped = False
    incoming = 0  # the candidates' incoming entries, counted when the ceiling fixes them
    for r in range(ns):
        s = seeds[r]
        if s < 0:
            tree_ptr[r + 1] = ntree
            continue
        w = weights[r]
        seen[s >> 6] |= one << (s & 63)
        cur = 0  # row of this generation's frontier in front/fdist/fmass; the next one's is 1 - cur
        front[cur, 0], fdist[cur, 0], fmass[cur, 0] = s, 0, w
        flen = 1
        while flen > 0:
            # the nodes read in this generation: below depth and, past the first hop, not thinner than the floor
            nexp = 0
            terminal = True
            for j in range(flen):
                v, d = front[cur, j], fdist[cur, j]
                if j + AHEAD_NODE < flen:  # a node's arrays, for its test here and its read below
                    u = front[cur, j + AHEAD_NODE]
                    _prefetch(spec, u)
                    _prefetch(zero, u)
                    _prefetch(indptr, u)
                    _prefetch(truncated, u)
                if d >= depth:
                    continue
                if floor > 0.0 and has_weights and d >= 1 and fmass[cur, j] * spec[v] < w * floor * (1 - margin):
                    pruned += 1
                    continue
                exp[nexp], edist[nexp] = v, d
                if v != s:  # a read node's route step (the seed has none): a route passes read nodes only
                    tree_node[ntree], tree_entry[ntree] = v, fentry[cur, j]
                    ntree += 1
                passed[nexp] = fmass[cur, j] * spec[v] if has_weights else 0.0
                if d != depth - 1 or zero[v]:
                    terminal = False
                nexp += 1
            if nexp == 0:
                break
            nxt = 1 - cur
            nparts = nnext = 0
            backward = False
            if terminal and capped:  # only mass and support of the fixed candidates: read whichever side is smaller
                forward = 0
                for i in range(nexp):
                    forward += indptr[exp[i] + 1] - indptr[exp[i]]
                backward = incoming < forward
            if backward:
                nparts = _settle(exp, edist, passed, nexp, s, r, slot, codes, count, t_indptr, by_peer, owner, hops,
                                 etype, pos, keys, has_weights, damping, part, in_part, part_slots, touched,
                                 best_dist, best_rank, via, via_type)
            elif terminal and capped:  # the same entries, read for the fixed candidates only
                nparts = _read_fixed(exp, edist, passed, nexp, s, r, indptr, hops, slot, is_candidate, has_weights,
                                     damping, part, in_part, part_slots, touched, best_dist, best_rank, via, via_type,
                                     etype)
            if terminal and capped:  # settled or read: only the fan-out warnings are left, then skip the loop below
                for i in range(nexp):
                    if truncated[exp[i]]:
                        tokens[ntok] = exp[i]
                        ntok += 1
                nexp = 0
            for i in range(nexp):
                v = exp[i]
                _prefetch_rows(indptr, hops, exp, i, nexp)
                if truncated[v]:
                    tokens[ntok] = v
                    ntok += 1
                d, free = edist[i], passed[i]
                counted = _counted(free, d, damping)
                end = indptr[v + 1]
                for e in range(indptr[v], end):
                    x = hops[e]
                    p, cost = x >> 1, x & 1
                    if not terminal and e + AHEAD_PEER < end:  # a later peer's position, read or written if new
                        _prefetch(pos, hops[e + AHEAD_PEER] >> 1)
                    nx = d + cost
                    carried = counted if cost == 1 else free
                    # node state as bits (a few KB, in the L1 cache) instead of a read of a node-sized array per entry
                    word, bit = p >> 6, one << (p & 63)
                    if p != s:
                        sl = slot[p] if is_candidate[word] & bit else -1
                        if sl < 0 and not capped:
                            if count < max_candidates:
                                sl = count
                                slot[p] = sl
                                is_candidate[word] |= bit
                                codes[count] = p
                                count += 1
                            else:
                                capped = True
                                tokens[ntok] = CAP
                                ntok += 1
                                for k in range(count):  # the candidates are fixed: their incoming entries too
                                    incoming += t_indptr[codes[k] + 1] - t_indptr[codes[k]]
                        if sl >= 0:
                            nparts = _reach(sl, e, v, nx, carried, r, nparts, has_weights, part, in_part, part_slots,
                                            touched, best_dist, best_rank, via, via_type, etype)
                    if terminal:
                        continue
                    if not seen[word] & bit:
                        seen[word] |= bit
                        if nx < depth:  # a first discovery below depth is read next; one at depth is only seen
                            pos[p] = nnext
                            fresh[word] |= bit
                            front[nxt, nnext], fdist[nxt, nnext] = p, nx
                            fmass[nxt, nnext] = carried if has_weights else 0.0  # 0.0 + carried, as numpy adds
                            fentry[nxt, nnext] = e
                            nnext += 1
                    elif has_weights and fresh[word] & bit:  # more mass for a node discovered in this generation
                        fmass[nxt, pos[p]] += carried
            for k in range(nparts):  # this generation's part joins the running total
                sl = part_slots[k]
                mass[sl] += part[sl]
                part[sl] = 0.0
                in_part[sl] = False
            for k in range(nnext):
                pos[front[nxt, k]] = UNSEEN
                fresh[front[nxt, k] >> 6] = 0
            if terminal:
                break
            cur, flen = nxt, nnext
        seen[:] = 0  # a few KB: cheaper than remembering what was marked
        tree_ptr[r + 1] = ntree
    for k in range(count):  # the scratch goes back to the pool as it came: no slot, nothing seen, no position
        slot[codes[k]] = -1
        is_candidate[codes[k] >> 6] = 0
    return (codes[:count].copy(), best_dist[:count].copy(), best_rank[:count].copy(), via[:count].copy(),
            via_type[:count].copy(), mass[:count].copy(), touched, tokens[:ntok].copy(), pruned,
            tree_node[:ntree].copy(), tree_entry[:ntree].copy(), tree_ptr)


def _compile():
    global _compiled, _counted, _reach, _settle, _prefetch, _prefetch_rows, _read_fixed
    if _compiled is None:
        import numba  # the `fast` extra; importing it costs ~0.3 s, so not before the first traversal

        _prefetch = _prefetch_intrinsic()
        # the kernel resolves the helpers as globals when it compiles; the small ones inlined at numba's level
        _counted = numba.njit(inline="always", cache=True)(_counted)
        _reach = numba.njit(inline="always", cache=True)(_reach)
        _prefetch_rows = numba.njit(inline="always", cache=True)(_prefetch_rows)
        _read_fixed = numba.njit(inline="always", cache=True)(_read_fixed)
        _settle = numba.njit(cache=True)(_settle)
        _compiled = numba.njit(cache=True)(_kernel)
    return _compiled


def run(view, rule: str, seeds: np.ndarray, weights: np.ndarray | None, *, depth: int, max_candidates: int,
        floor: float | None, damping: float, margin: float) -> tuple:
    """The kernel's arrays for one traversal under entity-hop ``rule`` (see :func:`crux_nb.graph.frontier.traverse`)."""
    has_weights = weights is not None
    w = np.asarray(weights, dtype=np.float64) if has_weights else np.zeros(len(seeds))
    t_indptr, by_peer = view.transposed()
    kernel = _compile()
    n = len(view.indptr) - 1
    pool = view.pool("kernel scratch")  # node-sized scratch, reused: fresh pages cost more than the traversal
    scratch = pool.pop() if pool else _scratch(n, len(view.peer))
    # per seed at most every node read (a warning each) and discovered: sized for the seeds, kept while big enough
    outputs = view.pool("kernel outputs")
    out = outputs.pop() if outputs else None
    if out is None or len(out[0]) < len(seeds) * n + 1:
        out = tuple(np.empty(len(seeds) * n + 1, np.int64) for _ in range(3))
    result = kernel(view.indptr, view.hops(rule), view.etype, view.owner, view.zero_cost[rule], view.spec,
                    view.truncated, t_indptr, by_peer, np.asarray(seeds, dtype=np.int64), w, has_weights, int(depth),
                    int(max_candidates), float(floor or 0.0), float(damping), float(margin), *scratch, *out)
    pool.append(scratch)  # only after a call that finished: one that failed may have left marks in it
    outputs.append(out)
    return result


def _scratch(n: int, entries: int) -> tuple:
    """(slot, pos: reset by every call), buffers the kernel overwrites before reading, and the bit sets of seen,
    freshly discovered and candidate nodes (reset by every call)."""
    words = (n + 63) // 64
    return (np.full(n, -1, np.int64), np.full(n, UNSEEN, np.int64), np.empty((2, n), np.int64),
            np.empty((2, n), np.int64), np.empty((2, n)), np.empty((2, n), np.int64), np.empty(n, np.int64),
            np.empty(n, np.int64), np.empty(n),
            np.empty(entries, np.int64), np.zeros(words, np.uint64), np.zeros(words, np.uint64),
            np.zeros(words, np.uint64))
