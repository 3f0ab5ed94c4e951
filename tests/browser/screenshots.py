"""Take the console's screenshots for docs/ (`python -m tests.browser.screenshots`): the runs list, a run,
and the approvals view, over `stepwise serve` on loopback with a loopback model, in headless Chromium.

Not a test: it writes docs/console-runs.png, docs/console-run.png and docs/console-approvals.png.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import httpx
import yaml
from playwright.sync_api import sync_playwright

from stepwise.local.defaults import apply_local_defaults
from tests.browser.conftest import CHROMIUM_FLAGS, chromium_path
from tests.support.approval_runs import PAYMENTS, finished, start, waiting
from tests.support.openai_server import FakeOpenAIServer, chat_completion

DOCS = Path(__file__).resolve().parents[2] / "docs"
KEY = "alice"


def main() -> None:
    """Serve a few runs and photograph the three views."""
    apply_local_defaults()
    from stepwise.local.server import LocalApi

    with FakeOpenAIServer() as model, tempfile.TemporaryDirectory() as folder:
        config_dir = Path(folder)
        (config_dir / "payments.py").write_text(PAYMENTS, encoding="utf-8")
        model_config = {"provider": "openai", "base_url": model.base_url, "model": "gpt-4o-mini", "api_key": "sk-demo1"}
        config = {
            "models": {"gpt": model_config},
            "tools": {
                "builtin": ["calculator", "current_time"],
                "python": [{"module": "payments", "requires_approval": True, "approval_timeout_seconds": 300}],
            },
            "profiles": {"assistant": {"model": "gpt", "strategy": "function_calling"}},
            "default_profile": "assistant",
        }
        (config_dir / "stepwise.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
        with LocalApi(config_dir=config_dir, retry_interval_scale=0.0) as api:
            http = httpx.Client(base_url=api.url, headers={"x-api-key": KEY}, timeout=30)
            calls = [
                {"id": "call_1", "name": "calculator", "arguments": {"expression": "1499 * 12"}},
                {"id": "call_2", "name": "current_time", "arguments": {"timezone": "Europe/Paris"}},
            ]
            model.enqueue(body=chat_completion(content="Let me work it out.", tool_calls=calls, usage=(412, 58)))
            model.enqueue(body=chat_completion(content="That is 17,988 a year; it is 14:05 in Paris.", usage=(540, 31)))
            shown = start(http, "How much is 1499 a month over a year, and what time is it in Paris?")
            finished(http, shown)
            model.enqueue(body=chat_completion(content="Hello! How can I help?", usage=(96, 12)))
            finished(http, start(http, "Hello"))
            transfer = {"id": "call_pay", "name": "transfer", "arguments": {"amount": 250, "to": "ACME Ltd"}}
            model.enqueue(body=chat_completion(content="I will pay the invoice.", tool_calls=[transfer]))
            waiting(http, start(http, "Pay ACME's invoice of 250"))
            with sync_playwright() as playwright:
                browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
                page = browser.new_page(viewport={"width": 1100, "height": 700})
                page.goto(f"{api.url}/ui/")
                page.fill("#api-key", KEY)
                page.click("#key-form button")
                page.wait_for_selector("#runs tbody tr td.number:not(:empty)")
                page.wait_for_timeout(500)
                page.screenshot(path=str(DOCS / "console-runs.png"), full_page=True)
                page.goto(f"{api.url}/ui/#/runs/{shown}")
                page.wait_for_selector("#timeline li")
                page.wait_for_timeout(500)
                page.screenshot(path=str(DOCS / "console-run.png"), full_page=True)
                page.goto(f"{api.url}/ui/#/approvals")
                page.wait_for_selector("#approvals .approval")
                page.fill('#approvals input[name="reason"]', "invoice INV-2291 checked")
                page.screenshot(path=str(DOCS / "console-approvals.png"), full_page=True)
                browser.close()
            model.enqueue(body=chat_completion(content="Paid."))


if __name__ == "__main__":
    main()
