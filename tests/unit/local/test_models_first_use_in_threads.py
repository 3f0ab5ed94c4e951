"""The local engine runs many steps at once in one process (`stepwise serve`, `run`, `eval`: a thread per
execution slot), and the project's models build their validators on first use (`defer_build`, for the
Lambda cold start). A first use from several threads at once must validate, not fail: pydantic before 2.14
rebuilt a deferred model without a lock, and a thread arriving mid-build used `BaseModel`'s validator ("BaseModel
cannot be instantiated directly"), which failed a run of `stepwise eval` under load. The pinned pydantic builds
under a lock; this checks it with every deferred model of the loop's handlers, in a fresh interpreter (where
none is built yet) that switches threads as often as it can."""

from __future__ import annotations

import json
import subprocess
import sys

from stepwise.local.defaults import PROJECT_ROOT

THREADS = 12

_PROBE = """
import json, sys, threading
sys.setswitchinterval(1e-6)
import stepwise.models.api_requests, stepwise.models.api_responses, stepwise.models.decision
import stepwise.models.run, stepwise.models.state, stepwise.models.summary, stepwise.config.model
from pydantic import BaseModel, ValidationError

def deferred():
    seen, pending, found = set(), [BaseModel], []
    while pending:
        for model in pending.pop().__subclasses__():
            if model not in seen:
                seen.add(model)
                pending.append(model)
                if model.__module__.startswith("stepwise.") and not model.__pydantic_complete__:
                    found.append(model)
    return found

models, failures = deferred(), []
for model in models:
    barrier = threading.Barrier(THREADS)

    def first_use(model=model, barrier=barrier):
        barrier.wait()
        try:
            model.model_validate({})
        except ValidationError:
            pass
        except Exception as exc:
            failures.append(f"{model.__qualname__}: {type(exc).__name__}: {exc}"[:300])

    threads = [threading.Thread(target=first_use) for _ in range(THREADS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
print(json.dumps({"models": len(models), "failures": failures}))
""".replace("THREADS", str(THREADS))


def test_every_deferred_model_first_used_by_many_threads_at_once_validates() -> None:
    # Given a fresh interpreter with the loop's models imported and none of their validators built
    # When THREADS threads validate each of them at once, for the first time
    result = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True, cwd=PROJECT_ROOT, timeout=120
    )
    answer = json.loads(result.stdout)
    # Then every model was tried, and each use validated (or refused the empty input) instead of failing
    assert answer["models"] > 50
    assert answer["failures"] == []
