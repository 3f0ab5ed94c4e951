"""The console as a person uses it, in headless Chromium against `stepwise serve` on loopback: the runs
list and its filters, a run's steps (followed live), approving, denying and cancelling, raising the budget
of a run waiting at it, and text from a model or a tool that tries to be markup."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from playwright.sync_api import Page, expect

from stepwise.local.server import LocalApi
from stepwise.models.run import RunMeta
from tests.e2e.conftest import serve
from tests.integration.test_store import make_meta
from tests.support.approval_runs import PAYMENTS, finished, poll, start, waiting
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.run_fleet import FAILED_RUNS, FLEET, NEEDLE_RUN, NEEDLE_WORD, api_requests, store_fleet

# How often the approvals view reads the waiting calls again (console.js, APPROVALS_REFRESH_MS)
REFRESH_MS = 5000
# How long a listing of the 300 runs may take to show, on a loaded machine
LISTED_WITHIN_MS = 30_000
# Would run a script (and set the flag) if any of it were ever parsed as markup.
HOSTILE = (
    '<img src=x onerror="window.__pwned=1"> <script>window.__pwned=2</script> '
    '[read me](javascript:window.__pwned=3) <a href="javascript:window.__pwned=4">link</a>'
)
ECHO = '''
from stepwise.tools import tool


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: What to say.
    """
    return text
'''
GOVERNED_POLICY = """@id("echo-only") permit(principal, action, resource == Stepwise::Tool::"echo");
@id("no-transfers") forbid(principal, action, resource == Stepwise::Tool::"transfer");
"""


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAIServer) -> Iterator[LocalApi]:
    """`stepwise serve` with `transfer` (waits for approval) and `echo` (does not), on the loopback model."""
    config_dir: Path = tmp_path_factory.mktemp("console")
    (config_dir / "payments.py").write_text(PAYMENTS, encoding="utf-8")
    (config_dir / "echoes.py").write_text(ECHO, encoding="utf-8")
    config = {
        "models": {
            "gpt": {
                "provider": "openai",
                "base_url": model.base_url,
                "model": "gpt-fake",
                "api_key": "sk-provider",
                "timeout_seconds": 30,
                "capabilities": {"native_tools": True, "parallel_tools": True},
            }
        },
        "tools": {
            "python": [
                {"module": "payments", "requires_approval": True, "approval_timeout_seconds": 300},
                {"module": "echoes"},
            ]
        },
        "profiles": {
            "assistant": {"model": "gpt", "strategy": "function_calling"},
            # its first model call (19 tokens) passes its budget: the run then waits for a person
            "budgeted": {
                "model": "gpt",
                "strategy": "function_calling",
                "limits": {"max_total_tokens": 10, "on_budget": "ask"},
            },
            # a transfer is refused by its policy; a card number in a tool result is redacted
            "governed": {
                "model": "gpt",
                "strategy": "function_calling",
                "policy": GOVERNED_POLICY,
                "guardrails": {"tool_results": [{"pii": ["card"], "action": "redact"}]},
            },
            # every run is checked as it ends: one check passes, one fails
            "evaluated": {
                "model": "gpt",
                "strategy": "function_calling",
                "online_evals": {"sample": 1.0, "expect": {"answer_contains": ["Done", "Paris"]}},
            },
        },
        "default_profile": "assistant",
    }
    with serve(config, config_dir) as served:
        yield served


def client(api: LocalApi, key: str) -> httpx.Client:
    return httpx.Client(base_url=api.url, headers={"x-api-key": key}, timeout=30)


def sign_in(page: Page, api: LocalApi, key: str, view: str = "#/runs") -> None:
    """Open the console at `view` and type the key, as a person does."""
    page.goto(f"{api.url}/ui/{view}")
    page.fill("#api-key", key)
    page.click("#key-form button")


def answered_run(api: LocalApi, model: FakeOpenAIServer, key: str, answer: str) -> str:
    """A run of `key` that the model answers at once; its id, once it ended."""
    model.enqueue(body=chat_completion(content=answer))
    with client(api, key) as http:
        run_id = start(http, "a question")
        finished(http, run_id)
    return run_id


def waiting_run(
    api: LocalApi, model: FakeOpenAIServer, key: str, call_id: str, answer: str | None, to: str = "bob"
) -> str:
    """A run of `key` waiting for approval of `transfer` of 5 `to` (call `call_id`); the model then answers
    `answer` (None: the run is not expected to ask again, so nothing is left queued for the next test)."""
    call = {"id": call_id, "name": "transfer", "arguments": {"amount": 5, "to": to}}
    model.enqueue(body=chat_completion(tool_calls=[call]))
    if answer is not None:
        model.enqueue(body=chat_completion(content=answer))
    with client(api, key) as http:
        run_id = start(http, "pay bob 5")
        assert waiting(http, run_id)["status"] == "WAITING_APPROVAL"
    return run_id


def read_run(api: LocalApi, key: str, run_id: str) -> dict[str, Any]:
    with client(api, key) as http:
        return finished(http, run_id)


def test_the_runs_list_shows_the_callers_runs_and_filters_them_by_status(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given one succeeded run and one waiting for approval of the key "lister", and a run of another key
    done = answered_run(api, model, "lister", "Done.")
    paused = waiting_run(api, model, "lister", "call_list_1", "Paid.")
    others = answered_run(api, model, "someone-else", "Not yours.")
    # When the person opens the console with their key
    sign_in(page, api, "lister")
    # Then both of their runs are listed with status, outcome, profile and tokens, and the other key's run is not;
    # each run's link shows the first characters of its id, the whole id in its title
    link = page.locator(f'#runs tr[data-run-id="{done}"] .run-link')
    expect(link).to_have_text(done[:8] + "…")
    expect(link).to_have_attribute("title", done)
    expect(page.locator(f'#runs tr[data-run-id="{done}"]')).to_contain_text("SUCCEEDED")
    expect(page.locator(f'#runs tr[data-run-id="{paused}"]')).to_contain_text("WAITING_APPROVAL")
    expect(page.locator(f'#runs tr[data-run-id="{done}"] .outcome')).to_have_text("answered")
    expect(page.locator(f'#runs tr[data-run-id="{paused}"] .outcome')).to_have_text("—")
    expect(page.locator(f'#runs tr[data-run-id="{done}"]')).to_contain_text("assistant")
    expect(page.locator(f'#runs tr[data-run-id="{done}"] td').nth(6)).to_have_text("12 / 7")
    expect(page.locator(f'#runs tr[data-run-id="{others}"]')).to_have_count(0)
    # When they filter on SUCCEEDED
    page.select_option("#status-filter", "SUCCEEDED")
    page.click("#run-filters button")
    # Then only the succeeded run is left
    expect(page.locator(f'#runs tr[data-run-id="{paused}"]')).to_have_count(0)
    expect(page.locator(f'#runs tr[data-run-id="{done}"]')).to_be_visible()
    # And the waiting run is answered, so it leaves nothing queued for the next test
    with client(api, "lister") as http:
        http.post(f"/v1/runs/{paused}/approvals/call_list_1", json={"approved": False})
        finished(http, paused)


@pytest.fixture(scope="module")
def fleet(api: LocalApi) -> list[RunMeta]:
    """300 ended runs of the key "fleet", stored directly (`tests.support.run_fleet`)."""
    return store_fleet(api.environment)


def test_a_list_page_of_300_runs_is_one_api_request_showing_question_usage_and_cost(
    page: Page, api: LocalApi, fleet: list[RunMeta]
) -> None:
    # Given 300 runs of the key "fleet", and a page that counts its API requests
    requests = api_requests(page)
    # When the person opens the runs list
    sign_in(page, api, FLEET)
    # Then the newest run is shown with its question, profile, tokens and cost
    newest = page.locator('#runs tr[data-run-id="fleet-299"]')
    expect(newest.locator("td.question")).to_have_text(
        "What is the weather in Paris today (run 299)?", timeout=LISTED_WITHIN_MS
    )
    expect(newest.locator("td").nth(2)).to_have_text("assistant")
    expect(newest.locator("td").nth(6)).to_have_text("399 / 10")
    expect(newest.locator("td").nth(7)).to_have_text("$0.00120")
    expect(page.locator("#runs tbody tr")).to_have_count(20)
    expect(page.locator("#next-page")).to_have_text("Older runs →")
    # and the page made one API request for it: the listing, no read of any row
    assert len(requests) == 1 and "/v1/runs?" in requests[0], requests


def test_filtering_300_runs_by_failed_shows_the_failed_ones_on_the_first_page(
    page: Page, api: LocalApi, fleet: list[RunMeta]
) -> None:
    # Given 300 runs of which the five oldest failed, and the list open
    sign_in(page, api, FLEET)
    expect(page.locator("#runs tbody tr")).to_have_count(20, timeout=LISTED_WITHIN_MS)
    requests = api_requests(page)
    # When the person filters on FAILED
    page.select_option("#status-filter", "FAILED")
    page.click("#run-filters button")
    # Then the first page holds the five failed runs, and no link to a further page
    rows = page.locator("#runs tbody tr[data-run-id]")
    expect(rows).to_have_count(5, timeout=LISTED_WITHIN_MS)
    assert {rows.nth(index).get_attribute("data-run-id") for index in range(5)} == FAILED_RUNS
    expect(page.locator("#next-page")).to_have_count(0)
    assert len(requests) == 1, requests


def test_searching_a_word_of_a_question_finds_its_run_among_300(
    page: Page, api: LocalApi, fleet: list[RunMeta]
) -> None:
    # Given 300 runs, one of which asked about Zanzibar, and the list open
    sign_in(page, api, FLEET)
    expect(page.locator("#runs tbody tr")).to_have_count(20, timeout=LISTED_WITHIN_MS)
    # When the person searches for the word, in lower case
    page.fill("#search-filter", NEEDLE_WORD.lower())
    page.click("#run-filters button")
    # Then that run alone is listed, its question shown, with no link to a further page
    rows = page.locator("#runs tbody tr[data-run-id]")
    expect(rows).to_have_count(1, timeout=LISTED_WITHIN_MS)
    expect(rows.first).to_have_attribute("data-run-id", NEEDLE_RUN)
    expect(rows.first.locator("td.question")).to_contain_text(NEEDLE_WORD)
    expect(page.locator("#next-page")).to_have_count(0)


def test_a_filter_that_matches_no_run_says_so_once_with_no_link_to_more(
    page: Page, api: LocalApi, fleet: list[RunMeta]
) -> None:
    # When the person lists the fleet's runs created after a time none was
    sign_in(page, api, FLEET, "#/runs?created_after=2099-01-01T00:00:00Z")
    # Then the list says so, once, and offers no further page
    expect(page.locator("#runs-empty")).to_have_text("No runs match these filters.", timeout=LISTED_WITHIN_MS)
    expect(page.locator("#runs tbody tr")).to_have_count(1)
    expect(page.locator("#next-page")).to_have_count(0)


def test_filters_that_are_not_valid_are_refused_each_named(api: LocalApi) -> None:
    # When the runs are listed with six filters that are not valid
    query = "created_after=yesterday&created_before=2026-11-22T10:00:00&metadata=no-pair&stop_reason=bored&profile="
    with client(api, FLEET) as http:
        answer = http.get(f"/v1/runs?{query}&q={'x' * 201}")
    # Then the listing is refused with 422 naming each parameter
    assert answer.status_code == 422
    assert {error["field"] for error in answer.json()["error"]["details"]["errors"]} == {
        f"{name} (query parameter)"
        for name in ("created_after", "created_before", "metadata", "stop_reason", "profile", "q")
    }


def test_opening_a_run_shows_its_steps_to_scale_and_its_answer(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run whose model called `echo` once and then answered
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_echo_1", "name": "echo", "arguments": {"text": "hi"}}]))
    model.enqueue(body=chat_completion(content="It said hi."))
    with client(api, "reader") as http:
        run_id = start(http, "say hi")
        finished(http, run_id)
    sign_in(page, api, "reader")
    # When the person clicks it in the list
    page.click(f'#runs a[href="#/runs/{run_id}"]')
    # Then its steps are a timeline: model call, decision, tool call (with arguments and observation), ...
    timeline = page.locator("#timeline li")
    expect(timeline).to_have_count(5)
    kinds = [timeline.nth(index).get_attribute("data-kind") for index in range(5)]
    assert kinds == ["llm", "parse", "tool", "llm", "parse"]
    expect(timeline.nth(2)).to_contain_text("echo")
    expect(timeline.nth(2).locator(".observation")).to_have_text("hi")
    # with the model calls' tokens drawn as bars, and the answer, stop reason and outcome shown
    expect(timeline.nth(0).locator(".bar-tokens")).to_have_count(1)
    expect(timeline.nth(0)).to_contain_text("12 in / 7 out tokens")
    expect(page.locator("#run-answer")).to_contain_text("It said hi.")
    expect(page.locator("#run-summary")).to_contain_text("final_answer")
    expect(page.locator("#run-summary .outcome")).to_have_text("answered")


def contrast(foreground: str, background: str) -> float:
    """WCAG's contrast ratio of two `rgb(r, g, b)` colours."""

    def luminance(colour: str) -> float:
        channels = [int(value) / 255 for value in re.findall(r"\d+", colour)[:3]]
        linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
        return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]

    light, dark = sorted([luminance(foreground), luminance(background)], reverse=True)
    return (light + 0.05) / (dark + 0.05)


def test_a_runs_policy_and_guardrail_steps_are_shown_with_their_own_labels(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run whose model calls `echo` with a card number and `transfer`, which its policy refuses
    calls = [
        {"id": "call_gov_1", "name": "echo", "arguments": {"text": "card 4111 1111 1111 1111"}},
        {"id": "call_gov_2", "name": "transfer", "arguments": {"amount": 500, "to": "acct-1"}},
    ]
    model.enqueue(body=chat_completion(tool_calls=calls))
    model.enqueue(body=chat_completion(content="Echoed, not paid."))
    with client(api, "governor") as http:
        accepted = http.post("/v1/runs", json={"input": "echo and pay", "profile": "governed"})
        run_id = accepted.json()["run_id"]
        assert finished(http, run_id)["status"] == "SUCCEEDED"
    # When the person opens the run
    sign_in(page, api, "governor", f"#/runs/{run_id}")
    # Then the policy step says the transfer was refused, by which policy, and the call
    policy = page.locator('#timeline li[data-kind="policy"]')
    expect(policy.locator(".step-kind")).to_have_text("policy")
    expect(policy.locator(".step-title")).to_have_text("refused: transfer")
    expect(policy.locator(".policy-ids")).to_have_text("by policy no-transfers")
    expect(policy.locator(".call")).to_have_text('transfer {"amount":500,"to":"acct-1"}')
    # And the guardrail step names the point, the rule and what it did, never the number
    guardrail = page.locator('#timeline li[data-kind="guardrail"]')
    expect(guardrail.locator(".step-kind")).to_have_text("guardrail")
    expect(guardrail.locator(".step-title")).to_have_text("a tool result changed")
    expect(guardrail.locator(".guardrail-action")).to_have_text("pii:card redacted (card=1)")
    # And both labels read at a contrast of at least 4.5:1 against the page behind them
    background = page.evaluate("getComputedStyle(document.documentElement).backgroundColor")
    for label in (policy.locator(".step-kind"), guardrail.locator(".step-title")):
        assert contrast(label.evaluate("node => getComputedStyle(node).color"), background) >= 4.5


def test_a_waiting_run_is_followed_live_and_approved_from_its_page(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run waiting for approval of a transfer, open in the console
    run_id = waiting_run(api, model, "approver", "call_live_1", "Sent to bob.")
    sign_in(page, api, "approver", f"#/runs/{run_id}")
    expect(page.locator("#run-summary")).to_contain_text("WAITING_APPROVAL")
    approval = page.locator('#run-approvals [data-call-id="call_live_1"]')
    expect(approval.locator(".approval-arguments")).to_have_text('{"amount": 5, "to": "bob"}')
    # When the person approves it with a reason, without reloading the page
    approval.locator('input[name="reason"]').fill("bob is known")
    approval.locator("button.approve").click()
    # Then the tool's step and the answer arrive on the page as the run goes on, and the run succeeded
    expect(page.locator('#timeline li[data-kind="tool"] .observation')).to_have_text("sent 5 to bob")
    expect(page.locator("#run-answer")).to_contain_text("Sent to bob.")
    expect(page.locator("#run-summary")).to_contain_text("SUCCEEDED")
    assert read_run(api, "approver", run_id)["status"] == "SUCCEEDED"


def test_a_call_is_denied_with_a_reason_from_the_approvals_view(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run of the key "denier" waiting for approval
    run_id = waiting_run(api, model, "denier", "call_deny_1", "Not sent.")
    # When the person opens the approvals view, types a reason and denies the call
    sign_in(page, api, "denier", "#/approvals")
    card = page.locator('#approvals [data-call-id="call_deny_1"]')
    expect(card.locator(".approval-tool")).to_have_text("transfer")
    card.locator('input[name="reason"]').fill("bob is not a customer")
    card.locator("button.deny").click()
    # Then the view says so, the run ended without the transfer, and the model read the reason
    expect(page.locator("#approvals .answered")).to_contain_text("Denied: transfer")
    run = read_run(api, "denier", run_id)
    assert (run["status"], run["answer"]) == ("SUCCEEDED", "Not sent.")
    observations = [m["content"] for m in model.requests[-1].body["messages"] if m["role"] == "tool"]
    assert any("denied" in text and "bob is not a customer" in text for text in observations)


def test_a_run_waiting_at_its_budget_is_given_more_tokens_from_its_page(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run that called `echo` and then waits at its 10-token budget, open in the console
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_echo_b", "name": "echo", "arguments": {"text": "hi"}}]))
    model.enqueue(body=chat_completion(content="Echoed."))
    with client(api, "budgeter") as http:
        accepted = http.post("/v1/runs", json={"input": "echo hi", "profile": "budgeted"})
        run_id = accepted.json()["run_id"]
        assert (
            poll(http, run_id, lambda run: run["status"] != "RUNNING" and run["status"] != "QUEUED")["status"]
            == "WAITING_BUDGET"
        )
    sign_in(page, api, "budgeter", f"#/runs/{run_id}")
    form = page.locator("#run-budget .budget-wait")
    expect(form).to_contain_text("Token budget reached")
    # When the person adds 1000 tokens
    form.locator('input[name="amount"]').fill("1000")
    form.locator("button.add-budget").click()
    # Then the run goes on to the model's answer on the page, and the API records the raise
    expect(page.locator("#run-answer")).to_contain_text("Echoed.")
    run = read_run(api, "budgeter", run_id)
    assert (run["status"], run["stop_reason"], run["budget_wait"]["added_tokens"]) == (
        "SUCCEEDED",
        "final_answer",
        1000,
    )


def test_a_run_is_cancelled_from_its_page(page: Page, api: LocalApi, model: FakeOpenAIServer) -> None:
    # Given a run waiting for approval, open in the console
    run_id = waiting_run(api, model, "canceller", "call_cancel_1", None)
    sign_in(page, api, "canceller", f"#/runs/{run_id}")
    # When the person cancels it, and confirms at the second click
    page.click("#cancel-run")
    expect(page.locator("#cancel-run")).to_have_text("Really cancel?")
    with client(api, "canceller") as http:
        assert http.get(f"/v1/runs/{run_id}").json()["status"] == "WAITING_APPROVAL"
    page.click("#cancel-run")
    # Then the page shows it CANCELLED, by its owner, and the API agrees
    expect(page.locator("#run-summary")).to_contain_text("CANCELLED")
    expect(page.locator("#run-summary")).to_contain_text("canceller")
    assert read_run(api, "canceller", run_id)["stop_reason"] == "cancelled"


def test_a_runs_online_eval_is_shown_in_the_api_and_on_its_page(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run of a profile whose online eval expects "Done" and "Paris" in the answer "Done."
    model.enqueue(body=chat_completion(content="Done."))
    with client(api, "evaluator") as http:
        response = http.post("/v1/runs", json={"input": "finish", "profile": "evaluated"})
        run_id = response.json()["run_id"]
        # When it has ended and been evaluated
        run = poll(http, run_id, lambda body: body.get("online_eval") is not None)
    # Then the API shows the eval failed on "Paris" while the run SUCCEEDED
    assert (run["status"], run["online_eval"]["verdict"]) == ("SUCCEEDED", "failed")
    assert [check["passed"] for check in run["online_eval"]["checks"]] == [True, False]
    # and so does the run's page, with the failed check's reason
    sign_in(page, api, "evaluator", f"#/runs/{run_id}")
    shown = page.locator("#run-online-eval")
    expect(shown.locator(".eval-verdict")).to_have_text("failed")
    expect(shown.locator("li.eval-passed")).to_contain_text('answer_contains "Done"')
    expect(shown.locator("li.eval-failed")).to_contain_text('"Done." does not contain "Paris"')


def test_a_run_is_paused_resumed_and_told_something_from_its_page(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run waiting for approval, open in the console
    run_id = waiting_run(api, model, "steerer", "call_steer_1", None)
    sign_in(page, api, "steerer", f"#/runs/{run_id}")
    # When the person pauses it
    page.click("#pause-run")
    # Then the pause is asked (it takes effect at the run's next iteration boundary) and can be taken back
    expect(page.locator("#resume-run")).to_have_text("Resume (pause asked)")
    with client(api, "steerer") as http:
        assert http.get(f"/v1/runs/{run_id}").json()["pause"]["requested_by"] == "steerer"
    page.click("#resume-run")
    expect(page.locator("#pause-run")).to_have_text("Pause")
    # When the person tells the run something
    page.fill("#tell-run", "Use the EU account instead.")
    page.click("#tell-send")
    # Then the page says it was sent, and the box is empty for the next one
    expect(page.locator("#notice")).to_contain_text("next model call will see it")
    expect(page.locator("#tell-run")).to_have_value("")
    with client(api, "steerer") as http:
        assert http.post(f"/v1/runs/{run_id}/cancel").status_code == 200


def test_text_a_model_or_tool_wrote_as_markup_is_shown_as_text_and_runs_nothing(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given a run whose model thinks, calls `echo` and answers in markup, and whose tool answers markup
    thought = {"id": "call_xss_1", "name": "echo", "arguments": {"text": HOSTILE}}
    model.enqueue(body=chat_completion(content=HOSTILE, tool_calls=[thought]))
    model.enqueue(body=chat_completion(content=HOSTILE))
    with client(api, "target") as http:
        run_id = start(http, "say it")
        finished(http, run_id)
    violations: list[str] = []
    page.on("dialog", lambda dialog: violations.append(f"dialog {dialog.message}"))
    # When the person opens the run
    sign_in(page, api, "target", f"#/runs/{run_id}")
    expect(page.locator("#run-answer .answer")).to_have_text(HOSTILE)
    expect(page.locator('#timeline li[data-kind="tool"] .observation')).to_have_text(HOSTILE)
    # Then the markup is text: no image, script or javascript: link was made, nothing ran, no dialog opened
    view = page.locator("#view")
    assert view.locator("img").count() == 0
    assert view.locator("script").count() == 0
    hrefs = [view.locator("a").nth(index).get_attribute("href") or "" for index in range(view.locator("a").count())]
    assert all(re.fullmatch(r"#/runs/[A-Za-z0-9_-]+", href) for href in hrefs), hrefs
    assert page.evaluate("window.__pwned === undefined")
    assert violations == []


def test_the_page_is_served_with_a_strict_content_security_policy(api: LocalApi) -> None:
    # When the console's page is fetched
    response = httpx.get(f"{api.url}/ui/")
    # Then scripts, styles and fetches are allowed from the page's own origin only, nothing inline
    policy = response.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy and "unsafe" not in policy
    assert response.headers["x-content-type-options"] == "nosniff"
    assert '<script src="console.js" defer></script>' in response.text


def test_the_approvals_view_finds_a_waiting_call_among_150_runs_refreshes_and_shows_arguments_escaped(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given 150 runs of the key "crowd" that wait for nothing (stored directly), and one of its runs waiting
    # for a transfer to an account whose digits a bidi override shows reversed
    store = api.environment.runtime.store
    for n in range(150):
        store.create_run(make_meta(f"crowd-{n:03d}", owner="crowd"), [])
    first = waiting_run(api, model, "crowd", "call_crowd_1", None, to="acct-1234\u202e0009")
    # When the person opens the approvals view (its timers on a clock the test moves on)
    page.clock.install()
    sign_in(page, api, "crowd", "#/approvals")
    # Then the call is there, its arguments with the override shown as an escape, and a countdown to its wait's end
    card = page.locator('#approvals [data-call-id="call_crowd_1"]')
    expect(card.locator(".approval-arguments")).to_have_text('{"amount": 5, "to": "acct-1234\\u202e0009"}')
    expect(card.locator(".countdown")).to_contain_text(re.compile(r"times out in \d+ min \d+ s"))
    expect(page.locator(f'#approvals .card[data-run-id="{first}"] .run-link')).to_have_text(first)
    # When another call of the key starts waiting while the view is open
    second = waiting_run(api, model, "crowd", "call_crowd_2", None)
    page.clock.run_for(REFRESH_MS)
    # Then the view shows it too, without a reload (it reads the waiting calls again every few seconds)
    expect(page.locator('#approvals [data-call-id="call_crowd_2"]')).to_be_visible()
    expect(page.locator("#approvals .approval")).to_have_count(2)
    # And both are denied, one at a time, so nothing is left queued for the next test
    for run_id, call_id in ((first, "call_crowd_1"), (second, "call_crowd_2")):
        model.enqueue(body=chat_completion(content="Not sent."))
        with client(api, "crowd") as http:
            http.post(f"/v1/runs/{run_id}/approvals/{call_id}", json={"approved": False})
            finished(http, run_id)
