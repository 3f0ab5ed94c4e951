"""The console in a real headless Chromium, driven by Playwright.

Playwright's Python package drives the Chromium that `make setup-browser` installs from Debian's
packages (`chromium`), through `executable_path`: Playwright's own browser download is never used. A
machine without it fails here with the way to install it, never skips.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator

import pytest
from playwright.sync_api import Browser, Page, expect, sync_playwright

# How long an assertion waits for the page to show what it expects: Playwright's 5 s default is what a loaded
# 2-core machine (4 test workers and a serve per module) passed, with the right text arriving later. A page
# that never shows it still fails, after this long.
expect.set_options(timeout=30_000)

# Flags that keep the browser to the page under test: no GPU, no sandbox (tests run as root in CI), no
# network of its own (component updates, sync, QUIC). Playwright gives each launch a fresh profile folder.
CHROMIUM_FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def chromium_path() -> str:
    """The Chromium to drive: $STEPWISE_CHROMIUM, else `chromium` on PATH."""
    found = os.environ.get("STEPWISE_CHROMIUM") or shutil.which("chromium")
    if not found:
        pytest.fail("no Chromium: `make setup-browser` installs Debian's chromium (as root), or set STEPWISE_CHROMIUM")
    return found


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium per test module. Playwright's sync API keeps an event loop marked as running
    on the thread while it is open, so it is closed before other modules' tests (asyncio, MCP) run there."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=chromium_path(), headless=True, args=CHROMIUM_FLAGS)
        yield launched
        launched.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A page of its own (a new context: no storage shared with another test), failing on any script error."""
    context = browser.new_context(viewport={"width": 1200, "height": 900})
    page = context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page
    context.close()
    assert errors == [], errors
