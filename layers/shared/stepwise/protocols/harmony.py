"""gpt-oss's harmony format, when a server returns it raw: messages on channels, some addressed to a tool.

A reply is a run of messages, each ``<|start|>assistant`` (often left off the first), a header naming its channel
(``<|channel|>analysis``, ``commentary`` or ``final``) and, for a call, its recipient (``to=functions.name``,
before or after the channel), then ``<|message|>`` and the body up to ``<|end|>``, ``<|call|>`` or
``<|return|>``. The analysis channel is the model's reasoning; a message addressed to a tool is a call; the
final channel is the answer, and commentary without a recipient is what the model tells the user before its
calls. OpenAI's harmony library reads token ids, not text, hence this reader.
"""

from __future__ import annotations

import re
from typing import NamedTuple

_MESSAGE = re.compile(r"<\|message\|>")
# What ends a body: its closing token, or the header of the next message when the closing token was left out.
_BODY_END = re.compile(r"<\|(?:end|call|return|start|channel)\|>")
_ANY_TOKEN = re.compile(r"<\|(?:start|channel|constrain|end|call|return)\|>")
_CHANNEL = re.compile(r"<\|channel\|>\s*+(?P<channel>[^\s<]++)")
_RECIPIENT = re.compile(r"\bto=(?P<name>[^\s<]++)")


class HarmonyMessage(NamedTuple):
    """One message: its channel, its recipient (for a call), its body, and whether its closing token came."""

    channel: str
    recipient: str | None
    body: str
    ended: bool


class HarmonyReply(NamedTuple):
    """A harmony reply's messages, and the text written before the first of them."""

    lead: str
    messages: list[HarmonyMessage]


def read_harmony(text: str) -> HarmonyReply | None:
    """The messages of a raw harmony reply, or None when the text has none."""
    if "<|channel|>" not in text:
        return None
    messages: list[HarmonyMessage] = []
    lead = ""
    position = 0
    for message in _MESSAGE.finditer(text):
        if message.start() < position:
            continue
        header = text[position : message.start()]
        if not messages:
            first_token = _ANY_TOKEN.search(header)
            cut = first_token.start() if first_token else 0
            recipient_first = _RECIPIENT.search(header, 0, cut)
            cut = recipient_first.start() if recipient_first else cut
            lead, header = header[:cut], header[cut:]
        end = _BODY_END.search(text, message.end())
        body = text[message.end() : end.start() if end else len(text)]
        channel = _CHANNEL.search(header)
        recipient = _RECIPIENT.search(header)
        closing = end is not None and end.group() in ("<|end|>", "<|call|>", "<|return|>")
        messages.append(
            HarmonyMessage(
                channel.group("channel") if channel else "",
                recipient.group("name") if recipient else None,
                body,
                closing,
            )
        )
        if end is None:
            break
        position = end.end() if closing else end.start()
    return HarmonyReply(lead, messages) if messages else None


def call_markup(message: HarmonyMessage) -> str:
    """A call message written back in harmony's own form, for the native reader to read as a call."""
    return f"<|channel|>commentary to={message.recipient} <|constrain|>json<|message|>{message.body}<|call|>"
