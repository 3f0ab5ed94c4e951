"""What an ended run produced, decided in one place: `answered`, `partial` or `none`.

- `answered`: the model gave its final answer (or, with the client's tools, handed the client its calls).
- `partial`: a limit or a model error stopped the run after work was done (a tool returned something, or
  the model wrote text that reads as an answer); the stored answer is the best one built from that work.
- `none`: nothing to answer with. The run is FAILED, with the provider's error when one stopped it, and
  its stop reason still says why. A run recorded FAILED, TIMED_OUT or CANCELLED for any other cause has
  no answer either: its outcome is `none` too.

Format and FormatFailure decide it as the run ends (`decide_outcome`, `status_of`); a run stored before
outcomes were recorded gets its own on read, from its status, stop reason and answer (`outcome_of`).
"""

from __future__ import annotations

from typing import Literal, get_args

from stepwise.models.run import TERMINAL_STATUSES, Outcome, RunMeta

# The stop reasons of a run the model itself ended.
ANSWERED_STOPS = frozenset({"final_answer", "tool_calls"})


def decide_outcome(*, answered: bool, best_answer: str | None) -> Outcome:
    """The outcome of a run ending now: `answered` when the model ended it, else `partial` when work done
    gave a best answer (`best_available_answer`), else `none`."""
    if answered:
        return "answered"
    return "partial" if best_answer is not None else "none"


def status_of(outcome: Outcome) -> Literal["SUCCEEDED", "FAILED"]:
    """The status a run ending with `outcome` is recorded with: without an answer it FAILED."""
    return "FAILED" if outcome == "none" else "SUCCEEDED"


def outcome_of(status: str, stop_reason: str | None, recorded: Outcome | None, answer: str | None) -> Outcome | None:
    """The run's outcome: the one recorded as it ended, else (a run stored before outcomes were) the one
    its status, stop reason and answer show; None while the run is open."""
    if recorded is not None:
        return recorded
    if status not in TERMINAL_STATUSES:
        return None
    if status != "SUCCEEDED":
        return "none"
    if stop_reason is None or stop_reason in ANSWERED_STOPS:
        return "answered"
    # A limit or a model error: such runs were once recorded SUCCEEDED even with nothing but the sentence
    # saying the run stopped and no tool returned anything.
    return "none" if answer is None or _said_nothing(answer, stop_reason) else "partial"


def needs_answer(status: str, stop_reason: str | None, recorded: Outcome | None) -> bool:
    """True when `outcome_of` needs the run's answer to tell (a listing, which does not read answers, then
    reads it for that run alone)."""
    return recorded is None and status == "SUCCEEDED" and stop_reason is not None and stop_reason not in ANSWERED_STOPS


def run_outcome(meta: RunMeta) -> Outcome | None:
    """`outcome_of` the run's META."""
    return outcome_of(meta.status, meta.stop_reason, meta.outcome, meta.answer)


def _said_nothing(answer: str, stop_reason: str) -> bool:
    """The answer is the summary of a run that stopped before any work, in one of the profile languages."""
    # deferred: the API reads runs without loading the protocols or the configuration's models, and only runs
    # stored before outcomes were recorded get here
    from stepwise.config.language import Language
    from stepwise.steps.best_answer import limit_summary

    stripped = answer.strip()
    return not stripped or any(stripped == limit_summary([], stop_reason, language) for language in get_args(Language))
