"""Image parts of a chat message, sent by the `openai` SDK to `stepwise serve`: forwarded to a model whose
catalog entry accepts images, and refused with a 422 naming the profile's model otherwise."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest
from openai import OpenAI

from tests.e2e.conftest import serve
from tests.support.openai_server import FakeOpenAIServer, chat_completion

# A 1x1 PNG, as a client sends it in a data: URL
PIXEL = (
    "data:image/png;base64,"
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg=="
)


def looking_at(url: str, text: str = "What is in this picture?") -> list[Any]:
    """One user message: the text, then the image."""
    return [
        {"role": "user", "content": [{"type": "text", "text": text}, {"type": "image_url", "image_url": {"url": url}}]}
    ]


@pytest.fixture(scope="module")
def model_server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer() as server:
        yield server


@pytest.fixture(scope="module")
def client(model_server: FakeOpenAIServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[OpenAI]:
    """Profiles `vision` (gpt-4o, which this configuration's catalog says accepts images), `text` (a model
    the catalog does not know) and `bedrock` (Claude Haiku 4.5 on Bedrock, which takes images as bytes)."""

    def openai_model(name: str) -> dict[str, Any]:
        return {"provider": "openai", "base_url": model_server.base_url, "model": name, "api_key": "sk-provider"}

    config = {
        "models": {
            "vision": openai_model("gpt-4o"),
            "plain": openai_model("text-only-1"),
            "haiku": {"provider": "bedrock", "model_id": "anthropic.claude-haiku-4-5-20251001-v1:0"},
        },
        "model_catalog": [{"name": "gpt-4o", "match": ["gpt-4o*"], "accepts": {"images": True}}],
        "profiles": {
            "vision": {"model": "vision", "strategy": "function_calling"},
            "text": {"model": "plain", "strategy": "function_calling"},
            "bedrock": {"model": "haiku", "strategy": "function_calling"},
        },
        "default_profile": "vision",
    }
    with serve(config, Path(tmp_path_factory.mktemp("images"))) as api:
        yield OpenAI(base_url=f"{api.url}/v1", api_key="sk-caller", max_retries=0)


def test_an_image_reaches_a_model_that_accepts_images_as_an_image_url_part(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    # Given a model that describes what it sees
    seen = len(model_server.requests)
    model_server.enqueue(body=chat_completion(content="A single pixel."))
    # When the SDK sends a question with an image to the profile whose model accepts images
    answer = client.chat.completions.create(model="vision", messages=looking_at(PIXEL))
    # Then the model got the text and the image, as OpenAI's parts, and its answer came back
    assert answer.choices[0].message.content == "A single pixel."
    [sent] = model_server.requests[seen:]
    [question] = [message for message in sent.body["messages"] if message["role"] == "user"]
    assert question["content"] == [
        {"type": "text", "text": "What is in this picture?"},
        {"type": "image_url", "image_url": {"url": PIXEL}},
    ]


def test_an_image_for_a_model_that_does_not_accept_images_is_refused_naming_the_profiles_model(
    client: OpenAI, model_server: FakeOpenAIServer
) -> None:
    seen = len(model_server.requests)
    # When the SDK sends an image to the profile whose model the catalog does not say accepts images
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="text", messages=looking_at(PIXEL))
    # Then it is a 422 naming the profile and its model, and the model was never called
    assert "profile text runs model text-only-1, which does not accept images" in refused.value.message
    assert model_server.requests[seen:] == []


def test_an_image_link_for_a_bedrock_model_is_refused_as_converse_takes_bytes(client: OpenAI) -> None:
    # When an image is given by https URL to the Bedrock profile (whose model accepts images)
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="bedrock", messages=looking_at("https://example.com/cat.jpg"))
    # Then it is refused, saying the model takes images as data: URLs
    assert "takes images as data: URLs" in refused.value.message


@pytest.mark.parametrize(
    "url", ["http://example.com/cat.jpg", "data:image/svg+xml;base64,PHN2Zz4=", "data:image/png;base64,@@"]
)
def test_an_image_that_is_neither_a_data_url_nor_an_https_link_is_refused_naming_the_part(
    client: OpenAI, url: str
) -> None:
    # When an image part holds anything else
    with pytest.raises(openai.UnprocessableEntityError) as refused:
        client.chat.completions.create(model="vision", messages=looking_at(url))
    # Then the 422 names that part's field
    assert refused.value.body["param"] == "messages[0].content[1].image_url.url"  # type: ignore[index]
