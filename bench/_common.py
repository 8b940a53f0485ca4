"""Shared helpers for the benchmark scripts in ``bench/``.

Timing (per-call samples with warm-up and repeats, percentiles), phase timers,
peak memory, machine/version info, Markdown tables and the machine-readable
summary every benchmark writes beside its report (:func:`write_summary`).
Standard library only, so every benchmark can import it without extra dependencies.
"""

from __future__ import annotations

import gc
import json
import math
import os
import platform
import resource
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Iterator

__all__ = [
    "Stats", "stats", "percentile", "time_per_call", "time_interleaved", "time_once", "Phases", "load_average",
    "peak_rss_mb", "current_rss_mb", "hwm_mb", "reset_peak", "machine_info", "markdown_table", "fmt_num", "write_text", "quiet_gc",
    "write_summary", "SUMMARY_KEYS", "VERDICTS",
]

BENCH_DIR = Path(__file__).resolve().parent
OUT_DIR = BENCH_DIR / "out"


# ----------------------------------------------------------------- statistics
def percentile(sorted_values: Sequence[float], q: float) -> float:
    """Linear-interpolated percentile (``q`` in 0..100) of already sorted values (numpy's default method)."""
    if not sorted_values:
        return math.nan
    pos = (len(sorted_values) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    if lo == hi:
        return float(sorted_values[lo])
    return float(sorted_values[lo] + (sorted_values[hi] - sorted_values[lo]) * (pos - lo))


@dataclass(frozen=True)
class Stats:
    """Summary of nanosecond samples; properties give microseconds / milliseconds."""

    n: int
    mean_ns: float
    p50_ns: float
    p95_ns: float
    min_ns: float
    max_ns: float
    total_ns: float

    @property
    def mean_us(self) -> float:
        return self.mean_ns / 1e3

    @property
    def p50_us(self) -> float:
        return self.p50_ns / 1e3

    @property
    def p95_us(self) -> float:
        return self.p95_ns / 1e3


def stats(samples_ns: Iterable[float]) -> Stats:
    values = sorted(samples_ns)
    if not values:
        return Stats(0, math.nan, math.nan, math.nan, math.nan, math.nan, 0.0)
    total = float(sum(values))
    return Stats(len(values), total / len(values), percentile(values, 50), percentile(values, 95),
                 float(values[0]), float(values[-1]), total)


# --------------------------------------------------------------------- timing
@contextmanager
def quiet_gc() -> Iterator[None]:
    """Collect once, then freeze every live object so the timed code does not pay
    for full collections that scan the (large, long-lived) graphs built before it.
    Collections of the objects the timed code creates still run as usual."""
    gc.collect()
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()


def time_per_call(fn: Callable[[Any], Any], items: Sequence[Any], *, warmup: int = 1, repeats: int = 3) -> Stats:
    """Time ``fn(item)`` once per item per repeat with ``perf_counter_ns``.

    ``warmup`` full passes run first and are discarded. Returns stats over all
    ``len(items) * repeats`` samples (each sample is one call).
    """
    for _ in range(warmup):
        for item in items:
            fn(item)
    clock = time.perf_counter_ns
    samples: list[int] = []
    append = samples.append
    with quiet_gc():
        for _ in range(repeats):
            for item in items:
                t0 = clock()
                fn(item)
                append(clock() - t0)
    return stats(samples)


def time_interleaved(fns: Mapping[str, Callable[[Any], Any]], items: Sequence[Any], *, warmup: int = 1,
                     repeats: int = 3) -> dict[str, Stats]:
    """Like :func:`time_per_call` for several implementations of the same operation.

    The timed passes are interleaved (repeat ``r`` runs every implementation
    once, starting from a rotating position), so background load drifting over
    the run affects every side alike. ``Stats.total_ns / repeats`` is the time of
    one pass over ``items``.
    """
    names = list(fns)
    for _ in range(warmup):
        for name in names:
            for item in items:
                fns[name](item)
    clock = time.perf_counter_ns
    samples: dict[str, list[int]] = {name: [] for name in names}
    with quiet_gc():
        for r in range(repeats):
            k = r % len(names)
            for name in names[k:] + names[:k]:
                fn, append = fns[name], samples[name].append
                for item in items:
                    t0 = clock()
                    fn(item)
                    append(clock() - t0)
    return {name: stats(samples[name]) for name in names}


def time_once(fn: Callable[[], Any], *, warmup: int = 1, repeats: int = 3) -> tuple[Stats, Any]:
    """Time a whole operation ``repeats`` times after ``warmup`` runs; returns (stats, last result)."""
    result = None
    for _ in range(warmup):
        result = fn()
    clock = time.perf_counter_ns
    samples = []
    with quiet_gc():
        for _ in range(repeats):
            t0 = clock()
            result = fn()
            samples.append(clock() - t0)
    return stats(samples), result


@dataclass
class Phases:
    """Wall-clock timer for one-off phases (builds), with the peak RSS seen after each."""

    seconds: dict[str, float] = field(default_factory=dict)
    peak_mb: dict[str, float] = field(default_factory=dict)

    @contextmanager
    def __call__(self, name: str) -> Iterator[None]:
        t0 = time.perf_counter_ns()
        try:
            yield
        finally:
            self.seconds[name] = (time.perf_counter_ns() - t0) / 1e9
            self.peak_mb[name] = peak_rss_mb()


# --------------------------------------------------------------------- memory
def peak_rss_mb() -> float:
    """Peak resident set size of this process so far, in MiB."""
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak / (1024 * 1024) if sys.platform == "darwin" else peak / 1024


def _status_mb(field: str) -> float | None:
    """A memory field of /proc/self/status (``VmRSS``, ``VmHWM``) in MiB; None off Linux."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith(f"{field}:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return None


def current_rss_mb() -> float:
    """Current resident set size in MiB (Linux; falls back to the peak elsewhere)."""
    rss = _status_mb("VmRSS")
    return peak_rss_mb() if rss is None else rss


def hwm_mb() -> float | None:
    """The kernel's peak-RSS mark (VmHWM) in MiB, resettable with :func:`reset_peak`; None off Linux."""
    return _status_mb("VmHWM")


def reset_peak() -> bool:
    """Reset the kernel's peak-RSS mark of this process (Linux >= 4.0); False where that is not possible."""
    try:
        with open("/proc/self/clear_refs", "w", encoding="ascii") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


# ------------------------------------------------------------------- machine
def load_average() -> str:
    """The 1/5/15-minute load averages (other processes compete for the CPUs when these exceed the CPU count)."""
    try:
        return " / ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "-"


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


def machine_info(packages: Sequence[str] = ()) -> dict[str, str]:
    """Python, OS, CPU and installed versions of ``packages`` (``"-"`` when missing)."""
    info = {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "cpu": _cpu_model(),
        "cpus": str(os.cpu_count()),
    }
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            total_kb = int(fh.readline().split()[1])
        info["memory"] = f"{total_kb / 1024 / 1024:.1f} GiB"
    except (OSError, ValueError, IndexError):
        pass
    for name in packages:
        try:
            info[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            info[name] = "-"
    return info


# -------------------------------------------------------------------- output
def fmt_num(value: float | None, digits: int = 3) -> str:
    """A number with ``digits`` significant digits (at least 0 decimals); ``-`` for None/NaN."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if value == 0:
        return "0"
    magnitude = math.floor(math.log10(abs(value)))
    decimals = max(0, digits - 1 - magnitude)
    return f"{value:,.{decimals}f}"


def markdown_table(headers: Sequence[str], rows: Iterable[Sequence[Any]], *, align: Sequence[str] | None = None) -> str:
    """A GitHub-flavoured Markdown table; ``align`` holds ``l``/``r``/``c`` per column (default: first left, rest right)."""
    rows = [[str(c).replace("|", "\\|") for c in row] for row in rows]
    headers = [str(h).replace("|", "\\|") for h in headers]
    for row in rows:
        if len(row) != len(headers):
            raise ValueError(f"row has {len(row)} cells, table has {len(headers)} columns: {row}")
    align = list(align) if align is not None else ["l"] + ["r"] * (len(headers) - 1)
    widths = [max([3, len(h)] + [len(r[i]) for r in rows]) for i, h in enumerate(headers)]
    rules = {"l": lambda w: ":" + "-" * (w - 1), "r": lambda w: "-" * (w - 1) + ":",
             "c": lambda w: ":" + "-" * (w - 2) + ":"}

    def line(cells: Sequence[str]) -> str:
        return "| " + " | ".join(c.ljust(w) if a == "l" else c.rjust(w) for c, w, a in zip(cells, widths, align)) + " |"

    out = [line(headers), "| " + " | ".join(rules[a](w) for a, w in zip(align, widths)) + " |"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def write_text(path: str | os.PathLike, text: str) -> Path:
    """Write ``text`` to ``path`` (creating folders); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


# ------------------------------------------------------------------- summary
SUMMARY_KEYS = ("benchmark", "measure", "ours", "baseline", "baseline_name", "ratio", "target", "verdict")
VERDICTS = ("pass", "miss", "info")


def _summary_number(value: Any, what: str) -> float | int | None:
    """A JSON-safe number: ints stay ints, floats keep 6 significant digits, None/NaN become None."""
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise TypeError(f"{what} must be a number or None, not {value!r}")
    if isinstance(value, int):
        return value
    if math.isnan(value) or math.isinf(value):
        return None
    return float(f"{value:.6g}")


def write_summary(md_path: str | os.PathLike, benchmark: str, rows: Iterable[Mapping[str, Any]]) -> Path:
    """Write the machine-readable summary of one benchmark run beside its Markdown report.

    The file is ``<report without .md>.summary.json`` (``bench/out/neighbors_small.md`` ->
    ``bench/out/neighbors_small.summary.json``): a JSON list with one object per measure and
    exactly the keys of :data:`SUMMARY_KEYS`:

    * ``benchmark``: the benchmark's name (the script without ``.py``);
    * ``measure``: what was measured, units in the name (``"neighbors(ref) - mean (us)"``);
    * ``ours``: crux_nb's figure (a number, or null when it could not be measured);
    * ``baseline``: the baseline's figure measured in the same run, or null when there is none;
    * ``baseline_name``: what the baseline is (null without a baseline);
    * ``ratio``: ``ours / baseline``, computed here from the stored numbers (null unless both
      are numbers and the baseline is not 0);
    * ``target``: null, or conditions joined by ``" and "``; each is ``"<ours|ratio> <op> <number>"``
      (op one of ``<= < >= > ==``, optionally followed by a note in parentheses) or a plain-words
      condition the benchmark checked itself (``"deterministic"``);
    * ``verdict``: ``"pass"`` / ``"miss"`` against the target, ``"info"`` for a measure without one.

    ``rows`` give ``measure``, ``ours`` and optionally ``baseline``, ``baseline_name``, ``target`` and
    ``verdict`` (default ``"info"``). Floats keep 6 significant digits; NaN is written as null.
    """
    out: list[dict[str, Any]] = []
    seen: set[tuple[str, Any]] = set()
    for row in rows:
        unknown = set(row) - {"measure", "ours", "baseline", "baseline_name", "target", "verdict"}
        if unknown:
            raise ValueError(f"unknown summary fields {sorted(unknown)} (ratio is computed, not given)")
        measure = row.get("measure")
        if not isinstance(measure, str) or not measure:
            raise ValueError(f"summary row without a measure: {row!r}")
        ours = _summary_number(row.get("ours"), f"{measure}: ours")
        baseline = _summary_number(row.get("baseline"), f"{measure}: baseline")
        ratio = _summary_number(ours / baseline, f"{measure}: ratio") if (
            ours is not None and baseline is not None and baseline != 0) else None
        verdict = row.get("verdict", "info")
        if verdict not in VERDICTS:
            raise ValueError(f"{measure}: verdict {verdict!r} is not one of {VERDICTS}")
        target = row.get("target")
        if target is not None and not isinstance(target, str):
            raise TypeError(f"{measure}: target must be a string or None, not {target!r}")
        if verdict != "info" and target is None:
            raise ValueError(f"{measure}: a {verdict!r} verdict needs a target")
        name = row.get("baseline_name")
        key = (measure, name)
        if key in seen:
            raise ValueError(f"{benchmark}: measure {measure!r} against {name!r} appears twice")
        seen.add(key)
        out.append({"benchmark": benchmark, "measure": measure, "ours": ours, "baseline": baseline,
                    "baseline_name": name, "ratio": ratio, "target": target, "verdict": verdict})
    path = Path(md_path)
    path = path.with_name((path.name[:-3] if path.name.endswith(".md") else path.name) + ".summary.json")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(out, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")
    return path
