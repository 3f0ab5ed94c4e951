"""What the conformance tests read from the agent state machine's definition in template.yaml.

Read on first use, not at import: collecting the suite (on every xdist worker, even with its tests
deselected) renders nothing.
"""

from __future__ import annotations

import functools

from stepwise.local.template import SamTemplate
from tests.conftest import PROJECT_ROOT


@functools.cache
def map_item_states() -> frozenset[str]:
    """The states of the definition's Map items (ToolInvoke's parallel calls)."""
    template = SamTemplate.load(PROJECT_ROOT / "template.yaml")
    definition = template.render_definition(template.state_machine(), lambda _: "0")
    names: set[str] = set()
    pending = [definition["States"]]
    while pending:
        for state in pending.pop().values():
            for key in ("ItemProcessor", "Iterator"):
                if key in state:
                    names.update(state[key]["States"])
                    pending.append(state[key]["States"])
    return frozenset(names)
