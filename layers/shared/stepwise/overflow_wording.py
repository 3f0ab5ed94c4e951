"""How servers word a refusal of a request longer than the model's context window: one table of families.

Each family says how its refusal is recognised (words that mean the window was passed, numbers or not), where
the window and the prompt's size are in it, and gives real refusals of its own as examples (the tests check
that each example is recognised by its family and that each of its patterns reads a number from one). Both
questions are asked of the table: is this an overflow (`is_overflow_text`), and what window and prompt size
does it state (`stated_window`, `reported_prompt`). A family reads only the number its words attach to the
window or the prompt, so a status code, a `max_tokens`, an error code or a model name in the same text is
never taken for either. The families were written from the servers' own sources and documentation; the tests
name the source of each wording.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cache, cached_property

_N = r"(\d[\d,]*)"
# A number the pattern starts with is read from the start of its run of digits and commas only: tried from
# every digit of a long run, each try reading to the run's end, a search cost the square of the run. The
# group is the same (a comma is never its first character).
_N_FIRST = r"(?<![\d,]),*+(\d[\d,]*+)"
# Wordings more than one family uses: "request (13392 tokens)" (llama.cpp's server), "The input (516368 tokens)"
# (SGLang); llama.cpp's `n_ctx` (the window served, never `n_ctx_train`, the trained size) and `n_keep` (the
# prompt it must keep), which LM Studio's refusals quote
_TOKENS_IN_PARENS = rf"(?:request|input) \({_N} tokens\)"
_N_CTX = rf"\bn_ctx\b\W{{1,4}}{_N}"
_N_KEEP = rf"\bn_keep\b\W{{1,4}}{_N}"
# A stated window below this is a misreading (a status code, a count of something else), not a window.
_SMALLEST_WINDOW = 256


@dataclass(frozen=True)
class OverflowFamily:
    """One way servers word the refusal: the words that recognise it, the patterns whose first group is the
    window or the prompt's size in tokens, and real refusals of the family."""

    recognised: str
    examples: tuple[str, ...]
    window: tuple[str, ...] = ()
    prompt: tuple[str, ...] = ()

    @cached_property
    def recognition(self) -> re.Pattern[str]:
        """The family's words, compiled."""
        return re.compile(self.recognised, re.IGNORECASE)

    @cached_property
    def window_wordings(self) -> tuple[re.Pattern[str], ...]:
        """Where the family states the window, compiled."""
        return tuple(re.compile(pattern, re.IGNORECASE) for pattern in self.window)

    @cached_property
    def prompt_wordings(self) -> tuple[re.Pattern[str], ...]:
        """Where the family states the prompt's size, compiled."""
        return tuple(re.compile(pattern, re.IGNORECASE) for pattern in self.prompt)


# First family (and first pattern) that reads a number wins; the families never read the same number differently.
FAMILIES: tuple[OverflowFamily, ...] = (
    # OpenAI, Azure OpenAI, DeepSeek, vLLM, SGLang, OpenRouter ("This endpoint's ..."), Ollama's cloud models
    # ("... length: 131072"), Mistral ("too large for model with 32768 maximum context length")
    OverflowFamily(
        r"maximum context",
        (
            "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens.",
            "This model's maximum context length is 4097 tokens, however you requested 4569 tokens (3545 in your "
            "prompt; 1024 for the completion).",
            "This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens "
            "(10535 of text input, 131072 in the output).",
            "This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens.",
            "This model's maximum context length is 131072 tokens. However, you requested 102400 output tokens and "
            "your prompt contains at least 28673 input tokens, for a total of at least 131073 tokens.",
            "Requested token count exceeds the model's maximum context length of 65536 tokens. You requested a total "
            "of 67298 tokens: 50914 tokens from the input messages and 16384 tokens for the completion.",
            "Prompt contains 33796 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        ),
        window=(rf"maximum context length(?: is| of|:)?\s*\(?{_N}", rf"{_N_FIRST} maximum context length"),
        prompt=(
            rf"resulted in {_N} tokens",
            rf"\({_N} in (?:the messages|your prompt)",
            rf"\({_N} of text input",
            rf"request has {_N} input tokens",  # vLLM 0.10-0.17
            rf"prompt contains (?:at least )?{_N} (?:input )?tokens",  # vLLM 0.18+, Mistral
            rf"{_N_FIRST} tokens from the input messages",  # SGLang
        ),
    ),
    # vLLM's renderer ("the model's context length is only 8192 tokens") and input processor ("too long to fit
    # into the model (context length 4096)"), SGLang ("longer than the model's context length (200000 tokens)"),
    # LM Studio ("loaded with context length of only 4096 tokens", "exceeds context length 1500"), Ollama
    OverflowFamily(
        r"context[ _-]?length",
        (
            "You passed 9000 input tokens and requested 2000 output tokens. However, the model's context length is "
            "only 10000 tokens, resulting in a maximum input length of 8000 tokens.",
            "The input (516368 tokens) is longer than the model's context length (262144 tokens).",
            "Input length 1581 exceeds context length 1500",
            "Trying to keep the first 6269 tokens when context the overflows. However, the model is loaded with "
            "context length of only 4096 tokens, which is not enough.",
            "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= "
            "n_ctx: 4096).",
        ),
        window=(rf"context length (?:is |of )?(?:only )?\(?{_N}", _N_CTX),
        prompt=(
            rf"you passed {_N} input tokens",  # vLLM's renderer
            _TOKENS_IN_PARENS,
            rf"input length \(?{_N}\)? exceeds",  # LM Studio, "Input length (265330) exceeds model's maximum ..."
            rf"keep the first {_N} tokens",  # LM Studio keeps the whole prompt
            _N_KEEP,
        ),
    ),
    # llama.cpp's server: "exceeds the available context size (8192 tokens)", "larger than the max context size
    # (8192 tokens)", "the configured context size is 32768 tokens" (builds whose message states no number give
    # them as fields of the body, `n_ctx` and `n_prompt_tokens`, which the OpenAI-compatible client reads as such)
    OverflowFamily(
        r"context[ _-]?size",
        ("request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",),
        window=(rf"context size (?:is )?\(?{_N}",),
        prompt=(_TOKENS_IN_PARENS,),
    ),
    # LM Studio's llama.cpp: "Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)"
    OverflowFamily(
        r"cannot truncate prompt with n_keep",
        ("Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)",),
        window=(_N_CTX,),
        prompt=(_N_KEEP,),
    ),
    # OpenAI's newer models (no number), llama-cpp-python's server ("Requested tokens (9000) exceed context window
    # of 8192"); not "context_window": Groq's "max_completion_tokens must be less than or equal to 40960, the
    # maximum value for max_completion_tokens is less than the context_window for this model" is an output cap
    OverflowFamily(
        r"context window",
        ("Requested tokens (2214) exceed context window of 2000",),
        window=(rf"context window of {_N}",),
        prompt=(rf"requested tokens \({_N}\)",),
    ),
    # vLLM's input processor: "The decoder prompt (length 12324) is longer than the maximum model length of 8192"
    OverflowFamily(
        r"maximum model length",
        ("The decoder prompt (length 12324) is longer than the maximum model length of 8192.",),
        window=(rf"maximum model length of {_N}",),
        prompt=(rf"prompt \((?:total )?length {_N}\)",),
    ),
    # vLLM's renderer: "max_tokens=9000cannot be greater than max_model_len=max_total_tokens=8192"
    OverflowFamily(
        r"greater than max_(model_len|total_tokens)",
        ("max_tokens=12000cannot be greater than max_model_len=max_total_tokens=8192.",),
        window=(rf"greater than max_[a-z_]+=(?:max_total_tokens=)?{_N}",),
    ),
    # Anthropic, Claude on Bedrock ("prompt is too long: 210000 tokens > 200000 maximum"), Fireworks ("prompt is
    # too long: 140000, model ..."), Bedrock ("Input is too long for requested model", "too many total text bytes")
    OverflowFamily(
        r"prompt is too long|input is too long|too many total text bytes",
        ("prompt is too long: 219898 tokens > 200000 maximum",),
        window=(rf"> {_N} maximum",),
        prompt=(rf"prompt is too long: {_N}",),
    ),
    # Anthropic ("input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000"), llama.cpp
    # ("exceeds the available context size")
    OverflowFamily(
        r"exceed(s|ed)? (the )?context|input length and `?max_tokens`? exceed",
        ("input length and max_tokens exceed context limit: 198981 + 21333 > 200000",),
        window=(rf"context limit: \d[\d,]* \+ \d[\d,]* > {_N}",),
        prompt=(rf"context limit: {_N} \+",),
    ),
    # Moonshot/Kimi ("Your request exceeded model token limit: 8192"), its older models ("model max length
    # exceeded, max length:8192")
    OverflowFamily(
        r"model token limit|max length exceeded",
        (
            "Invalid request: Your request exceeded model token limit: 262144 (requested: 291351)",
            "model max length exceeded, max length:8192",
        ),
        window=(rf"model token limit: {_N}", rf"max length exceeded, max length:\s*{_N}"),
    ),
    # xAI: "This model's maximum prompt length is 131072 but the request contains 136973 tokens."
    OverflowFamily(
        r"maximum prompt length",
        ("This model's maximum prompt length is 131072 but the request contains 136973 tokens.",),
        window=(rf"maximum prompt length is {_N}",),
        prompt=(rf"request contains {_N} tokens",),
    ),
    # Gemini, its OpenAI-compatible endpoint too: "The input token count (1200293) exceeds the maximum number of
    # tokens allowed (1048576)."
    OverflowFamily(
        r"maximum number of tokens allowed|input token count",
        ("The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",),
        window=(rf"maximum number of tokens allowed \(?{_N}",),
        prompt=(rf"input token count \({_N}\)",),
    ),
    # "exceeds the maximum allowed input length of 131040 tokens", z.ai's "Prompt exceeds max length"
    OverflowFamily(
        r"maximum allowed input length|prompt exceeds (the )?max(imum)? length",
        ("exceeds the maximum allowed input length of 131040 tokens", "Prompt exceeds max length"),
        window=(rf"maximum allowed input length of {_N}",),
    ),
    # Hugging Face TGI: "`inputs` tokens + `max_new_tokens` must be <= 4096" (`max_total_tokens`), "`inputs` must
    # have less than 4096 tokens" (`max_input_tokens`); not "`max_new_tokens` must be <= N", the output cap alone
    OverflowFamily(
        r"inputs`? tokens \+ `?max_new_tokens|inputs`? must have less than",
        (
            "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 3474 `inputs` tokens "
            "and 60 `max_new_tokens`",
            "Input validation error: `inputs` must have less than 1024 tokens. Given: 1500",
        ),
        window=(rf"tokens \+ `?max_new_tokens`? must be <= {_N}", rf"inputs`? must have less than {_N}"),
        prompt=(rf"given: {_N} `?inputs`? tokens",),
    ),
    # Cohere ("too many tokens: ... The limit for this model is 132000 tokens", its older models' "total number
    # of tokens in the prompt cannot exceed 4081 - received 4292"), Bedrock's Titan and Mistral ("Too many input
    # tokens. Max input tokens: 8192, request input token count: 9279")
    OverflowFamily(
        r"too many (input )?tokens",
        (
            "too many tokens: size limit exceeded by 105000 tokens. The limit for this model is 8992 tokens.",
            "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292.",
            "Too many input tokens. Max input tokens: 4096, request input token count: 7262",
        ),
        window=(
            rf"limit for this model is {_N}",
            rf"total number of tokens(?:(?!total number of tokens)[^.])*? cannot exceed {_N}",
            rf"max input tokens: {_N}",
        ),
        prompt=(rf"cannot exceed \d[\d,]* - received {_N}", rf"request input token count: {_N}"),
    ),
    # DashScope/Qwen: "Range of input length should be [1, 30720]" (not its "Range of max_tokens ...")
    OverflowFamily(
        r"input length should be \[",
        ("Range of input length should be [1, 30720]",),
        window=(rf"input length should be \[\d+,\s*{_N}\]",),
    ),
    # GitHub Copilot's API: "prompt token count of 93854 exceeds the limit of 90000"
    OverflowFamily(
        r"token count of \d[\d,]* exceeds the limit",
        ("prompt token count of 93854 exceeds the limit of 90000",),
        window=(rf"token count of \d[\d,]* exceeds the limit of {_N}",),
        prompt=(rf"prompt token count of {_N}",),
    ),
    # Groq, OpenAI, Cerebras ("Please reduce the length of the messages or completion. Current length is 42328
    # while limit is 40000")
    OverflowFamily(
        r"reduce the length of the messages",
        ("Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000",),
        window=(rf"current length is \d[\d,]* while limit is {_N}",),
        prompt=(rf"current length is {_N}",),
    ),
)


# Compiled on first use: the steps that import this module to read a refusal seldom meet one.
@cache
def _any_family() -> re.Pattern[str]:
    return re.compile("|".join(family.recognised for family in FAMILIES), re.IGNORECASE)


@cache
def _window_wordings() -> tuple[re.Pattern[str], ...]:
    # every family's, in the table's order, each once (a wording more than one family uses is tried once)
    return tuple(dict.fromkeys(wording for family in FAMILIES for wording in family.window_wordings))


@cache
def _prompt_wordings() -> tuple[re.Pattern[str], ...]:
    return tuple(dict.fromkeys(wording for family in FAMILIES for wording in family.prompt_wordings))


def is_overflow_text(message: str) -> bool:
    """True when a message is worded as a refusal of a request past the context window (some family's words)."""
    return _any_family().search(message) is not None


def stated_window(provider_message: str) -> int | None:
    """The context window a provider's refusal states, or None when it states none (Bedrock's "Input is
    too long for requested model" does not)."""
    window = _first_number(_window_wordings(), provider_message)
    return window if window is not None and window >= _SMALLEST_WINDOW else None


def reported_prompt(provider_message: str) -> int | None:
    """The prompt tokens a provider's refusal says the refused request had, or None when it says not."""
    return _first_number(_prompt_wordings(), provider_message)


def read_number(wording: re.Pattern[str], text: str) -> int | None:
    """The number a wording's first group reads in `text`, or None when it is not there."""
    found = wording.search(text)
    return int(found.group(1).replace(",", "")) if found is not None else None


def _first_number(wordings: tuple[re.Pattern[str], ...], text: str) -> int | None:
    return next((number for wording in wordings if (number := read_number(wording, text)) is not None), None)
