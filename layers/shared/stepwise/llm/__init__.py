"""Model providers behind one interface, `ChatModel`.

`BedrockConverseChatModel` lives in `stepwise.llm.bedrock` and is not re-exported here, so importing
this package does not load botocore; `build_chat_model` imports it when a Bedrock model is built.
"""

from stepwise.llm.base import ChatModel
from stepwise.llm.factory import build_chat_model
from stepwise.llm.openai_compatible import OpenAICompatibleChatModel
from stepwise.llm.scripted import ScriptedChatModel, load_script

__all__ = [
    "ChatModel",
    "OpenAICompatibleChatModel",
    "ScriptedChatModel",
    "build_chat_model",
    "load_script",
]
