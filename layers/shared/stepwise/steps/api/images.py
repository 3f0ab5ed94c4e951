"""Images in a conversation: read from a request's image parts, and refused for a model that takes none.

An image is a data: URL (base64 PNG, JPEG, GIF or WebP, checked to decode) or an https URL. Whether the
profile's model accepts images is the model catalog's word (`accepts.images`); a Bedrock model takes an
image's bytes only (Converse image blocks), so a URL is refused for it too, before the run is stored.
"""

from __future__ import annotations

import base64
import binascii
import re

from stepwise.config.llm import BedrockModelConfig
from stepwise.config.model import StepwiseConfig
from stepwise.models.api_requests import ImagePart
from stepwise.models.messages import ChatMessage, ImageInput
from stepwise.steps.api.problems import InvalidRequest

_DATA_URL = re.compile(r"^data:(image/(?:png|jpeg|gif|webp));base64,([A-Za-z0-9+/]+={0,2})$")


def image_input(part: ImagePart, field: str) -> ImageInput:
    """The image an image part names; 422 naming `field` for a URL that is neither form."""
    url = part.image_url.url.strip()
    match = _DATA_URL.match(url)
    if match:
        try:
            base64.b64decode(match.group(2), validate=True)
        except (binascii.Error, ValueError):
            raise InvalidRequest.of(field, "the data: URL's base64 does not decode") from None
        return ImageInput.model_validate(
            {"media_type": match.group(1), "data": match.group(2), "detail": part.image_url.detail}
        )
    if url.startswith("https://") and len(url) <= 2048 and not any(character.isspace() for character in url):
        return ImageInput(url=url, detail=part.image_url.detail)
    raise InvalidRequest.of(
        field, "an image is a data: URL of base64 PNG, JPEG, GIF or WebP, or an https URL (at most 2048 characters)"
    )


def check_images_accepted(config: StepwiseConfig, profile: str, messages: list[ChatMessage]) -> None:
    """422 when the conversation holds images and the profile's model does not take them (as sent)."""
    if not any(message.images for message in messages):
        return
    model_name = config.profiles[profile].model
    model_config = config.models[model_name]
    requested = getattr(model_config, "model", None) or getattr(model_config, "model_id", None) or model_name
    facts = config.model_facts(model_name)
    if facts is None or not facts.accepts.images:
        known = "its model catalog entry does not list images" if facts else "the model catalog does not know it"
        raise InvalidRequest.of(
            "messages",
            f"profile {profile} runs model {requested}, which does not accept images ({known}; a configuration's "
            "model_catalog entry with accepts.images: true says it does)",
        )
    if isinstance(model_config, BedrockModelConfig) and any(
        image.url is not None for message in messages for image in message.images
    ):
        raise InvalidRequest.of(
            "messages", f"profile {profile} runs Bedrock model {requested}, which takes images as data: URLs, not links"
        )
