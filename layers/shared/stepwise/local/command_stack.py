"""What `stepwise eval` and `stepwise replay` run on: the store, the example tool API when asked, and the
local environment on a configuration file (each command checks the models it will use first,
`stepwise.config.model_reach`)."""

from __future__ import annotations

import argparse
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

from stepwise.errors import UsageError
from stepwise.local.defaults import DEMO_CONFIG
from stepwise.local.environment import LocalEnvironment
from stepwise.local.example_api import ExampleToolApi
from stepwise.local.store_options import store_endpoint

EXAMPLE_API_VARIABLE = "STEPWISE_EXAMPLE_API_URL"


def add_config_arguments(parser: argparse.ArgumentParser, default_config: Path) -> None:
    """`--config`, and `--example-api` for a configuration whose tools are the demo's example API."""
    parser.add_argument("--config", default=str(default_config), help=f"the configuration (default {default_config})")
    parser.add_argument(
        "--example-api",
        action="store_true",
        help=f"start the demo's example tool API and set ${EXAMPLE_API_VARIABLE} to it (on for config/demo.yaml)",
    )


def config_path(args: argparse.Namespace) -> Path:
    """`--config` as an existing file; `UsageError` naming the option otherwise."""
    path = Path(args.config).resolve()
    if not path.is_file():
        raise UsageError(f"--config {args.config}: no such file")
    return path


@contextmanager
def local_stack(
    args: argparse.Namespace,
    path: Path,
    *,
    endpoint_url: str | None = None,
    extra_environment: Mapping[str, str] | None = None,
) -> Iterator[LocalEnvironment]:
    """The local environment on the configuration `path`, over the command's store (`endpoint_url` when
    the caller opened it already); the example API runs beside it with `--example-api` or the demo's
    configuration. `extra_environment` is set for the handlers too (a profile changed in memory)."""
    with ExitStack() as stack:
        extra = dict(extra_environment or {})
        if args.example_api or Path(args.config).resolve() == DEMO_CONFIG:
            extra[EXAMPLE_API_VARIABLE] = stack.enter_context(ExampleToolApi()).url
        if endpoint_url is None:
            endpoint_url = stack.enter_context(store_endpoint(args))
        yield stack.enter_context(
            LocalEnvironment(
                config_dir=path.parent,
                config_file=path.name,
                dynamodb_endpoint_url=endpoint_url,
                table_name=args.table_name,
                extra_environment=extra,
            )
        )
