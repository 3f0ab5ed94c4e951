"""Settings read once from the environment by each handler; logic receives them, never `os.environ`."""

from collections.abc import Mapping
from pathlib import Path
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field, Json, ValidationError

from stepwise.config.aws_region import environment_region
from stepwise.config.profile_variant import VARIANT_VARIABLE, ProfileVariant
from stepwise.errors import ConfigError

_ENVIRONMENT_NAMES = {
    "table_name": "TABLE_NAME",
    "dynamodb_endpoint_url": "DYNAMODB_ENDPOINT_URL",
    "config_dir": "STEPWISE_CONFIG_DIR",
    "config_file": "STEPWISE_CONFIG_FILE",
    "state_machine_arn": "STATE_MACHINE_ARN",
    "stepfunctions_endpoint_url": "STEPFUNCTIONS_ENDPOINT_URL",
    "run_ttl_days": "RUN_TTL_DAYS",
    "workflow_type": "WORKFLOW_TYPE",
    "otel": "STEPWISE_OTEL",
    "local_endpoints": "STEPWISE_LOCAL_ENDPOINTS",
    "profile_variant": VARIANT_VARIABLE,
}

# Where OTLP spans go: with one of these and no OTEL_TRACES_EXPORTER, spans are exported over OTLP, as under
# `opentelemetry-instrument` (whose distro makes `otlp` the default exporter).
OTLP_ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT")

# What local stand-ins of AWS services (the embedded DynamoDB, the local Step Functions endpoint) are
# signed with: they check no signature, and a fixed region keeps the local table where it was whatever
# region the caller's own AWS configuration names.
PLACEHOLDER_KEY = "local"
LOCAL_ENDPOINT_REGION = "us-east-1"


class ServiceIdentity(NamedTuple):
    """What a boto3 client of the store or the state machine is signed with; None keys: the SDK's chain."""

    region_name: str
    aws_access_key_id: str | None = None
    aws_secret_access_key: str | None = None


class Settings(BaseModel):
    """Where the table, the configuration and the state machine are."""

    table_name: str = Field(min_length=3, max_length=255)
    dynamodb_endpoint_url: str | None = None
    # AWS_REGION, else AWS_DEFAULT_REGION (`stepwise.config.aws_region`); Lambda sets both
    aws_region: str = "us-east-1"
    config_dir: Path = Path("/opt")
    config_file: str = "stepwise.yaml"
    state_machine_arn: str | None = None
    stepfunctions_endpoint_url: str | None = None
    run_ttl_days: int = Field(default=30, ge=1, le=3650)
    workflow_type: Literal["STANDARD", "EXPRESS"] = "STANDARD"
    # The run's spans (OpenTelemetry); OpenTelemetry is imported only when true. Set by STEPWISE_OTEL, or
    # when STEPWISE_OTEL is unset by an OTEL_TRACES_EXPORTER other than `none`, or an OTLP endpoint alone.
    otel: bool = False
    # True in local runs: the DynamoDB and Step Functions endpoints are local stand-ins, sent requests that name
    # the placeholder keys and carry no signature (they check none); every other AWS client (Bedrock, SSM,
    # Secrets Manager, S3) keeps the caller's identity.
    local_endpoints: bool = False
    # One profile changed in memory over the configuration file (`stepwise replay --model`, local runs only).
    profile_variant: Json[ProfileVariant] | None = None

    @property
    def config_path(self) -> Path:
        """The configuration file."""
        return self.config_dir / self.config_file

    def emulated_service_identity(self) -> ServiceIdentity:
        """What the store's and the state machine's clients are signed with: the placeholder identity in local
        runs, else the region (credentials from the SDK's chain, as on Lambda)."""
        if self.local_endpoints:
            return ServiceIdentity(LOCAL_ENDPOINT_REGION, PLACEHOLDER_KEY, PLACEHOLDER_KEY)
        return ServiceIdentity(self.aws_region)

    @classmethod
    def from_environ(cls, environ: Mapping[str, str]) -> "Settings":
        """Read the settings from environment variables (names in `_ENVIRONMENT_NAMES`)."""
        values = {field: environ[name] for field, name in _ENVIRONMENT_NAMES.items() if environ.get(name)}
        region = environment_region(environ)
        if region is not None:
            values["aws_region"] = region
        exporter = environ.get("OTEL_TRACES_EXPORTER", "").strip().lower()
        if "otel" not in values and (exporter not in ("", "none") or otlp_by_endpoint(environ)):
            values["otel"] = "true"
        try:
            return cls.model_validate(values)
        except ValidationError as exc:
            problems = "; ".join(
                f"{_ENVIRONMENT_NAMES.get(str(err['loc'][0]), err['loc'][0])}: {err['msg']}" for err in exc.errors()
            )
            raise ConfigError(f"invalid environment: {problems}") from None


def otlp_by_endpoint(environ: Mapping[str, str]) -> bool:
    """True when the environment names an OTLP endpoint and no trace exporter: spans then go over OTLP."""
    named = environ.get("OTEL_TRACES_EXPORTER", "").strip()
    return not named and any(environ.get(name, "").strip() for name in OTLP_ENDPOINT_VARIABLES)
