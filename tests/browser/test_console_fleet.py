"""The console's fleet views in headless Chromium against `stepwise serve` on loopback: the overview of a
key's runs by profile, model and day; replaying a run from its page and comparing it with the original side
by side; a run exported as JSON and the runs list as CSV (Playwright's download API); a search that spends
its read budget before any run matched, and the link to search the older runs. Runs are seeded in the store
directly where no model needs to answer."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta, timezone
from pathlib import Path
from urllib.parse import parse_qs, quote, urlsplit

import httpx
import pytest
from playwright.sync_api import Page, expect

from stepwise.local.server import LocalApi
from stepwise.models.messages import ChatMessage
from stepwise.models.run import RunMeta, RunStatus, RunUsage
from stepwise.store.run_listing import MAX_META_READS
from tests.browser.axe import assert_accessible
from tests.e2e.conftest import serve
from tests.support.approval_runs import poll
from tests.support.openai_server import FakeOpenAIServer, chat_completion
from tests.support.run_fleet import store_runs

# A search by words reads each candidate run's META, at most MAX_META_READS of them a request
# (`stepwise.store.run_listing`; no configuration of `stepwise serve` changes it): that many runs without the
# word, newest first, spend one request's budget, the least history that stops a search before it matched.
SEARCHER = "searcher"
NEEDLE = "quokka"
# Whole seconds, a second apart: the time where the search stops can be typed without milliseconds.
NEWEST = datetime(2026, 11, 20, 12, 0, tzinfo=UTC)
# When the oldest run the budget reaches was created
SEARCH_STOP = NEWEST - timedelta(seconds=MAX_META_READS - 1)
NEEDLE_RUN = "haystack-needle"


@pytest.fixture(scope="module")
def model() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def api(tmp_path_factory: pytest.TempPathFactory, model: FakeOpenAIServer) -> Iterator[LocalApi]:
    """`stepwise serve` with two profiles on the loopback model, so a replay has another to run under."""
    gpt = {
        "provider": "openai",
        "base_url": model.base_url,
        "model": "gpt-fake",
        "api_key": "sk-provider",
        "timeout_seconds": 30,
        "capabilities": {"native_tools": True, "parallel_tools": True},
    }
    config = {
        "models": {"gpt": gpt},
        "profiles": {
            "assistant": {"model": "gpt", "strategy": "function_calling"},
            "terse": {"model": "gpt", "strategy": "function_calling"},
        },
        "default_profile": "assistant",
    }
    with serve(config, tmp_path_factory.mktemp("fleet")) as served:
        yield served


def sign_in(page: Page, api: LocalApi, key: str, view: str) -> None:
    page.goto(f"{api.url}/ui/{view}")
    page.fill("#api-key", key)
    page.click("#key-form button")


def iso(moment: datetime) -> str:
    """A time as the store keeps a run's creation time (UTC, milliseconds, `Z`)."""
    return moment.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seed(
    api: LocalApi,
    owner: str,
    run_id: str,
    created: datetime,
    *,
    took_ms: int = 1000,
    status: RunStatus = "SUCCEEDED",
    profile: str = "assistant",
    tokens: tuple[int, int] = (10, 5),
    cost: float = 0.01,
    question: str | None = None,
) -> None:
    """An ended run of `owner` stored as the loop leaves it, created at `created` and ended `took_ms` later;
    with `question`, its opening message (what a replay starts from)."""
    meta = RunMeta(
        run_id=run_id,
        owner=owner,
        profile=profile,
        status=status,
        stop_reason="final_answer" if status == "SUCCEEDED" else "error",
        answer="Seeded." if status == "SUCCEEDED" else None,
        deadline=created.timestamp() + 600,
        created_at=iso(created),
        updated_at=iso(created + timedelta(milliseconds=took_ms)),
        expires_at=2_000_000_000,
        usage=RunUsage(input_tokens=tokens[0], output_tokens=tokens[1], cost_usd=cost),
    )
    messages = [ChatMessage(role="user", content=question)] if question else []
    assert api.environment.runtime.store.create_run(meta, messages)


def test_the_overview_counts_runs_failures_tokens_cost_and_latency_by_profile_and_day(
    page: Page, api: LocalApi
) -> None:
    # Given four runs of `assistant` today (1 to 4 s long, one FAILED) and one of `terse` yesterday (UTC)
    today = datetime.now(UTC).replace(hour=0, minute=0, second=1, microsecond=0)
    for n, took in enumerate((1000, 2000, 3000, 4000)):
        seed(api, "overseer", f"ov-a{n}", today, took_ms=took, status="FAILED" if n == 3 else "SUCCEEDED")
    seed(api, "overseer", "ov-t0", today - timedelta(days=1), profile="terse", tokens=(100, 50), cost=0.5)
    # When the person opens the overview
    sign_in(page, api, "overseer", "#/overview")
    # Then the totals, each profile and each day show their runs, failures, tokens and cost
    totals = page.locator('#overview-totals tr[data-key="all"] td')
    expect(totals).to_have_text(["5", "4", "1", "0", "0", "140 / 70", "$0.540", "2000 ms", "3800 ms"])
    assistant = page.locator('#overview-by-profile tr[data-key="assistant"] td')
    # with p50 and p95 of 1, 2, 3 and 4 s interpolated between ranks: 2.5 s and 1 + 0.95 * 3 s
    expect(assistant).to_have_text(["4", "3", "1", "0", "0", "40 / 20", "$0.040", "2500 ms", "3850 ms"])
    expect(page.locator('#overview-by-model tr[data-key="gpt"] td').first).to_have_text("5")
    days = page.locator("#overview-by-day tbody tr")
    expect(days).to_have_count(7)
    expect(days.nth(6).locator("th")).to_have_text(today.date().isoformat())
    expect(days.nth(6).locator("td").nth(0)).to_have_text("4")
    expect(days.nth(5).locator("td").nth(5)).to_have_text("100 / 50")
    # and axe-core finds nothing serious or critical on the page
    assert_accessible(page)


def test_a_run_is_replayed_under_another_profile_from_its_page_and_compared_with_it(
    page: Page, api: LocalApi, model: FakeOpenAIServer
) -> None:
    # Given an ended run of one question, open in the console
    original = "replay-me"
    seed(api, "replayer", original, datetime.now(UTC) - timedelta(minutes=1), question="a question")
    sign_in(page, api, "replayer", f"#/runs/{original}")
    # When the person replays it under `terse`, which the model answers differently
    model.enqueue(body=chat_completion(content="Replayed."))
    page.select_option("#replay-profile", "terse")
    page.click("#replay-run")
    # Then the page compares the original (A) with its replay (B) side by side, once the replay ended
    answers = page.locator('#compare tr[data-fact="Answer"] td')
    expect(answers).to_have_text(["Seeded.", "Replayed."])
    expect(page.locator('#compare tr[data-fact="Profile"] td')).to_have_text(["assistant", "terse"])
    expect(page.locator('#compare tr[data-fact="Tokens in / out"] td')).to_have_text(["10 / 5", "12 / 7"])
    expect(page.locator('#compare-steps [data-side="b"] li')).to_have_count(2)
    # And the API knows the new run as a replay of the original
    replay = page.url.split("b=")[1]
    with httpx.Client(base_url=api.url, headers={"x-api-key": "replayer"}, timeout=30) as http:
        run = poll(http, replay, lambda run: run["status"] == "SUCCEEDED")
    assert (run["replay"]["original_run_id"], run["profile"]) == (original, "terse")


def test_a_run_is_exported_as_json_as_the_api_gives_it_with_its_trace(page: Page, api: LocalApi) -> None:
    # Given an ended run, open in the console
    seed(api, "saver", "save-1", datetime.now(UTC) - timedelta(minutes=5))
    sign_in(page, api, "saver", "#/runs/save-1")
    # When the person exports it
    with page.expect_download() as started:
        page.click("#export-json")
    download = started.value
    # Then the file is the run as GET /v1/runs/{id}?trace=true answers it
    saved = json.loads(Path(download.path()).read_text(encoding="utf-8"))
    expected = httpx.get(f"{api.url}/v1/runs/save-1?trace=true", headers={"x-api-key": "saver"}).json()
    assert (download.suggested_filename, saved) == ("run-save-1.json", expected)


def test_the_runs_list_is_exported_as_csv_under_its_filter(page: Page, api: LocalApi) -> None:
    # Given three runs of the key, one FAILED, one under a profile named like a spreadsheet formula
    now = datetime.now(UTC)
    seed(api, "exporter", "csv-1", now - timedelta(minutes=3), status="FAILED")
    seed(api, "exporter", "csv-2", now - timedelta(minutes=2), profile="=1+2")
    seed(api, "exporter", "csv-3", now - timedelta(minutes=1))
    # When the person lists the succeeded ones and exports the list
    sign_in(page, api, "exporter", "#/runs?status=SUCCEEDED")
    expect(page.locator("#runs tbody tr")).to_have_count(2)
    with page.expect_download() as started:
        page.click("#export-csv")
    rows = list(csv.DictReader(io.StringIO(Path(started.value.path()).read_text(encoding="utf-8"))))
    # Then the file holds the two, newest first, with what the listing gives of them (usage where it has it)
    listed = httpx.get(f"{api.url}/v1/runs?status=SUCCEEDED", headers={"x-api-key": "exporter"}).json()["runs"]
    usage = [run.get("usage") or {} for run in listed]
    assert [(row["run_id"], row["status"], row["input_tokens"], row["cost_usd"]) for row in rows] == [
        (run["run_id"], "SUCCEEDED", str(used.get("input_tokens", "")), str(used.get("cost_usd", "")))
        for run, used in zip(listed, usage, strict=True)
    ]
    assert [row["run_id"] for row in rows] == ["csv-3", "csv-2"]
    # and the formula kept as text
    assert rows[1]["profile"] == "'=1+2"


def haystack_run(run_id: str, created: datetime, question: str) -> RunMeta:
    """An ended run of SEARCHER asking `question`, created at `created`."""
    return RunMeta(
        run_id=run_id,
        owner=SEARCHER,
        profile="assistant",
        status="SUCCEEDED",
        stop_reason="final_answer",
        outcome="answered",
        answer="Seeded.",
        deadline=created.timestamp() + 600,
        question=question,
        created_at=iso(created),
        updated_at=iso(created),
        expires_at=2_000_000_000,
    )


@pytest.fixture(scope="module")
def haystack(api: LocalApi) -> list[RunMeta]:
    """MAX_META_READS runs of SEARCHER a second apart, the newest at NEWEST, none asking about the NEEDLE;
    and one a minute older than them that does."""
    runs = [
        haystack_run(f"haystack-{n:03d}", NEWEST - timedelta(seconds=n), f"What is the weather in Paris ({n})?")
        for n in range(MAX_META_READS)
    ]
    needle = haystack_run(NEEDLE_RUN, SEARCH_STOP - timedelta(minutes=1), f"Where do {NEEDLE}s live?")
    return store_runs(api.environment, [*runs, needle])


def api_statuses(page: Page) -> list[int]:
    """The statuses of the API responses `page` receives from now on."""
    seen: list[int] = []
    page.on("response", lambda response: seen.append(response.status) if "/v1/" in response.url else None)
    return seen


def test_a_search_that_spends_its_read_budget_links_to_the_older_runs_and_finds_one_there(
    page: Page, api: LocalApi, haystack: list[RunMeta]
) -> None:
    # Given a whole read budget of runs without the word, and an older run that asks about it
    sign_in(page, api, SEARCHER, "#/runs")
    # When the person searches for the word
    page.fill("#search-filter", NEEDLE)
    page.click("#run-filters button")
    # Then the list says no run matched among those created since where the search stopped, and offers to
    # search the runs created before
    stop = iso(SEARCH_STOP)
    expect(page.locator("#runs-empty")).to_have_text(f"No run matched among the runs created since {stop}.")
    older = page.locator("#search-older")
    expect(older).to_have_text(f"Search runs created before {stop}")
    assert_accessible(page)
    # When they follow the link
    with page.expect_response(lambda response: "/v1/runs?" in response.url) as answered:
        older.click()
    # Then the API is asked for the same search among the runs created before that time
    asked = parse_qs(urlsplit(answered.value.url).query)
    assert (asked["q"], asked["created_before"], answered.value.status) == ([NEEDLE], [stop], 200)
    # and the older run that asks about the word is listed, with nothing further to search
    rows = page.locator("#runs tbody tr[data-run-id]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_have_attribute("data-run-id", NEEDLE_RUN)
    expect(page.locator("#search-older")).to_have_count(0)


def test_a_search_that_stops_at_the_start_of_its_range_offers_no_older_search(
    page: Page, api: LocalApi, haystack: list[RunMeta]
) -> None:
    # Given a whole read budget of runs without the word, the oldest created at SEARCH_STOP
    statuses = api_statuses(page)
    # When the person searches for the word among the runs created since SEARCH_STOP, typed as a person would
    # (whole seconds, at an offset) and not as the store keeps it: the console compares moments, not strings
    typed = SEARCH_STOP.astimezone(timezone(timedelta(hours=5, minutes=30))).isoformat()
    sign_in(page, api, SEARCHER, f"#/runs?q={NEEDLE}&created_after={quote(typed)}")
    # Then the list says no run matched since that time, the range's start, and links to no older search
    # (whose range would hold no moment: the API refuses it)
    expect(page.locator("#runs-empty")).to_have_text(f"No run matched among the runs created since {iso(SEARCH_STOP)}.")
    expect(page.locator("#search-older")).to_have_count(0)
    expect(page.locator("#next-page")).to_have_count(0)
    assert statuses == [200]
