"""Compressed answers from servers that ignore ``Accept-Encoding: identity``: decoded within the size cap."""

from __future__ import annotations

import gzip
import tracemalloc
import zlib
from collections.abc import Callable

import pytest

from stepwise.tools import ToolInvoker
from tests.support.tool_server import Raw, ScriptableToolServer
from tests.unit.tools.config_builders import MakeInvoker, api_entry, call, endpoint

CAP = 1000


@pytest.fixture
def invoker(make_invoker: MakeInvoker, tool_server: ScriptableToolServer) -> ToolInvoker:
    """An invoker whose tool ``fetch`` calls GET /api/resource, with responses capped at CAP bytes."""
    tools = [endpoint("fetch", "/resource")]
    return make_invoker({"apis": [api_entry(f"{tool_server.url}/api", tools, maxResponseBytes=CAP)]})


def raw_deflate(data: bytes) -> bytes:
    """A deflate stream without the zlib wrapper, as some servers send ``Content-Encoding: deflate``."""
    compressor = zlib.compressobj(wbits=-zlib.MAX_WBITS)
    return compressor.compress(data) + compressor.flush()


def test_a_gzip_bomb_is_inflated_only_as_far_as_the_cap(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers 64 MB of text gzipped into about 64 KB, one network read's worth
    tool_server.on(
        "/api/resource", Raw(gzip.compress(b"x" * 64_000_000), content_type="text/plain", content_encoding="gzip")
    )

    # When the tool is called, its allocations traced
    tracemalloc.start()
    try:
        observation = invoker.invoke(call("fetch"))
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()

    # Then the model gets the capped text with the truncation note, and the body was never inflated whole
    assert observation.ok and observation.truncated
    assert observation.content == "x" * CAP + f"…[truncated: the response was longer than {CAP} bytes]"
    assert peak < 4_000_000


@pytest.mark.parametrize(
    ("encoding", "compress"),
    [("gzip", gzip.compress), ("deflate", zlib.compress), ("deflate", raw_deflate)],
    ids=["gzip", "zlib deflate", "raw deflate"],
)
def test_a_compressed_body_within_the_cap_is_read_decoded(
    invoker: ToolInvoker, tool_server: ScriptableToolServer, encoding: str, compress: Callable[[bytes], bytes]
) -> None:
    # Given the API answers compressed JSON although the tool asked for identity
    tool_server.on("/api/resource", Raw(compress(b'{"city": "Paris"}'), content_encoding=encoding))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the model reads the JSON
    assert observation.ok
    assert observation.content == '{"city":"Paris"}'


def test_a_body_in_a_coding_that_cannot_be_bounded_is_refused_naming_it(
    invoker: ToolInvoker, tool_server: ScriptableToolServer
) -> None:
    # Given the API answers in a content coding the tool does not inflate
    tool_server.on("/api/resource", Raw(b"\x1b\x00\x00", content_encoding="br"))

    # When the tool is called
    observation = invoker.invoke(call("fetch"))

    # Then the call fails naming the coding and the reason
    assert not observation.ok
    assert observation.error == "the response is encoded as 'br', which cannot be read within the size cap"
