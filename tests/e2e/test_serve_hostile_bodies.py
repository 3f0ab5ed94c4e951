"""`stepwise serve` answers hostile bodies from the API layer: a 4xx each, and nobody waits behind them."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import httpx

from tests.e2e.conftest import serve
from tests.e2e.test_secret_canary import scan_table

CONFIG = {
    "models": {"m": {"provider": "scripted", "scenarios": [{"turns": [{"content": "Hi."}]}]}},
    "profiles": {"default": {"model": "m", "strategy": "react", "protocol": "react_json"}},
}


def test_eight_surrogate_bodies_at_once_are_each_a_422_and_the_document_is_still_served(tmp_path: Path) -> None:
    with serve(CONFIG, tmp_path) as served:
        client = httpx.Client(base_url=served.url, headers={"x-api-key": "mallory"}, timeout=30)

        def hostile(_: int) -> int:
            body = rb'{"input": "x\ud800"}'
            return client.post("/v1/runs", content=body, headers={"Content-Type": "application/json"}).status_code

        # When eight 20-byte bodies with a lone surrogate arrive at once
        with ThreadPoolExecutor(max_workers=8) as pool:
            statuses = list(pool.map(hostile, range(8)))
        # And then a request for the document
        document = client.get("/v1/openapi.json")
        deep = client.post("/v1/runs", content=b"[" * 10_000, headers={"Content-Type": "application/json"})
        items = scan_table(served.environment.table_name)

    # Then each hostile body was refused, the deep one too, no run was stored, and the document was served
    assert statuses == [422] * 8
    assert deep.status_code == 400
    assert document.status_code == 200
    assert items == []
