"""Whether an ended run is in its profile's online eval sample: what Format tells the state machine.

Apart from `stepwise.steps.online_eval`, which Format's handler loads only for an eval: deciding reads the
configuration and the run id alone.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from stepwise.models.run import RunMeta
from stepwise.steps.runtime import StepRuntime

if TYPE_CHECKING:
    # loaded with the first profile that has online evals (`stepwise.config.lazy_section`)
    from stepwise.config.online_evals import OnlineEvals


def online_evals_of(profile: str, runtime: StepRuntime) -> OnlineEvals | None:
    """The profile's `online_evals`; None without them, or for a profile no longer configured."""
    found = runtime.config.profiles.get(profile)
    return found.online_evals if found is not None else None


def online_eval_due(meta: RunMeta, runtime: StepRuntime) -> bool:
    """True when the run's profile evaluates runs online and this run is in its sample; never for a run that
    was cancelled (it was stopped, not finished: there is nothing of its own to score)."""
    settings = online_evals_of(meta.profile, runtime)
    if settings is None or meta.status == "CANCELLED":
        return False
    from stepwise.config.online_evals import sampled

    return sampled(meta.run_id, settings.sample)
