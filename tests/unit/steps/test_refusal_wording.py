"""What real servers say when a request is longer than the window: each wording is an overflow (so compaction
starts), and the window and the prompt size it states are read, no other number in it.

Each case is the message as its source writes it (numbers filled in where the source formats them); the test
id names the server and the source is in the comment beside it.
"""

from __future__ import annotations

import pytest

from stepwise.errors import ContextWindowExceeded
from stepwise.llm.provider_errors import bedrock_error, is_context_overflow, openai_error
from stepwise.overflow_wording import stated_window
from stepwise.steps.context_window import overflow_safety

# (message, window it states, prompt tokens it states)
REFUSALS = [
    # chathub-dev/chathub#126 (the body's message)
    pytest.param(
        "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. "
        "Please reduce the length of the messages.",
        4097,
        4294,
        id="openai",
    ),
    # AstrBotDevs/AstrBot#1 (OpenAI's completions wording)
    pytest.param(
        "This model's maximum context length is 4097 tokens, however you requested 4569 tokens (3545 in your "
        "prompt; 1024 for the completion). Please reduce your prompt; or completion length.",
        4097,
        3545,
        id="openai-completions",
    ),
    # Niek/chatgpt-web#525
    pytest.param(
        "This model's maximum context length has been exceeded. Please reduce the length of the messages.",
        None,
        None,
        id="openai-no-numbers",
    ),
    # Azure OpenAI with functions, as client test suites quote it
    pytest.param(
        "This model's maximum context length is 300000 tokens. However, your messages resulted in 350564 tokens "
        "(100 in the messages, 350464 in the functions). Please reduce the length of the messages or functions.",
        300000,
        350564,
        id="azure-openai",
    ),
    # OpenAI's newer models (code context_length_exceeded): no number at all
    pytest.param(
        "Your input exceeds the context window of this model. Please adjust your input and try again.",
        None,
        None,
        id="openai-context-window",
    ),
    # evalstate/fast-agent#621
    pytest.param(
        "This model's maximum context length is 131072 tokens. However, you requested 131134 tokens (122942 in the "
        "messages, 8192 in the completion). Please reduce the length of the messages or completion.",
        131072,
        122942,
        id="deepseek",
    ),
    # vLLM v0.10.2-v0.17 entrypoints/openai/serving_engine.py, the prompt alone
    pytest.param(
        "This model's maximum context length is 8192 tokens. However, your request has 9000 input tokens. Please "
        "reduce the length of the input messages.",
        8192,
        9000,
        id="vllm-0.10-prompt",
    ),
    # vLLM v0.10.2-v0.17, prompt + max_tokens: 2000 is max_tokens, never the window
    pytest.param(
        "'max_tokens' or 'max_completion_tokens' is too large: 2000. This model's maximum context length is 10000 "
        "tokens and your request has 9000 input tokens (2000 > 10000 - 9000).",
        10000,
        9000,
        id="vllm-0.10-max-tokens",
    ),
    # vLLM 0.18+ (AIDotNet/OpenCowork#82)
    pytest.param(
        "This model's maximum context length is 131072 tokens. However, you requested 102400 output tokens and your "
        "prompt contains at least 28673 input tokens, for a total of at least 131073 tokens. Please reduce the "
        "length of the input prompt or the number of requested output tokens. (parameter=input_tokens, value=28673)",
        131072,
        28673,
        id="vllm-0.18",
    ),
    # vllm/renderers/params.py TokenizeParams._token_len_check
    pytest.param(
        "You passed 9000 input tokens and requested 2000 output tokens. However, the model's context length is only "
        "10000 tokens, resulting in a maximum input length of 8000 tokens. Please reduce the length of the input "
        "prompt. (parameter=input_tokens, value=9000)",
        10000,
        9000,
        id="vllm-renderer",
    ),
    # vllm/renderers/params.py TokenizeParams.__post_init__: max_tokens alone past the window
    pytest.param(
        "max_tokens=12000cannot be greater than max_model_len=max_total_tokens=8192. Please request fewer output "
        "tokens. (parameter=max_tokens, value=12000)",
        8192,
        None,
        id="vllm-renderer-max-tokens",
    ),
    # vLLM's input processor (vllm/v1/engine/processor.py)
    pytest.param(
        "The decoder prompt (length 12324) is longer than the maximum model length of 8192. Make sure that "
        "`max_model_len` is no smaller than the number of text tokens.",
        8192,
        12324,
        id="vllm-decoder-prompt",
    ),
    # vllm-project/vllm#12165 (vLLM's input processor, multimodal models)
    pytest.param(
        "The prompt (total length 25938) is too long to fit into the model (context length 4096). Make sure that "
        "`max_model_len` is no smaller than the number of text tokens plus multimodal tokens.",
        4096,
        25938,
        id="vllm-total-length",
    ),
    # lm-sys/FastChat#2432 (vLLM's older body: {"object": "error", "message": ..., "code": 40303})
    pytest.param(
        "This model's maximum context length is 2048 tokens. However, you requested 3583 tokens (583 in the "
        "messages, 3000 in the completion). Please reduce the length of the messages or completion.",
        2048,
        583,
        id="vllm-older",
    ),
    # Josh-XT/AGiXT#24 (llama-cpp-python's server, llama_cpp/llama.py _create_completion)
    pytest.param("Requested tokens (2214) exceed context window of 2000", 2000, 2214, id="llama-cpp-python"),
    # SGLang tokenizer_manager.py _validate_one_request, the prompt alone (Together answers the same)
    pytest.param(
        "The input (516368 tokens) is longer than the model's context length (262144 tokens).",
        262144,
        516368,
        id="sglang-together-input",
    ),
    # SGLang tokenizer_manager.py, prompt + max_new_tokens
    pytest.param(
        "Requested token count exceeds the model's maximum context length of 65536 tokens. You requested a total of "
        "67298 tokens: 50914 tokens from the input messages and 16384 tokens for the completion. Please reduce the "
        "number of tokens in the input messages or the completion to fit within the limit.",
        65536,
        50914,
        id="sglang-total",
    ),
    # llama.cpp tools/server/server-context.cpp (ERROR_TYPE_EXCEED_CONTEXT_SIZE)
    pytest.param(
        "request (13392 tokens) exceeds the available context size (8192 tokens), try increasing it",
        8192,
        13392,
        id="llama-cpp",
    ),
    # llama.cpp builds without numbers in the message (they are the body's fields: test_overflow_bodies.py)
    pytest.param(
        "the request exceeds the available context size, try increasing it", None, None, id="llama-cpp-no-numbers"
    ),
    # llama.cpp server-context.cpp, a task that cannot be split (embeddings)
    pytest.param(
        "input (9000 tokens) is larger than the max context size (8192 tokens). skipping",
        8192,
        9000,
        id="llama-cpp-max-context-size",
    ),
    # huggingface/text-generation-inference router/src/validation.rs MaxTotalTokens (huggingface/llm-vscode#94)
    pytest.param(
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 2048. Given: 3474 `inputs` tokens "
        "and 60 `max_new_tokens`",
        2048,
        3474,
        id="tgi-max-total-tokens",
    ),
    # TGI validation.rs InputLength (`--max-input-tokens`)
    pytest.param(
        "Input validation error: `inputs` must have less than 1024 tokens. Given: 1500", 1024, None, id="tgi-input"
    ),
    # LM Studio
    pytest.param(
        "Trying to keep the first 6269 tokens when context the overflows. However, the model is loaded with context "
        "length of only 4096 tokens, which is not enough. Try to load the model with a larger context length, or "
        "provide a shorter input",
        4096,
        6269,
        id="lm-studio",
    ),
    # lmstudio-ai/model-catalog#38 (LM Studio's older builds)
    pytest.param("Input length 1581 exceeds context length 1500", 1500, 1581, id="lm-studio-older"),
    # openclaude issue 353 (Gitlawb/openclaude, LM Studio 0.4)
    pytest.param(
        "The number of tokens to keep from the initial prompt is greater than the context length (n_keep: 13055>= "
        "n_ctx: 4096). Try to load the model with a larger context length, or provide a shorter input.",
        4096,
        13055,
        id="lm-studio-n-ctx",
    ),
    # anomalyco/opencode#11141 (LM Studio 0.4.6)
    pytest.param("Cannot truncate prompt with n_keep (15028) >= n_ctx (7424)", 7424, 15028, id="lm-studio-n-keep"),
    pytest.param(
        "The number of tokens to keep from the initial prompt is greater than the context length.",
        None,
        None,
        id="lm-studio-keep",
    ),
    # ollama/ollama llm/llama_server.go (0.30.9 and later, context shift off)
    pytest.param(
        "the prompt is longer than the context length currently available to the model; shorten the prompt, adjust "
        "the context length in settings, or use a model with a longer context length",
        None,
        None,
        id="ollama",
    ),
    # Ollama's cloud models, as its Python client raises them ("ResponseError: ... (status code: 400)")
    pytest.param(
        "The prompt is too long: 262960, model maximum context length: 262144", 262144, 262960, id="ollama-cloud"
    ),
    # earendil-works/pi#102
    pytest.param("prompt is too long: 219898 tokens > 200000 maximum", 200000, 219898, id="anthropic"),
    # anymorph-ai/Claudable#3
    pytest.param(
        "input length and max_tokens exceed context limit: 198981 + 21333 > 200000, decrease input length or "
        "max_tokens and try again",
        200000,
        198981,
        id="anthropic-max-tokens",
    ),
    # Bedrock Converse ValidationException (API reference)
    pytest.param("Input is too long for requested model.", None, None, id="bedrock"),
    # daisuke-awaji/moca#254
    pytest.param(
        "The model returned the following errors: prompt is too long: 200049 tokens > 200000 maximum",
        200000,
        200049,
        id="bedrock-claude",
    ),
    # strands-agents/sdk-python src/strands/models/bedrock.py BEDROCK_CONTEXT_WINDOW_OVERFLOW_MESSAGES
    pytest.param("too many total text bytes", None, None, id="bedrock-text-bytes"),
    # google-gemini/gemini-cli#6678 (Gemini), and AI Studio without the prompt's count
    pytest.param(
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
        1048576,
        1200293,
        id="gemini",
    ),
    pytest.param(
        "The input token count exceeds the maximum number of tokens allowed (1048576).",
        1048576,
        None,
        id="gemini-ai-studio",
    ),
    # Mistral
    pytest.param(
        "Prompt contains 33796 tokens and 0 draft tokens, too large for model with 32768 maximum context length",
        32768,
        33796,
        id="mistral",
    ),
    # cline/cline#3120 (xAI)
    pytest.param(
        "This model's maximum prompt length is 131072 but the request contains 136973 tokens.",
        131072,
        136973,
        id="xai",
    ),
    # OpenHands/OpenHands#1902 (Groq; its body's code is context_length_exceeded, the message alone is read too)
    pytest.param("Please reduce the length of the messages or completion.", None, None, id="groq"),
    # Aider-AI/aider#3721 (OpenRouter)
    pytest.param(
        "This endpoint's maximum context length is 131072 tokens. However, you requested about 141607 tokens "
        '(10535 of text input, 131072 in the output). Please reduce the length of either one, or use the "middle-out"'
        " transform to compress your prompt automatically.",
        131072,
        10535,
        id="openrouter",
    ),
    # cline/cline#5140 (Cerebras)
    pytest.param(
        "Please reduce the length of the messages or completion. Current length is 42328 while limit is 40000",
        40000,
        42328,
        id="cerebras",
    ),
    # BerriAI/litellm#4934 (Together's TGI-served models)
    pytest.param(
        "Input validation error: `inputs` tokens + `max_new_tokens` must be <= 4097. Given: 80125 `inputs` tokens "
        "and 4096 `max_new_tokens`",
        4097,
        80125,
        id="together-tgi",
    ),
    # MoonshotAI/MoonshotAI-Cookbook#18 (moonshot-v1-8k)
    pytest.param("model max length exceeded, max length:8192", 8192, None, id="moonshot-v1"),
    # Cohere (a real reply through Hugging Face's router); "size limit exceeded by" counts the excess
    pytest.param(
        "too many tokens: size limit exceeded by 105000 tokens. Try using shorter or fewer inputs. The limit for "
        "this model is 8992 tokens.",
        8992,
        None,
        id="cohere",
    ),
    pytest.param(
        "too many tokens: size limit exceeded by 11326 tokens. Try using shorter or fewer inputs, or setting "
        "prompt_truncation='AUTO'.",
        None,
        None,
        id="cohere-excess-only",
    ),
    # docs.cohere.com/reference/errors
    pytest.param(
        "too many tokens: total number of tokens in the prompt cannot exceed 4081 - received 4292. Try using a "
        "shorter prompt, or enabling prompt truncating. See https://docs.cohere.com/reference/generate for more "
        "details.",
        4081,
        4292,
        id="cohere-older",
    ),
    # MoonshotAI/kimi-cli#2011 (Moonshot/Kimi)
    pytest.param(
        "Invalid request: Your request exceeded model token limit: 262144 (requested: 291351)",
        262144,
        None,
        id="moonshot",
    ),
    # DashScope/Qwen (Alibaba Cloud Model Studio error codes)
    pytest.param("Range of input length should be [1, 30720]", 30720, None, id="dashscope"),
    # jjleng/copilot-more#35
    pytest.param("prompt token count of 93854 exceeds the limit of 90000", 90000, 93854, id="github-copilot"),
    # z.ai (code 1261)
    pytest.param("Prompt exceeds max length", None, None, id="zai"),
]


@pytest.mark.parametrize(("message", "window", "prompt"), REFUSALS)
def test_a_real_refusal_is_an_overflow_and_its_window_and_prompt_size_are_read(
    message: str, window: int | None, prompt: int | None
) -> None:
    # Given a server's refusal of a request longer than the window, as Stepwise's error text carries it
    text = f"model m: HTTP 400 invalid_request_error: {message}"
    # When it is read, and when the OpenAI-compatible client classifies it
    error = openai_error("m", 400, "invalid_request_error", message)
    # Then it is an overflow, the window is the one it states (None where it states none), the error carries it
    # and the prompt size, and the estimates are raised by that size (1.0 here, the floor, where it states none)
    assert is_context_overflow(text)
    assert stated_window(text) == window
    assert isinstance(error, ContextWindowExceeded) and (error.window, error.prompt_tokens) == (window, prompt)
    raised = overflow_safety(error.prompt_tokens, 100, 1.0)
    assert raised == (pytest.approx(prompt / 100 * 1.05) if prompt else 1.0)


@pytest.mark.parametrize(
    "message",
    [
        # Groq's per-minute limit (413, code rate_limit_exceeded): 8192 is in the model's name
        "Request too large for model `llama3-70b-8192` in organization `org_x` service tier `on_demand` on tokens "
        "per minute (TPM): Limit 6000, Requested 7000, please reduce your message size and try again.",
        # DashScope's output cap
        "Range of max_tokens should be [1, 8192]",
        # TGI's output cap
        "Input validation error: `max_new_tokens` must be <= 4096. Given: 5000",
        # Groq's output cap (Alishahryar1/free-claude-code#955)
        "max_completion_tokens must be less than or equal to 40960, the maximum value for max_completion_tokens is "
        "less than the context_window for this model",
        # Ollama's cloud models' output cap (DaviRain-Su/hyper-grok-build#44)
        "max_tokens (384000) exceeds model's maximum output tokens (65536) for model deepseek-v4-flash:0731",
    ],
    ids=[
        "groq-tokens-per-minute",
        "dashscope-max-tokens",
        "tgi-max-new-tokens",
        "groq-max-tokens",
        "ollama-max-tokens",
    ],
)
def test_a_limit_that_is_not_the_window_is_neither_an_overflow_nor_a_window(message: str) -> None:
    # Given a refusal for another limit, with numbers in it / When it is read / Then no overflow and no window
    assert not is_context_overflow(message)
    assert stated_window(message) is None


@pytest.mark.parametrize(
    "message",
    [
        # Cohere: 4096 is the output cap, 8192 the max_tokens asked
        "too many tokens: max tokens must be less than or equal to 4096, the maximum output for this model - "
        "received 8192.",
        # a status and an error code in the text, and no window stated
        "model m: HTTP 400 3051: Your input exceeds the context window of this model.",
        # Gemini's list body when it reached the text whole: the status code is not the window
        '[{"error": {"code": 400, "message": "The input token count exceeds the maximum number of tokens allowed.", '
        '"status": "INVALID_ARGUMENT"}}]',
        # llama.cpp's trained size is not the window it serves
        "request exceeds the available context size (n_ctx_train: 131072)",
    ],
    ids=["cohere-max-output", "status-and-code", "gemini-list-without-window", "llama-cpp-n-ctx-train"],
)
def test_a_number_that_is_not_the_window_is_never_read_as_one(message: str) -> None:
    # Given a refusal whose numbers are a status, a code, an output cap or a trained size / Then no window
    assert stated_window(message) is None


@pytest.mark.parametrize(
    ("message", "window"),
    [
        # Titan and Mistral through InvokeModel (their error text as client suites and eval logs record it)
        (
            "400 Bad Request: Too many input tokens. Max input tokens: 4096, request input token count: 7262",
            4096,
        ),
        # strands-agents/harness-sdk#3969: models Bedrock serves through Mantle answer in vLLM's words
        (
            "Mantle streaming error for requestId 1: \"This model's maximum context length is 202752 tokens. However, "
            "you requested 65536 output tokens and your prompt contains at least 137217 input tokens, for a total of "
            "at least 202753 tokens. Please reduce the length of the input prompt or the number of requested output "
            'tokens. (parameter=input_tokens, value=137217)"',
            202752,
        ),
        # strands-agents/harness-sdk#1663 (Claude Opus 4.6 through ConverseStream)
        ("The model returned the following errors: prompt is too long: 903884 tokens > 200000 maximum", 200000),
    ],
    ids=["titan", "mantle", "claude"],
)
def test_bedrocks_validation_exception_for_a_long_prompt_is_an_overflow_stating_its_window(
    message: str, window: int
) -> None:
    # Given Bedrock's ValidationException for a prompt past the window / When it is classified
    error = bedrock_error("m", 400, "ValidationException", message)
    # Then it is a context overflow carrying the window
    assert isinstance(error, ContextWindowExceeded) and error.window == window
