"""One profile of a configuration changed in memory: its model, its system prompt (`stepwise replay --model`,
`--system-prompt-file`).

The handlers read their configuration file, as on AWS; the change reaches them beside it, in the settings
(`STEPWISE_PROFILE_VARIANT`, read once like every setting), and is applied where the file is read
(`StepRuntime.from_settings`). Nothing is written: the file's folder may be read-only, and every other
profile is left exactly as the file has it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from stepwise.errors import ConfigError

if TYPE_CHECKING:
    from stepwise.config.model import StepwiseConfig

VARIANT_VARIABLE = "STEPWISE_PROFILE_VARIANT"


class ProfileVariant(BaseModel):
    """The profile `profile` with `model` and `system_prompt` instead of its own (None: unchanged)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    profile: str = Field(min_length=1)
    model: str | None = Field(default=None, min_length=1)
    system_prompt: str | None = None

    def applied_to(self, config: StepwiseConfig) -> StepwiseConfig:
        """`config` with the profile changed, checked as the file would be (the model exists, takes the
        profile's `reasoning:`...); `ConfigError` naming the field and the reason otherwise."""
        from stepwise.config.model import AgentProfile, StepwiseConfig
        from stepwise.inputs.validation_problems import reasons_of

        current = config.profiles.get(self.profile)
        if current is None:
            raise ConfigError(f"profiles: no profile '{self.profile}'; the profiles are {', '.join(config.profiles)}")
        changes = {"model": self.model, "system_prompt": self.system_prompt}
        settings = current.model_dump(exclude_unset=True) | {
            key: value for key, value in changes.items() if value is not None
        }
        try:
            profile = AgentProfile.model_validate(settings)
            # every other section as it was (already valid): only what the change breaks can be refused
            sections = {name: getattr(config, name) for name in config.model_fields_set}
            return StepwiseConfig.model_validate(sections | {"profiles": config.profiles | {self.profile: profile}})
        except ValidationError as exc:
            raise ConfigError(reasons_of(exc)) from None

    def environment(self) -> dict[str, str]:
        """The variable that gives the variant to the handlers of a local run."""
        return {VARIANT_VARIABLE: self.model_dump_json(exclude_none=True)}
