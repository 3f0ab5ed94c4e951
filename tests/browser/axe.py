"""An axe-core scan of the page a browser test has open: `assert_accessible(page)` after the view is drawn.

axe-core (node_modules/axe-core, pinned in package-lock.json) is evaluated in the page through Playwright,
that is through the DevTools protocol, which the page's Content-Security-Policy does not govern: the console
is served and runs with its policy intact (no `bypass_csp`, no inline script), so the scan sees the page as
a person's browser does, and the policy still refuses anything the console itself might try.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from playwright.sync_api import Page

from tests.conftest import PROJECT_ROOT

AXE_SCRIPT = PROJECT_ROOT / "node_modules" / "axe-core" / "axe.min.js"
# The impacts a view must not have; axe's "moderate" and "minor" findings are advice.
BLOCKING_IMPACTS = ("serious", "critical")
# Every rule axe runs by default (WCAG 2.0-2.2 A and AA, and its best practices), reporting violations only.
RUN_OPTIONS = {"resultTypes": ["violations"]}


@cache
def axe_source() -> str:
    """axe-core's script, read once; `make setup` (npm ci) installs it."""
    if not AXE_SCRIPT.is_file():
        raise AssertionError(f"no {AXE_SCRIPT}: `make setup` installs the npm tools (npm ci)")
    return AXE_SCRIPT.read_text(encoding="utf-8")


def serious_violations(page: Page) -> list[dict[str, Any]]:
    """axe's violations of serious or critical impact on the whole document `page` shows, each as its rule,
    impact, help text and the selectors of the elements at fault."""
    if not page.evaluate("typeof window.axe === 'object'"):
        page.evaluate(axe_source())
    results = page.evaluate("options => window.axe.run(document, options)", RUN_OPTIONS)
    return [
        {
            "rule": violation["id"],
            "impact": violation["impact"],
            "help": violation["help"],
            "elements": [node["target"] for node in violation["nodes"]],
        }
        for violation in results["violations"]
        if violation["impact"] in BLOCKING_IMPACTS
    ]


def assert_accessible(page: Page) -> None:
    """Fail with axe's findings when the page has any violation of serious or critical impact."""
    violations = serious_violations(page)
    assert violations == [], violations
