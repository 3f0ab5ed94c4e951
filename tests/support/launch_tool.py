"""A Python tool that needs approval in the approval tests, and the model reply that calls it.

`MODULE` is written beside a test's configuration as `launch_tools.py`; the tool records its one call
in `launched.txt` next to it, so a test can tell whether it ran.
"""

from __future__ import annotations

import json

MODULE = '''
from pathlib import Path

from stepwise.tools import tool


@tool
def launch(target: str) -> str:
    """Launch.

    Args:
        target: Where to.
    """
    Path(__file__).with_name("launched.txt").write_text(target, encoding="utf-8")
    return f"launched at {target}"
'''
LAUNCH = json.dumps({"action": "launch", "action_input": {"target": "moon"}})
