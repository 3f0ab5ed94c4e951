"""Model providers behind one interface, `ChatModel`.

`BedrockConverseChatModel` lives in `stepwise.llm.bedrock` and is not re-exported here, so importing
this package does not load botocore; `build_chat_model` imports it when a Bedrock model is built.

The names below are imported from their modules when first used: building a Bedrock model (the default
configuration's) loads neither the OpenAI-compatible provider (nor its httpx) nor the scripted one.
"""

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from stepwise.llm.base import ChatModel
    from stepwise.llm.factory import build_chat_model
    from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
    from stepwise.llm.scripted import ScriptedChatModel, load_script

_EXPORTS = {
    "ChatModel": "base",
    "OpenAICompatibleChatModel": "openai_compatible",
    "ScriptedChatModel": "scripted",
    "build_chat_model": "factory",
    "load_script": "scripted",
}

__all__ = [
    "ChatModel",
    "OpenAICompatibleChatModel",
    "ScriptedChatModel",
    "build_chat_model",
    "load_script",
]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f"{__name__}.{_EXPORTS[name]}"), name)
