"""How much input one model call may carry: characters derived from the context window.

Every caller that packs work into calls (extraction batches, report input, global-search map batches,
rating calls) asks the model with :func:`input_budget`; a model that does not say (the offline model)
leaves the caller's own default. :func:`context_budget` is the rule a chat model applies::

    chars = (context_window - max_tokens - CHAT_OVERHEAD_TOKENS) * CHARS_PER_TOKEN - prompt's own characters

capped at the seed's :data:`SEED_BATCH_CHARS` (24,000, upstream's map batch), with ``max_tokens``, when
unset, taken as :func:`output_reserve` of the context. :data:`CHARS_PER_TOKEN` is conservative:
measured with SmolLM2's tokenizer (the llama.cpp server's ``/extras/tokenize``) on CPython's reference
topics, prose gives 3.6-4.2 characters per token and the JSON prompts of map and rating calls 3.4-3.8;
3.0 keeps a margin for code-heavy and non-English text.
"""

from __future__ import annotations

from typing import Any

__all__ = ["SEED_BATCH_CHARS", "CHARS_PER_TOKEN", "CHAT_OVERHEAD_TOKENS", "MIN_BUDGET", "ITEM_CHARS", "context_budget",
           "input_budget", "output_reserve"]

SEED_BATCH_CHARS = 24_000
CHARS_PER_TOKEN = 3.0
#: The chat template's own tokens (role markers, a default system line) beyond the prompt's characters.
CHAT_OVERHEAD_TOKENS = 64
#: What one listed item (a chunk, an entity, a finding) adds beside its text: its label, brackets, a newline.
ITEM_CHARS = 16
#: The least a call carries: one chunk excerpt, one report; smaller would make a call per sentence.
MIN_BUDGET = 600


def output_reserve(context_window: int) -> int:
    """Tokens kept for the answer when ``max_tokens`` is unset: a quarter of the context, at most 1,024.

    >>> output_reserve(4096), output_reserve(2048), output_reserve(128_000)
    (1024, 512, 1024)
    """
    return min(1024, context_window // 4)


def context_budget(*, context_window: int | None, max_tokens: int | None, prompt_chars: int,
                   chars_per_token: float = CHARS_PER_TOKEN, ceiling: int = SEED_BATCH_CHARS) -> int:
    """Characters of input one call may carry beside ``prompt_chars`` of fixed prompt text.

    >>> context_budget(context_window=4096, max_tokens=None, prompt_chars=400)
    8624
    >>> context_budget(context_window=2048, max_tokens=300, prompt_chars=400)
    4652
    >>> context_budget(context_window=None, max_tokens=None, prompt_chars=400)  # the server does not say
    24000
    >>> context_budget(context_window=128_000, max_tokens=2000, prompt_chars=400)  # the seed's ceiling
    24000
    """
    if context_window is None:
        return ceiling
    reserve = max_tokens if max_tokens is not None else output_reserve(context_window)
    room = int((context_window - reserve - CHAT_OVERHEAD_TOKENS) * chars_per_token) - prompt_chars
    return max(MIN_BUDGET, min(ceiling, room))


def input_budget(model: Any, task: str, default: int | None = None) -> int | None:
    """``model.input_budget(task)`` when the model says one, else ``default``.

    >>> from crux_nb.models import OfflineModel
    >>> input_budget(OfflineModel(), "map_findings", 24_000)
    24000
    """
    method = getattr(model, "input_budget", None)
    value = method(task) if callable(method) else None
    return default if value is None else int(value)
