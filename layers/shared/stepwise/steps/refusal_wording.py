"""The numbers a provider's refusal of a too-long request states: the model's window, and the prompt size.

Each wording family is one pattern, written from the servers' own sources and documentation (the tests name
the source of each wording). A family reads only the number its words attach to the window or the prompt,
so a status code, a `max_tokens`, an error code or a model name in the same text is never taken for either.
llama.cpp's server states both as fields of its error body (`n_ctx`, `n_prompt_tokens`), which the OpenAI-
compatible client writes after the message as `n_ctx: 8192`; the field families read them there.
"""

from __future__ import annotations

import re

_N = r"(\d[\d,]*)"
# A number the pattern starts with is read from the start of its run of digits and commas only: tried from
# every digit of a long run, each try reading to the run's end, a search cost the square of the run. The
# group is the same (a comma is never its first character).
_N_FIRST = r"(?<![\d,]),*+(\d[\d,]*+)"

# How providers state the window (first family that matches wins; the families never read the same number
# differently).
_WINDOW_WORDINGS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        # "maximum context length is 10000 tokens" (OpenAI, Azure OpenAI, DeepSeek, vLLM, OpenRouter's
        # "This endpoint's ..."), "... length of 8192 tokens" (SGLang), "... length: 131072" (Ollama's cloud
        # models), "... length (262144)"
        rf"maximum context length(?: is| of|:)?\s*\(?{_N}",
        # "too large for model with 32768 maximum context length" (Mistral)
        rf"{_N_FIRST} maximum context length",
        # "the model's context length is only 8192 tokens" (vLLM's renderer), "too long to fit into the model
        # (context length 4096)" (vLLM), "loaded with context length of only 4096 tokens", "exceeds context length
        # 1500" (LM Studio), "longer than the model's context length (200000 tokens)" (SGLang)
        rf"context length (?:is |of )?(?:only )?\(?{_N}",
        # "longer than the maximum model length of 8192" (vLLM's input processor)
        rf"maximum model length of {_N}",
        # "max_tokens=9000cannot be greater than max_model_len=max_total_tokens=8192" (vLLM's renderer)
        rf"greater than max_[a-z_]+=(?:max_total_tokens=)?{_N}",
        # "prompt is too long: 210000 tokens > 200000 maximum" (Anthropic, Claude on Bedrock)
        rf"> {_N} maximum",
        # "input length and `max_tokens` exceed context limit: 198981 + 21333 > 200000" (Anthropic)
        rf"context limit: \d[\d,]* \+ \d[\d,]* > {_N}",
        # "Your request exceeded model token limit: 8192" (Moonshot/Kimi)
        rf"model token limit: {_N}",
        # "exceeds the available context size (8192 tokens)", "larger than the max context size (8192 tokens)"
        # (llama.cpp's server), "the configured context size is 32768 tokens"
        rf"context size (?:is )?\(?{_N}",
        # llama.cpp's `n_ctx` field (never `n_ctx_train`, the trained size)
        rf"\bn_ctx\b\W{{1,4}}{_N}",
        # "This model's maximum prompt length is 131072 but ..." (xAI)
        rf"maximum prompt length is {_N}",
        # "exceeds the maximum number of tokens allowed (1048576)" (Gemini, its OpenAI-compatible endpoint too)
        rf"maximum number of tokens allowed \(?{_N}",
        # "exceeds the maximum allowed input length of 131040 tokens"
        rf"maximum allowed input length of {_N}",
        # "`inputs` tokens + `max_new_tokens` must be <= 4096" (Hugging Face TGI); not TGI's "`max_new_tokens`
        # must be <= N", the output cap alone
        rf"tokens \+ `?max_new_tokens`? must be <= {_N}",
        # "`inputs` must have less than 4096 tokens" (TGI's `max_input_tokens`)
        rf"inputs`? must have less than {_N}",
        # "The limit for this model is 132000 tokens" (Cohere)
        rf"limit for this model is {_N}",
        # "total number of tokens in the prompt cannot exceed 4081" (Cohere's older models)
        rf"total number of tokens(?:(?!total number of tokens)[^.])*? cannot exceed {_N}",
        # "Range of input length should be [1, 30720]" (DashScope/Qwen; not its "Range of max_tokens ...")
        rf"input length should be \[\d+,\s*{_N}\]",
        # "prompt token count of 93854 exceeds the limit of 90000" (GitHub Copilot's API)
        rf"token count of \d[\d,]* exceeds the limit of {_N}",
        # "Current length is 42328 while limit is 40000" (Cerebras)
        rf"current length is \d[\d,]* while limit is {_N}",
        # "Too many input tokens. Max input tokens: 8192, request input token count: 9279" (Bedrock: Titan,
        # Mistral)
        rf"max input tokens: {_N}",
        # "Requested tokens (9000) exceed context window of 8192" (llama-cpp-python's server)
        rf"context window of {_N}",
        # "model max length exceeded, max length:8192" (Moonshot's older models)
        rf"max length exceeded, max length:\s*{_N}",
    )
)

# How providers state the size of the prompt they refused.
_PROMPT_WORDINGS = tuple(
    re.compile(pattern, re.IGNORECASE)
    for pattern in (
        rf"resulted in {_N} tokens",  # OpenAI, Azure OpenAI
        rf"\({_N} in (?:the messages|your prompt)",  # OpenAI, DeepSeek, older vLLM ("(7691 in the messages, ...")
        rf"\({_N} of text input",  # OpenRouter
        rf"prompt is too long: {_N}",  # Anthropic ("210000 tokens > ..."), Fireworks ("140000, model ...")
        rf"request has {_N} input tokens",  # vLLM 0.10-0.17
        rf"prompt contains (?:at least )?{_N} (?:input )?tokens",  # vLLM 0.18+, Mistral
        rf"you passed {_N} input tokens",  # vLLM's renderer
        rf"(?:request|input) \({_N} tokens\)",  # llama.cpp's server, SGLang ("The input (250000 tokens) ...")
        rf"{_N_FIRST} tokens from the input messages",  # SGLang
        rf"given: {_N} `?inputs`? tokens",  # TGI
        rf"input token count \({_N}\)",  # Gemini
        rf"request contains {_N} tokens",  # xAI
        rf"context limit: {_N} \+",  # Anthropic
        rf"prompt \((?:total )?length {_N}\)",  # vLLM's input processor
        rf"requested tokens \({_N}\)",  # llama-cpp-python's server
        rf"request input token count: {_N}",  # Bedrock (Titan, Mistral)
        rf"\bn_prompt_tokens\b\W{{1,4}}{_N}",  # llama.cpp's `n_prompt_tokens` field
        rf"prompt token count of {_N}",  # GitHub Copilot's API
        rf"input length \(?{_N}\)? exceeds",  # "Input length (265330) exceeds model's maximum context length"
        rf"cannot exceed \d[\d,]* - received {_N}",  # Cohere's older models
        rf"current length is {_N}",  # Cerebras
        # LM Studio keeps the whole prompt: "Trying to keep the first 6269 tokens", "n_keep: 13055>= n_ctx: 4096"
        rf"keep the first {_N} tokens",
        rf"\bn_keep\b\W{{1,4}}{_N}",
    )
)
# A stated window below this is a misreading (a status code, a count of something else), not a window.
_SMALLEST_WINDOW = 256


def stated_window(provider_message: str) -> int | None:
    """The context window a provider's refusal states, or None when it states none (Bedrock's "Input is
    too long for requested model" does not)."""
    window = _first_number(_WINDOW_WORDINGS, provider_message)
    return window if window is not None and window >= _SMALLEST_WINDOW else None


def reported_prompt(provider_message: str) -> int | None:
    """The prompt tokens a provider's refusal says the refused request had, or None when it says not."""
    return _first_number(_PROMPT_WORDINGS, provider_message)


def _first_number(wordings: tuple[re.Pattern[str], ...], text: str) -> int | None:
    for wording in wordings:
        found = wording.search(text)
        if found is not None:
            return int(found.group(1).replace(",", ""))
    return None
