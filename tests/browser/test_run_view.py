"""All of a run, in headless Chromium against `stepwise serve` on loopback: a 1,000,000-character tool result
(a secret in it redacted) said by its size and shown whole on demand (the step endpoint), and a run followed
through a broken event stream, which the page says and recovers from."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from playwright.sync_api import Locator, Page, Request, Route, expect

from stepwise.local.server import LocalApi
from tests.browser.test_console import client, sign_in
from tests.e2e.conftest import serve
from tests.support.approval_runs import finished, start
from tests.support.openai_server import FakeOpenAIServer, chat_completion

MILLION = 1_000_000
# the most a profile lets a tool's result into the conversation (config/model.py's bound)
CAP = 200_000
OWNER = "owner-1mb"
WIDE_OWNER = "owner-wide"
RECEIVED: dict[str, str] = {}
# the model's api key, a secret the tool's answer holds past what the model receives
SECRET = "sk-provider"
MARK = "***"
# what the tool answers once the secret in it is redacted: 1,000,000 characters
WHOLE = "x" * (MILLION // 2) + MARK + "x" * (MILLION - MILLION // 2 - len(MARK) - 4) + "tail"
WHOLE_SHOWN_WITHIN_MS = 30_000
# a profile that keeps at most STORED_LIMIT characters of a tool's result
KEPT_SHORT = "kept-short"
STORED_LIMIT = 300_000
TOOLS = '''
from stepwise.tools import tool


@tool
def flood(size: int) -> str:
    """Answer `size` characters.

    Args:
        size: How many.
    """
    half = size // 2
    return "x" * half + "SECRET" + "x" * (size - half - 3 - 4) + "tail"


@tool
def flood_wide(size: int) -> str:
    """Answer `size` characters of three UTF-8 bytes each.

    Args:
        size: How many.
    """
    return "\u6f22" * size


@tool
def echo(text: str) -> str:
    """Say it back.

    Args:
        text: What to say.
    """
    return text
'''.replace('"SECRET"', repr(SECRET))


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAIServer) -> Iterator[LocalApi]:
    """`stepwise serve` with `flood` and `echo`, whose observations may be as long as a profile allows."""
    config_dir: Path = tmp_path_factory.mktemp("run-view")
    (config_dir / "floods.py").write_text(TOOLS, encoding="utf-8")
    config = {
        "models": {
            "gpt": {
                "provider": "openai",
                "base_url": model.base_url,
                "model": "gpt-fake",
                "api_key": SECRET,
                "timeout_seconds": 30,
                "capabilities": {"native_tools": True, "parallel_tools": True},
            }
        },
        "tools": {"python": [{"module": "floods"}]},
        "profiles": {
            "assistant": {"model": "gpt", "strategy": "function_calling", "limits": {"max_observation_chars": CAP}},
            KEPT_SHORT: {
                "model": "gpt",
                "strategy": "function_calling",
                "limits": {"max_observation_chars": CAP, "max_stored_output_chars": STORED_LIMIT},
            },
        },
        "default_profile": "assistant",
    }
    with serve(config, config_dir) as served:
        yield served


@pytest.fixture(scope="module")
def flooded(api: LocalApi, model: FakeOpenAIServer) -> str:
    """An ended run of OWNER whose model called `flood` (1,000,000 characters) and `echo` at once, then answered;
    what the model received is kept before another run's requests follow."""
    run_id = parallel_run(api, model, OWNER)
    RECEIVED["call_flood"] = received_by_the_model(model, "call_flood")
    return run_id


def parallel_run(api: LocalApi, model: FakeOpenAIServer, key: str) -> str:
    """An ended run of `key` whose model called `flood` (1,000,000 characters) and `echo` at once, then answered."""
    calls = [
        {"id": "call_flood", "name": "flood", "arguments": {"size": MILLION}},
        {"id": "call_echo", "name": "echo", "arguments": {"text": "hi"}},
    ]
    model.enqueue(body=chat_completion(tool_calls=calls))
    model.enqueue(body=chat_completion(content="Done."))
    with client(api, key) as http:
        run_id = start(http, "flood me")
        assert finished(http, run_id)["status"] == "SUCCEEDED"
    return run_id


def received_by_the_model(model: FakeOpenAIServer, call_id: str) -> str:
    """The content of the tool message answering `call_id` in the last request the model received."""
    messages = model.requests[-1].body["messages"]
    return str(next(message["content"] for message in messages if message.get("tool_call_id") == call_id))


def test_a_1mb_tool_result_is_read_whole_from_the_step_endpoint_and_only_by_its_owner(
    api: LocalApi, flooded: str
) -> None:
    # Given a run whose tool answered 1,000,000 characters (a secret among them) under a profile capping
    # observations at 200,000
    run_id = flooded
    with client(api, OWNER) as http:
        # When its trace is read, then the step keeps a preview ending in "…" and the sizes
        run = http.get(f"/v1/runs/{run_id}?trace=true").json()
        step = next(s for s in run["trace"] if s.get("tool") == "flood")
        # (and every step says when it began, within the run's lifetime)
        began, ended = (datetime.fromisoformat(run[name]).timestamp() for name in ("created_at", "updated_at"))
        assert all(began <= s["started_at"] <= ended for s in run["trace"]), run["trace"]
        assert (step["observation"][-1], len(step["observation"]), step["observation_chars"]) == ("…", 501, CAP)
        # (the marker "…[truncated N chars]" that ends it has one 3-byte character)
        assert (step["observation_bytes"], step["output_chars"], step["stored_output_chars"]) == (
            CAP + 2,
            MILLION,
            MILLION,
        )
        # When the step endpoint is read
        whole = http.get(f"/v1/runs/{run_id}/steps/1/call_flood")
        # Then it is the tool's whole result, all 1,000,000 characters, the secret redacted, saying so
        assert whole.status_code == 200, whole.text
        assert SECRET not in whole.text
        body = whole.json()
        assert (body["observation"] == WHOLE, body["source"], body["whole"]) == (True, "stored_output", True)
        assert (body["observation_chars"], body["output_chars"], body["tool"]) == (MILLION, MILLION, "flood")
        # And beside it, the size of what the model received, which is its start
        assert body["received_chars"] == len(RECEIVED["call_flood"]) == CAP
        assert WHOLE.startswith(RECEIVED["call_flood"].rsplit("…", 1)[0])
        # And a call the run did not make is 404, and a malformed iteration is 422 naming it
        assert http.get(f"/v1/runs/{run_id}/steps/1/call_other").status_code == 404
        refused = http.get(f"/v1/runs/{run_id}/steps/first/call_flood")
        assert refused.status_code == 422
        assert "iteration" in json.dumps(refused.json()["error"])
    # And another key gets 404 for the same step
    with client(api, "someone-else") as http:
        assert http.get(f"/v1/runs/{run_id}/steps/1/call_flood").status_code == 404


def test_a_long_observation_says_its_size_and_is_shown_whole_on_demand_beside_its_parallel_call(
    page: Page, api: LocalApi, flooded: str
) -> None:
    # Given a run whose two parallel calls answered 1,000,000 characters and "hi"
    # When the person opens it
    sign_in(page, api, OWNER, f"#/runs/{flooded}")
    tools = page.locator('#timeline li[data-kind="tool"]')
    expect(tools).to_have_count(2)
    # Then the two calls are lanes of one iteration, each placed in time from the run's start
    expect(tools.nth(0)).to_contain_text("lane 1 of 2")
    expect(tools.nth(1)).to_contain_text("lane 2 of 2")
    expect(page.locator("#timeline .step-when").first).to_contain_text("+")
    # And the long observation is collapsed, saying the size of the tool's whole result and what the model got
    flood = tools.nth(0)
    expect(flood.locator(".show-all")).to_have_text("1,000,000 characters — show all")
    expect(flood.locator(".output-size")).to_contain_text("the model received the first 200,000 characters")
    # When they ask for all of it, then the whole result is shown, as text, in a box that scrolls
    flood.locator(".show-all").click()
    # (its 1 MB answer is read and laid out: allowed what a machine busy with other jobs takes, not 5 s)
    expect(flood.locator(".shown-whole")).to_be_visible(timeout=WHOLE_SHOWN_WITHIN_MS)
    shown = flood.locator("pre.observation").evaluate("node => node.textContent")
    assert shown == WHOLE
    expect(page.locator("#run-summary .iterations")).to_have_text("2")


def all_of_one_tool_result(
    page: Page, api: LocalApi, model: FakeOpenAIServer, owner: str, tool: str, profile: str | None = None
) -> Locator:
    """The tool step of an ended run of `owner` whose model called `tool` for 1,000,000 characters, once the
    console showed it and the person asked for all of its result."""
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_all", "name": tool, "arguments": {"size": MILLION}}]))
    model.enqueue(body=chat_completion(content="Done."))
    with client(api, owner) as http:
        posted = http.post("/v1/runs", json={"input": f"call {tool}"} | ({"profile": profile} if profile else {}))
        assert posted.status_code == 202, posted.text
        run_id = posted.json()["run_id"]
        assert finished(http, run_id)["status"] == "SUCCEEDED"
    sign_in(page, api, owner, f"#/runs/{run_id}")
    step = page.locator('#timeline li[data-kind="tool"]')
    expect(step).to_have_count(1)
    step.locator(".show-all").click()
    return step


def test_a_result_one_answer_cannot_carry_says_how_much_of_it_is_shown(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given an ended run whose tool answered 1,000,000 characters of "漢", kept whole (3 MB), which the step
    # endpoint's answer cannot carry (7 MB escaped, over its 5 MB)
    # When the person opens it and asks for all of the result
    wide = all_of_one_tool_result(page, api, model, WIDE_OWNER, "flood_wide")
    # Then the page shows the answer's start and says it is not the whole result, instead of "shown whole"
    said = wide.locator(".shown-whole")
    expect(said).to_contain_text("of 1,000,000 characters: one answer cannot carry more", timeout=WHOLE_SHOWN_WITHIN_MS)
    shown = wide.locator("pre.observation").evaluate("node => node.textContent")
    assert shown.startswith("\u6f22" * 1000)
    assert "truncated" in shown[-40:]
    # And the count it gives is of the result's characters shown, not of the truncation marker after them
    carried = shown.count("\u6f22")
    expect(said).to_have_text(f"the first {carried:,} characters of 1,000,000 characters: one answer cannot carry more")


def test_a_result_past_the_profiles_stored_limit_says_the_rest_was_not_kept_and_why(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given an ended run, under a profile keeping 300,000 characters of a result, whose tool answered 1,000,000
    # When the person opens it and asks for all of the result
    cut = all_of_one_tool_result(page, api, model, "owner-cut", "flood", profile=KEPT_SHORT)
    # Then the page shows what was kept and names the profile's limit as the reason the rest is missing (not
    # "one answer cannot carry more", which is another cause with another remedy)
    said = cut.locator(".shown-whole")
    expect(said).to_contain_text(
        "the rest was not kept (the profile's max_stored_output_chars)", timeout=WHOLE_SHOWN_WITHIN_MS
    )
    shown = cut.locator("pre.observation").evaluate("node => node.textContent")
    carried = len(shown.rsplit("\u2026", 1)[0])
    assert len(shown) == STORED_LIMIT
    expect(said).to_have_text(
        f"the first {carried:,} characters of 1,000,000 characters: "
        "the rest was not kept (the profile's max_stored_output_chars)"
    )


def test_a_broken_event_stream_shows_disconnected_and_the_page_catches_up_without_duplicates(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given an ended run of five steps, whose event stream the first time breaks after two steps and then
    # fails until the test lets it through
    model.enqueue(body=chat_completion(tool_calls=[{"id": "call_e", "name": "echo", "arguments": {"text": "yo"}}]))
    model.enqueue(body=chat_completion(content="It said yo."))
    with client(api, "streamer") as http:
        run_id = start(http, "say yo")
        finished(http, run_id)
    opened: list[Request] = []
    state: dict[str, Any] = {"through": False, "ids": []}

    def stream(route: Route, request: Request) -> None:
        opened.append(request)
        if len(opened) == 1:
            whole = route.fetch()
            frames = whole.text().split("\n\n")
            state["ids"] = [line[4:] for frame in frames for line in frame.split("\n") if line.startswith("id: ")]
            route.fulfill(response=whole, body="\n\n".join(frames[:2]) + "\n\n")
        elif state["through"]:
            route.continue_()
        else:
            route.abort()

    page.route("**/v1/runs/*/events", stream)
    # When the person opens the run
    sign_in(page, api, "streamer", f"#/runs/{run_id}")
    # Then the page says it is disconnected (never "live") while the stream is down
    expect(page.locator("h2 .live")).to_contain_text("disconnected — retrying in")
    expect(page.locator("#timeline li")).to_have_count(2)
    state["through"] = True
    # And once the stream is back, the page catches up: every step once, and no longer disconnected
    expect(page.locator("#timeline li")).to_have_count(5)
    expect(page.locator("h2 .live")).to_have_text("")
    expect(page.locator("#run-answer")).to_contain_text("It said yo.")
    # And it reconnected after the last step it had
    assert opened[-1].headers.get("last-event-id") == state["ids"][1]
