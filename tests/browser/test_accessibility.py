"""The console for people who read it with a screen reader, a keyboard, a phone or weaker eyes: an axe-core
scan of each view finds no serious or critical violation (contrast, names, labels, landmarks), focus moves
to the new view's heading, and at phone width only the runs table's own box scrolls sideways.

Over `stepwise serve` on loopback and the loopback model of test_console.py (its fixtures, a server of
this module's own); one finished run and one waiting for approval serve every test here.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

import pytest
from playwright.sync_api import Page, ViewportSize, expect

from stepwise.local.server import LocalApi
from tests.browser.axe import assert_accessible
from tests.browser.test_console import (
    api,  # noqa: F401  (the fixture, for the tests below)
    client,
    model,  # noqa: F401  (the fixture, for the tests below)
    sign_in,
    waiting_run,
)
from tests.support.approval_runs import finished, start
from tests.support.openai_server import FakeOpenAIServer, chat_completion

KEY = "reader-a11y"
# An iPhone's CSS width, the narrowest phone the console is laid out for
PHONE = ViewportSize(width=375, height=740)


@dataclass(frozen=True)
class Runs:
    """The runs of KEY the views show."""

    finished: str  # called `echo`, then answered
    waiting: str  # waits for approval of `transfer`, call WAITING_CALL


WAITING_CALL = "call_a11y_wait"


@pytest.fixture(scope="module")
def runs(api: LocalApi, model: FakeOpenAIServer) -> Iterator[Runs]:  # noqa: F811
    """A finished run with a tool call and a run waiting for approval; the waiting one is denied at the end."""
    echo = {"id": "call_a11y_echo", "name": "echo", "arguments": {"text": "hi"}}
    model.enqueue(body=chat_completion(tool_calls=[echo]))
    model.enqueue(body=chat_completion(content="It said hi."))
    with client(api, KEY) as http:
        done = start(http, "say hi")
        finished(http, done)
    paused = waiting_run(api, model, KEY, WAITING_CALL, "Not paid.")
    yield Runs(finished=done, waiting=paused)
    with client(api, KEY) as http:
        http.post(f"/v1/runs/{paused}/approvals/{WAITING_CALL}", json={"approved": False})
        finished(http, paused)


def test_the_runs_list_has_no_serious_or_critical_accessibility_violation(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given the runs list of a key with a finished and a waiting run
    sign_in(page, api, KEY)
    expect(page.locator(f'#runs tr[data-run-id="{runs.waiting}"]')).to_contain_text("WAITING_APPROVAL")
    expect(page.locator(f'#runs tr[data-run-id="{runs.finished}"] .outcome')).to_have_text("answered")
    # Then axe-core finds nothing serious or critical on the page
    assert_accessible(page)


def test_a_finished_run_with_a_tool_call_has_no_serious_or_critical_accessibility_violation(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given the page of a run that called a tool and answered, its steps drawn
    sign_in(page, api, KEY, f"#/runs/{runs.finished}")
    expect(page.locator('#timeline li[data-kind="tool"] .observation')).to_have_text("hi")
    expect(page.locator("#run-answer")).to_contain_text("It said hi.")
    # Then axe-core finds nothing serious or critical, the timeline's model labels included
    assert_accessible(page)


def test_a_run_waiting_for_approval_and_its_form_have_no_serious_or_critical_accessibility_violation(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given the page of a run waiting for approval, with its approval form
    sign_in(page, api, KEY, f"#/runs/{runs.waiting}")
    expect(page.locator(f'#run-approvals [data-call-id="{WAITING_CALL}"] button.approve')).to_be_visible()
    # Then axe-core finds nothing serious or critical, the form's reason field and buttons included
    assert_accessible(page)


def test_the_approvals_view_has_no_serious_or_critical_accessibility_violation(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given the approvals view with the waiting call's card
    sign_in(page, api, KEY, "#/approvals")
    expect(page.locator(f'#approvals [data-call-id="{WAITING_CALL}"] .approval-tool')).to_have_text("transfer")
    # Then axe-core finds nothing serious or critical
    assert_accessible(page)


def test_at_phone_width_the_runs_table_scrolls_in_its_own_box_and_the_page_does_not(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given a phone's width
    page.set_viewport_size(PHONE)
    # When the runs list is shown
    sign_in(page, api, KEY)
    expect(page.locator(f'#runs tr[data-run-id="{runs.finished}"]')).to_be_visible()
    # Then the document is exactly as wide as the screen, while the table's box is wider inside than it shows
    widths = page.evaluate(
        """() => ({
            page: document.documentElement.scrollWidth,
            screen: window.innerWidth,
            box: document.getElementById("runs").parentElement.clientWidth,
            table: document.getElementById("runs").parentElement.scrollWidth,
            overflow: getComputedStyle(document.getElementById("runs").parentElement).overflowX,
        })"""
    )
    assert widths["page"] == widths["screen"] == PHONE["width"], widths
    assert widths["table"] > widths["box"] and widths["overflow"] == "auto", widths


def test_opening_a_run_from_the_list_moves_focus_to_the_runs_heading(
    page: Page,
    api: LocalApi,  # noqa: F811
    runs: Runs,
) -> None:
    # Given the runs list
    sign_in(page, api, KEY)
    # When the person opens a run from it
    page.click(f'#runs a[href="#/runs/{runs.finished}"]')
    # Then focus is on the run view's heading, not on <body>
    heading = page.locator("#view h2")
    expect(heading).to_contain_text(runs.finished)
    expect(heading).to_be_focused()
    assert page.evaluate("document.activeElement === document.querySelector('#view h2')")
