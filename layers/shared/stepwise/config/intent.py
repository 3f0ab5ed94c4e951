"""Configuration of intent classification and of routing a classified question to an agent profile.

Two spellings are accepted for the same settings. Stepwise's own form (snake_case, `model:` naming an
entry of the config's `models:` section, `categories:` at the top level) and the configuration of the
Higress `ai-intent` gateway plugin pasted as it is (`scene:`, an `llm:` block of `proxy*` settings,
`keyFrom:`, camelCase keys, numbers written as strings, and even the older `scene.category: "A|B|C"`).
"""

import re
from typing import Any, Literal, Self

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator
from pydantic.alias_generators import to_camel

from stepwise.patterns.linear import PatternError, check_pattern

DEFAULT_QUESTION_PATH = "messages.@reverse.0.content"
DEFAULT_ANSWER_PATH = "choices.0.message.content"

# Higress names the single category of its older `scene.category: "A|B|C"` form after the request
# property it sets, so routes written against that form keep their meaning here.
HIGRESS_SINGLE_CATEGORY = "intent_category"


class _ConfigModel(BaseModel):
    """Strict config model that reads both snake_case and camelCase keys and reports snake_case."""

    model_config = ConfigDict(
        extra="forbid",
        # validated as part of `StepwiseConfig`, whose schema holds it: no validator of its own until used alone
        defer_build=True,
        alias_generator=to_camel,
        populate_by_name=True,
        loc_by_alias=False,
    )


class Category(_ConfigModel):
    """One classification dimension: the model picks exactly one of `options` for `use_for`."""

    use_for: str = Field(min_length=1, max_length=128)
    options: list[str] = Field(min_length=1, max_length=100)
    default: str | None = None

    @field_validator("options")
    @classmethod
    def _options_are_distinct(cls, options: list[str]) -> list[str]:
        cleaned = [option.strip() for option in options]
        if any(not option for option in cleaned):
            raise ValueError("an option must not be empty")
        # Answers are matched case-insensitively, so options differing only in case could not be told apart.
        folded = [option.casefold() for option in cleaned]
        duplicates = sorted({option for option in cleaned if folded.count(option.casefold()) > 1})
        if duplicates:
            raise ValueError(f"options must be unique (ignoring case); repeated: {duplicates}")
        return cleaned

    @model_validator(mode="after")
    def _default_is_an_option(self) -> Self:
        if self.default is not None and self.default not in self.options:
            raise ValueError(f"default {self.default!r} is not one of the options {self.options}")
        return self

    @property
    def default_option(self) -> str:
        """The option used when classification gives no answer: `default`, else the last option."""
        return self.default if self.default is not None else self.options[-1]


class HigressLLMConfig(_ConfigModel):
    """The `llm:` block of the Higress plugin: an OpenAI-compatible chat completions endpoint.

    `proxy_service_name`, `proxy_domain` and `proxy_port` address the model through the gateway's own
    cluster in Higress; here the model is called at `proxy_url` directly, so they are accepted and kept
    but do not change where the call goes.
    """

    proxy_url: str = Field(min_length=1)
    proxy_model: str = Field(default="qwen-long", min_length=1)
    proxy_service_name: str | None = None
    proxy_domain: str | None = None
    proxy_port: int | None = Field(default=None, ge=0, le=65535)
    proxy_timeout: int = Field(default=10_000, gt=0, description="milliseconds")
    proxy_api_key: SecretStr | None = None

    @field_validator("proxy_url")
    @classmethod
    def _url_is_http(cls, url: str) -> str:
        if not re.match(r"^https?://[^/\s]+", url):
            raise ValueError("must be an http:// or https:// URL, e.g. http://host/v1/chat/completions")
        return url

    @property
    def base_url(self) -> str:
        """`proxy_url` without the `/chat/completions` the OpenAI-compatible client appends itself."""
        url = self.proxy_url.rstrip("/")
        suffix = "/chat/completions"
        return url[: -len(suffix)] if url.endswith(suffix) else url


class KeyFrom(_ConfigModel):
    """Where the question is in a request body, as a GJSON-like path (Higress `keyFrom`).

    `response_body` is accepted for compatibility only: providers already normalise the answer.
    """

    request_body: str = Field(default=DEFAULT_QUESTION_PATH, min_length=1)
    response_body: str = Field(default=DEFAULT_ANSWER_PATH, min_length=1)


class KeywordRule(_ConfigModel):
    """Choose `option` for `use_for` when any of `patterns` (regex, case-insensitive) is in the question.

    The patterns run on RE2 (time linear in the question); one RE2 cannot run is refused here.
    """

    use_for: str = Field(min_length=1)
    option: str = Field(min_length=1)
    patterns: list[str] = Field(min_length=1)

    @field_validator("patterns")
    @classmethod
    def _patterns_compile(cls, patterns: list[str]) -> list[str]:
        for pattern in patterns:
            if not pattern:
                raise ValueError("a pattern must not be empty")
            try:
                check_pattern(pattern, ignore_case=True)
            except PatternError as exc:
                raise ValueError(f"pattern {pattern!r}: {exc.reason}") from None
        return patterns


class Scene(_ConfigModel):
    """The Higress `scene:` block: categories (or the older pipe-separated `category`) and the prompt."""

    categories: list[Category] = Field(default_factory=list)
    category: str | None = None
    prompt: str | None = None

    @model_validator(mode="after")
    def _one_category_form(self) -> Self:
        if self.categories and self.category is not None:
            raise ValueError("give either categories or category, not both")
        return self

    def all_categories(self) -> list[Category]:
        """The categories, turning `category: "A|B|C"` into one category named `intent_category`."""
        if self.category is None:
            return list(self.categories)
        options = [option for option in self.category.split("|") if option.strip()]
        return [Category(use_for=HIGRESS_SINGLE_CATEGORY, options=options)]


class IntentConfig(_ConfigModel):
    """The `intent:` section of Stepwise's config (or a Higress `ai-intent` configuration as it is).

    After validation `categories` and `prompt` hold the effective values whether they were written at
    the top level or under `scene:` (which is then folded into them and left None).
    """

    mode: Literal["llm", "keywords", "off"] = "llm"
    model: str | None = Field(default=None, min_length=1)
    llm: HigressLLMConfig | None = None
    timeout_seconds: float = Field(default=3.0, gt=0, le=120)
    scene: Scene | None = None
    categories: list[Category] = Field(default_factory=list)
    prompt: str | None = None
    key_from: KeyFrom = Field(default_factory=KeyFrom)
    keywords: list[KeywordRule] = Field(default_factory=list)
    keywords_first: bool = False
    max_question_chars: int = Field(default=4000, ge=100, le=100_000)

    @model_validator(mode="after")
    def _resolve_and_check(self) -> Self:
        self._lift_scene()
        self._check_model_source()
        self._check_categories()
        self._check_keyword_rules()
        return self

    def _lift_scene(self) -> None:
        if self.scene is None:
            return
        scene_categories = self.scene.all_categories()
        if scene_categories and self.categories:
            raise ValueError("categories are given both under scene and at the top level; keep one")
        if self.scene.prompt is not None and self.prompt is not None:
            raise ValueError("prompt is given both under scene and at the top level; keep one")
        if scene_categories:
            self.categories = scene_categories
        if self.scene.prompt is not None:
            self.prompt = self.scene.prompt
        # Everything under scene now lives at the top level; dropping it keeps a dump re-validatable.
        self.scene = None

    def _check_model_source(self) -> None:
        if self.model is not None and self.llm is not None:
            raise ValueError("give either model (a name from models:) or llm (the Higress block), not both")
        if self.mode == "llm" and self.model is None and self.llm is None:
            raise ValueError("mode llm needs model (a name from models:) or an llm block")

    def _check_categories(self) -> None:
        if self.mode != "off" and not self.categories:
            raise ValueError(f"mode {self.mode} needs at least one category (categories or scene.categories)")
        names = [category.use_for for category in self.categories]
        repeated = sorted({name for name in names if names.count(name) > 1})
        if repeated:
            raise ValueError(f"categories: use_for must be unique; repeated: {repeated}")

    def _check_keyword_rules(self) -> None:
        if self.mode == "keywords" and not self.keywords:
            raise ValueError("mode keywords needs at least one rule under keywords")
        by_name = {category.use_for: category for category in self.categories}
        for index, rule in enumerate(self.keywords):
            category = by_name.get(rule.use_for)
            if category is None:
                raise ValueError(f"keywords.{index}.use_for: {rule.use_for!r} is not a configured category")
            if rule.option not in category.options:
                raise ValueError(
                    f"keywords.{index}.option: {rule.option!r} is not one of {rule.use_for} options {category.options}"
                )

    @property
    def model_label(self) -> str | None:
        """The name of the model that classifies: the `models:` entry, or the Higress `proxy_model`."""
        if self.model is not None:
            return self.model
        return self.llm.proxy_model if self.llm is not None else None

    def defaults(self) -> dict[str, str]:
        """Each category's default option, keyed by `use_for`."""
        return {category.use_for: category.default_option for category in self.categories}

    def llm_model_config(self) -> dict[str, Any] | None:
        """The Higress `llm` block as the dict of Stepwise's OpenAI-compatible model config, else None.

        The time limit is `proxy_timeout` when the block sets it, else this section's `timeout_seconds`:
        Higress's own default of 10 s is too long to hold a request before its run starts.
        """
        if self.llm is None:
            return None
        timeout_set = "proxy_timeout" in self.llm.model_fields_set
        timeout_seconds = self.llm.proxy_timeout / 1000 if timeout_set else self.timeout_seconds
        api_key = self.llm.proxy_api_key.get_secret_value() if self.llm.proxy_api_key is not None else ""
        return {
            "provider": "openai",
            "base_url": self.llm.base_url,
            "model": self.llm.proxy_model,
            "api_key": api_key or None,
            "timeout_seconds": timeout_seconds,
        }


class Route(_ConfigModel):
    """Send a run to `profile` when every `use_for: option` pair of `when` matches its intent."""

    when: dict[str, str] = Field(min_length=1)
    profile: str = Field(min_length=1)


class RoutingConfig(_ConfigModel):
    """The top-level `routes:` section: the first matching route wins, else the default profile."""

    routes: list[Route] = Field(default_factory=list)
