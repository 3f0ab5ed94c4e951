"""Before a command asks its questions: can the models it will use work here at all?

Only the models a command will use are checked: `stepwise run --profile P` those of P; a question asked
without a profile those of the profiles routing can reach (classified and routed as `POST /v1/runs` does);
`stepwise eval` those of its suite's profiles and its judge. A profile that cannot work is refused only when
the command needs it; one that routing might reach, beside others that work, is a warning, and `stepwise
config check` reports every such profile.

A Bedrock model needs AWS credentials (the SDK's own chain) and a Region (`stepwise.config.aws_region`); an
OpenAI-compatible endpoint must accept a TCP connection within `PROBE_TIMEOUT_SECONDS`, long enough for a
loaded machine's server to answer (a refused connection is answered at once, so a stopped server is still
told in well under a second); a scripted model always works. Without the check a run with no credentials
spends its retries (about 20 s with Bedrock) before it fails.
"""

from __future__ import annotations

import os
import socket
import sys
from collections.abc import Iterable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlsplit

from stepwise.config.aws_region import NoRegion, bedrock_region
from stepwise.config.llm import BedrockModelConfig, OpenAIModelConfig
from stepwise.config.model import StepwiseConfig
from stepwise.errors import UsageError

HOW_TO_CONFIGURE = (
    "configure one: STEPWISE_DEFAULT_MODEL=openai OPENAI_BASE_URL=… OPENAI_API_KEY=… for an OpenAI-compatible "
    "endpoint, or AWS credentials (AWS_PROFILE, AWS_ACCESS_KEY_ID…) for Bedrock"
)
# A server that is up answers a connection at once even when its machine is busy; 0.5 s once called a running,
# loaded one unreachable. Only an endpoint that drops the connection silently makes the check wait this long.
PROBE_TIMEOUT_SECONDS = 5.0


def _bedrock_problem(name: str, config: BedrockModelConfig) -> str | None:
    import boto3  # deferred: only a Bedrock model needs it
    from botocore.exceptions import BotoCoreError

    # The SDK's own chain, as the Bedrock client will use it: environment, AWS_PROFILE, SSO, config files.
    try:
        credentials = boto3.session.Session().get_credentials()
    except BotoCoreError as exc:  # a profile that names an unknown profile, an SSO session that expired
        return f"model '{name}' is Bedrock and its AWS credentials cannot be read ({exc}); {HOW_TO_CONFIGURE}"
    if credentials is None:
        return f"model '{name}' is Bedrock and no AWS credentials were found; {HOW_TO_CONFIGURE}"
    try:
        bedrock_region(name, config.region, environ=os.environ)
    except NoRegion as exc:
        return str(exc)
    return None


def _endpoint_problem(name: str, config: OpenAIModelConfig, timeout: float) -> str | None:
    url = urlsplit(str(config.base_url))
    port = url.port or (443 if url.scheme == "https" else 80)
    try:
        with socket.create_connection((url.hostname or "", port), timeout=timeout):
            return None
    except OSError as exc:
        reason = exc.strerror or str(exc) or type(exc).__name__
        where = f"{url.scheme}://{url.netloc}"
        return f"model '{name}' at {where} cannot be reached ({reason}); {HOW_TO_CONFIGURE}"


def profile_models(config: StepwiseConfig, profile: str) -> list[str]:
    """The models a run of `profile` calls: its own, and the one that summarizes its conversation."""
    agent = config.profiles[profile]
    return list(dict.fromkeys(name for name in (agent.model, agent.context.summary_model) if name is not None))


def routable_profiles(config: StepwiseConfig) -> list[str]:
    """The profiles a question asked without one may be routed to: the default, and each route's when the
    configuration classifies questions (without classification no route can match)."""
    routed = [route.profile for route in config.routes] if config.intent is not None else []
    return list(dict.fromkeys([config.default_profile, *routed]))


class ModelReach:
    """Which of a configuration's models cannot work here, each model (in each Region) checked once."""

    def __init__(self, config: StepwiseConfig, *, timeout: float = PROBE_TIMEOUT_SECONDS) -> None:
        self._config = config
        self._timeout = timeout
        self._problems: dict[tuple[str, str | None], str | None] = {}

    def _key(self, model: str, profile: str | None) -> tuple[str, str | None]:
        return model, getattr(self._config.model_for(model, profile), "region", None)

    def _problem(self, model: str, profile: str | None) -> str | None:
        config = self._config.model_for(model, profile)
        if isinstance(config, BedrockModelConfig):
            return _bedrock_problem(model, config)
        if isinstance(config, OpenAIModelConfig):
            return _endpoint_problem(model, config, self._timeout)
        return None

    def check(self, uses: Iterable[tuple[str, str | None]]) -> None:
        """Check each (model, profile) of `uses` not checked yet, at the same time (a slow endpoint makes the
        whole check wait once, not once per model)."""
        pending = {self._key(model, profile): (model, profile) for model, profile in uses}
        pending = {key: use for key, use in pending.items() if key not in self._problems}
        if not pending:
            return
        with ThreadPoolExecutor(max_workers=len(pending), thread_name_prefix="model-reach") as pool:
            results = pool.map(lambda use: self._problem(*use), pending.values())
            self._problems.update(zip(pending, results, strict=True))

    def model_problem(self, model: str, profile: str | None = None) -> str | None:
        """Why `model`, called by `profile`, cannot work here; None when it can."""
        self.check([(model, profile)])
        return self._problems[self._key(model, profile)]

    def profile_problem(self, profile: str) -> str | None:
        """Why a run of `profile` cannot work here (its first model that cannot); None when it can."""
        models = profile_models(self._config, profile)
        self.check((model, profile) for model in models)
        return next((problem for model in models if (problem := self.model_problem(model, profile))), None)


@dataclass(frozen=True)
class Preflight:
    """What a command is told before it starts: why it cannot run, or what may fail while it runs."""

    refusal: str | None = None
    warnings: list[str] = field(default_factory=list)


def preflight(
    config: StepwiseConfig,
    *,
    profiles: Iterable[str | None] = (),
    routed: bool = False,
    models: Iterable[str] = (),
    timeout: float = PROBE_TIMEOUT_SECONDS,
) -> Preflight:
    """Check what a command will use: each of `profiles` (a name the configuration does not have is left to
    the command, which says so its own way), the profiles routing can reach when `routed` (a question is
    asked without a profile), and `models` called outside any profile (an eval's judge).

    Refused when a named profile or model cannot work, or when no profile routing can reach can; a routable
    profile that cannot work beside others that can is a warning.
    """
    reach = ModelReach(config, timeout=timeout)
    named = [name for name in dict.fromkeys(profiles) if name is not None and name in config.profiles]
    routable = routable_profiles(config) if routed else []
    extra = [name for name in dict.fromkeys(models) if name in config.models]
    reach.check(
        [
            (model, profile)
            for profile in dict.fromkeys([*named, *routable])
            for model in profile_models(config, profile)
        ]
        + [(model, None) for model in extra]
    )
    for profile in named:
        problem = reach.profile_problem(profile)
        if problem is not None:
            return Preflight(f"profile '{profile}' cannot work: {problem}")
    for model in extra:
        problem = reach.model_problem(model)
        if problem is not None:
            return Preflight(problem)
    failing = {profile: problem for profile in routable if (problem := reach.profile_problem(profile)) is not None}
    if routable and len(failing) == len(routable):
        profile, problem = next(iter(failing.items()))
        others = f" (nor can the {len(routable) - 1} other profile(s) a route leads to)" if len(routable) > 1 else ""
        return Preflight(f"profile '{profile}' cannot work{others}: {problem}")
    return Preflight(
        warnings=[
            f"profile '{profile}' cannot work, so a question routed to it fails: {problem}"
            for profile, problem in failing.items()
        ]
    )


def require(result: Preflight, command: str) -> None:
    """Raise the refusal (`UsageError`, one line); else say each warning on stderr, one line each."""
    if result.refusal is not None:
        raise UsageError(result.refusal)
    for warning in result.warnings:
        print(f"stepwise {command}: warning: {warning}", file=sys.stderr, flush=True)


def profile_problems(config: StepwiseConfig, *, timeout: float = PROBE_TIMEOUT_SECONDS) -> dict[str, str]:
    """Every profile of the configuration that cannot work here, and why (what `config check` reports)."""
    reach = ModelReach(config, timeout=timeout)
    reach.check((model, profile) for profile in config.profiles for model in profile_models(config, profile))
    return {profile: problem for profile in config.profiles if (problem := reach.profile_problem(profile)) is not None}


def unreachable_model_in(config_path: Path) -> str | None:
    """One line on the profiles of the configuration file at `config_path` that cannot work here (`stepwise
    serve` serves them all); None when every one can. `ConfigError` if the file is unusable."""
    from stepwise.config.loading import read_config_file

    problems = profile_problems(read_config_file(config_path).config)
    if not problems:
        return None
    (profile, problem), more = next(iter(problems.items())), len(problems) - 1
    rest = f" (and {more} other profile(s): stepwise config check lists them)" if more else ""
    return f"profile '{profile}' cannot work{rest}: {problem}"
