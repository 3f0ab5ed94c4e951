"""How a profile keeps a run's conversation within its model's context window (the profile's `context:`).

The window and the largest output come from the profile, else the model's entry in `models:`, else the
model catalog; without a window nothing is estimated, fitted or summarized. Everything is counted in
tokens as `stepwise.steps.token_estimate` estimates them.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict, Field

# A summary's own budget when the profile does not set one: a tenth of the window, within these bounds.
_SUMMARY_SHARE = 0.1
_SUMMARY_TOKENS_MIN = 256
_SUMMARY_TOKENS_MAX = 4000
# A session's earlier turns, when the profile does not set a budget: a quarter of the window, or this many
# tokens when the window is not known.
_SESSION_SHARE = 0.25
DEFAULT_SESSION_TOKENS = 8000


class ContextSettings(BaseModel):
    """A profile's `context:` section."""

    model_config = ConfigDict(extra="forbid", defer_build=True)

    window_tokens: int | None = Field(
        default=None, ge=1024, le=100_000_000, description="The model's context window, over the model's and catalog's."
    )
    compact_at: float = Field(default=0.75, ge=0.3, le=0.95)
    min_output_tokens: int = Field(default=512, ge=16, le=1_000_000)
    compaction: bool = True
    summary_model: str | None = Field(default=None, min_length=1)
    summary_tokens: int | None = Field(default=None, ge=128, le=32_000)
    session_tokens: int | None = Field(default=None, ge=0, le=10_000_000)


@dataclass(frozen=True)
class ContextLimits:
    """A profile's context settings resolved against its model: the numbers the loop works with.

    `window` is None when neither the profile, the model's entry nor the catalog knows it: then requests
    are sent as built (no `max_tokens` fitting, no compaction).
    """

    window: int | None
    max_output: int | None
    min_output: int
    compact_at: int | None
    compaction: bool
    summary_model: str
    summary_window: int | None
    summary_tokens: int
    session_tokens: int

    @classmethod
    def resolve(
        cls,
        settings: ContextSettings,
        *,
        window: int | None,
        max_output: int | None,
        summary_model: str,
        summary_window: int | None,
    ) -> ContextLimits:
        """The limits of a profile whose model has `window` and `max_output` (None when not known)."""
        window = settings.window_tokens or window
        # the floor never takes more than half the window: what is left is the conversation's
        min_output = settings.min_output_tokens if window is None else min(settings.min_output_tokens, window // 2)
        compact_at = None if window is None else min(int(window * settings.compact_at), window - min_output)
        summary_tokens = settings.summary_tokens or (
            _SUMMARY_TOKENS_MAX
            if window is None
            else max(_SUMMARY_TOKENS_MIN, min(_SUMMARY_TOKENS_MAX, int(window * _SUMMARY_SHARE)))
        )
        if settings.session_tokens is not None:
            session_tokens = settings.session_tokens
        else:
            session_tokens = DEFAULT_SESSION_TOKENS if window is None else int(window * _SESSION_SHARE)
        return cls(
            window=window,
            max_output=max_output,
            min_output=min_output,
            compact_at=compact_at,
            compaction=settings.compaction and window is not None,
            summary_model=summary_model,
            summary_window=summary_window or window,
            summary_tokens=summary_tokens,
            session_tokens=session_tokens,
        )
