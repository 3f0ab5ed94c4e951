"""A run that has ended goes no further: the check Parse and ToolInvoke make on the META they read.

On its own, not in `stepwise.steps.agent`: ToolInvoke needs this and not the protocols the agent loads.
"""

from __future__ import annotations

from stepwise.errors import RunNotFound
from stepwise.models.run import RunMeta


def refuse_ended(meta: RunMeta) -> None:
    """`RunNotFound` once the run has ended (cancelled, most likely): its execution must go no further.

    Parse and ToolInvoke read META in the batch they make anyway, so an Express execution, which cannot
    be stopped, ends at the next of them after a cancellation, as it did at IterationGuard's write.
    """
    if meta.is_terminal:
        raise RunNotFound(f"run {meta.run_id} already ended {meta.status}")
