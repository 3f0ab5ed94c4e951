"""A model's context window learned from its server, for a model neither the configuration nor the catalog
gives one (a local model on vLLM, Ollama or LM Studio).

Two sources: the provider's refusal of a request over the window, when it states the window
(`ContextWindowExceeded.window`, which `stepwise.models.overflow` reads back after the state machine's Catch),
and the server's model listing (`stepwise.llm.model_listing`), asked once a process per model at its first
call. What is learned is remembered for the process (keyed by the model's provider, server and id, so two
servers of one model name do not mix) and for the run, in the payload's `run.learned_window`: the run's next
step, in another container perhaps, has it without asking again. From then on the run's limits are those of a
configured window: requests are fitted, compacted past the threshold, cut to fit.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from stepwise.models.state import RunContext

if TYPE_CHECKING:
    from stepwise.config.context import ContextLimits
    from stepwise.steps.runtime import StepRuntime

_LOCK = threading.Lock()
# model key -> the window its server stated or listed
_LEARNED: dict[str, int] = {}
# model keys whose listing was asked for already (found or not): asked once a process
_LISTING_ASKED: set[str] = set()
# model key -> held while its listing is asked: runs starting together wait for the one asking
_ASKING: dict[str, threading.Lock] = {}


def model_key(runtime: StepRuntime, model: str) -> str:
    """Which model of which server `model` (a configuration's model name) is."""
    config = runtime.config.models[model]
    provider, requested = runtime.model_identity(model)
    return f"{provider} {getattr(config, 'base_url', '')} {requested}"


def remember_window(key: str, window: int) -> None:
    """Remember for this process that the model `key` names has `window`."""
    with _LOCK:
        _LEARNED[key] = window


def remembered_window(key: str) -> int | None:
    """The window this process learned for the model `key` names, if any."""
    with _LOCK:
        return _LEARNED.get(key)


def listed_window(key: str, ask: Callable[[], int | None]) -> int | None:
    """The window the server of the model `key` names lists, `ask`ed once a process (found or not).

    A thread that comes while another asks waits for its answer (the listing's own timeouts bound the wait):
    `stepwise serve` starts several runs of a model at once, and a run that went on without the window would
    send its first request unfitted, where one started a moment later fits it.
    """
    with _LOCK:
        asking = _ASKING.setdefault(key, threading.Lock())
    with asking:
        with _LOCK:
            if key in _LISTING_ASKED:
                return _LEARNED.get(key)
        try:
            window = ask()
        finally:
            with _LOCK:
                _LISTING_ASKED.add(key)
        if window is not None:
            remember_window(key, window)
        return window


def run_limits(runtime: StepRuntime, run: RunContext) -> ContextLimits:
    """The run's context limits: the configured ones, with the learned window (the run's, else this
    process's) where no window is configured or catalogued."""
    limits = runtime.config.context_limits(run.profile)
    if limits.window is not None:
        return limits
    learned = run.learned_window or remembered_window(model_key(runtime, runtime.profile(run.profile).model))
    return limits if learned is None else runtime.config.context_limits(run.profile, learned_window=learned)


def with_learned_window(run: RunContext, window: int | None) -> RunContext:
    """`run` carrying `window` as its learned window (unchanged without one)."""
    if window is None or run.learned_window == window:
        return run
    return run.model_copy(update={"learned_window": window})
