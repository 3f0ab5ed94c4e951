"""A profile's tool policy, as the configuration names it: `policy:` (a Cedar file or Cedar text) and
`policy_mode:`.

`policy: policies/payments.cedar` — one line ending in `.cedar` — is a file, relative to the configuration
file's folder; anything else is the policy's Cedar text itself. `policy_mode: enforce` (the default)
acts on the verdicts; `log_only` records them and runs every call as if permitted. Cedar itself is
known only to `stepwise.governance`, imported here only by the check and when a profile has a policy.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from stepwise.errors import ConfigError

if TYPE_CHECKING:
    from stepwise.config.model import AgentProfile
    from stepwise.governance.tool_policy import ToolPolicy
    from stepwise.models.messages import ToolSpec

__all__ = ["PolicySource", "check_policy", "load_policy", "policy_source"]

_MAX_POLICY_BYTES = 256 * 1024


@dataclass(frozen=True)
class PolicySource:
    """A policy's Cedar text and where it was read: its file, or the profile's field."""

    text: str
    origin: str


def is_policy_file(policy: str) -> bool:
    """True when `policy:` names a file rather than holding Cedar text."""
    return "\n" not in policy.strip() and policy.strip().endswith(".cedar")


def policy_source(profile_name: str, policy: str, config_dir: Path) -> PolicySource:
    """The profile's policy text; `ConfigError` naming the file when it cannot be read."""
    if not is_policy_file(policy):
        return PolicySource(policy, f"profiles.{profile_name}.policy")
    path = config_dir / policy.strip()
    try:
        size = path.stat().st_size
        if size > _MAX_POLICY_BYTES:
            raise ConfigError(f"{path}: the policy is {size} bytes; the limit is {_MAX_POLICY_BYTES}")
        return PolicySource(path.read_text(encoding="utf-8"), str(path))
    except OSError as exc:
        raise ConfigError(f"profiles.{profile_name}.policy: {path}: cannot read: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"profiles.{profile_name}.policy: {path}: not UTF-8 text (byte {exc.start})") from None


def load_policy(profile_name: str, profile: AgentProfile, config_dir: Path) -> ToolPolicy | None:
    """The profile's parsed policy (None without one); `ConfigError` naming the file and line when it
    does not parse."""
    if profile.policy is None:
        return None
    from stepwise.governance.policy_check import parse_problem
    from stepwise.governance.tool_policy import ToolPolicy

    source = policy_source(profile_name, profile.policy, config_dir)
    try:
        return ToolPolicy(source.text, profile.policy_mode)
    except ValueError as exc:
        raise ConfigError(f"{source.origin}: {parse_problem(source.text, exc)}") from None


def check_policy(profile_name: str, profile: AgentProfile, specs: list[ToolSpec], config_dir: Path) -> list[str]:
    """What `stepwise config check` says of the profile's policy: `ConfigError` for one that does not parse
    or does not validate against the schema generated from `specs` (the profile's tools); a warning per
    tool no `permit` can ever reach, and a note per policy the schema could not fully check."""
    if profile.policy is None:
        return []
    from stepwise.governance.policy_check import check_policy_text

    load_policy(profile_name, profile, config_dir)
    source = policy_source(profile_name, profile.policy, config_dir)
    problems, warnings = check_policy_text(source.text, specs)
    if problems:
        raise ConfigError(f"{source.origin}: does not validate against the profile's tools: {'; '.join(problems)}")
    return [f"profiles.{profile_name}.policy: {warning}" for warning in warnings]
