"""End-of-turn tokens a reply may end with: the text of a model served with its special tokens decoded.

A server or notebook that decodes the whole generation (``skip_special_tokens=False``, a raw llama.cpp or MLX
run) leaves the token that ended the turn at the end of the text: Gemma's ``<end_of_turn>``, ChatML's
``<|im_end|>``, Llama 3's ``<|eot_id|>`` and ``<|end_of_text|>`` (``<|eom_id|>`` after a built-in tool call), Llama 4's
``<|eot|>`` and ``<|eom|>``, Phi's ``<|end|>``, GPT-2-style
``<|endoftext|>``, DeepSeek's end of sentence (between full-width bars), SentencePiece ``</s>`` and ``<eos>``.
They are the turn's end, never part of an answer, a call's arguments or a thought. Functionary v3 opens a message
to the user with ``>>>all`` on a line of its own (its calls with ``>>>tool_name``): that line is the message's
address, not its text.
"""

from __future__ import annotations

from stepwise.models.messages import Completion

_END_OF_TURN = (
    "<end_of_turn>",
    "<|im_end|>",
    "<|eot_id|>",
    "<|eom_id|>",
    "<|eot|>",
    "<|eom|>",
    "<|end|>",
    "<|endoftext|>",
    "<|end_of_text|>",
    "<\uff5cend\u2581of\u2581sentence\uff5c>",
    "</s>",
    "<eos>",
)
_TEXT_RECIPIENT_LINE = ">>>all\n"
# A generation ends with one such token, sometimes two (end of turn, then end of text); more are not looked for.
_MOST_TOKENS = 4


def without_end_of_turn(completion: Completion) -> Completion:
    """The completion without the end-of-turn tokens (and the spaces between them) that end its text."""
    text = completion.content
    end = len(text.rstrip())
    for _ in range(_MOST_TOKENS):
        token = next((token for token in _END_OF_TURN if text.endswith(token, 0, end)), None)
        if token is None:
            break
        end = len(text[: end - len(token)].rstrip())
    if end == len(text.rstrip()):
        return completion
    return completion.model_copy(update={"content": text[:end]})


def without_turn_tokens(completion: Completion) -> Completion:
    """The completion without its end-of-turn tokens and without a leading ``>>>all`` recipient line."""
    trimmed = without_end_of_turn(completion)
    text = trimmed.content
    start = len(text) - len(text.lstrip())
    if not text.startswith(_TEXT_RECIPIENT_LINE, start):
        return trimmed
    return trimmed.model_copy(update={"content": text[start + len(_TEXT_RECIPIENT_LINE) :]})
