"""Which store a `stepwise` command uses: `--dynamodb-endpoint`, `--table-name`, `--data-dir`."""

from __future__ import annotations

import argparse
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stepwise.local.defaults import DEFAULT_DATA_DIR, DEFAULT_TABLE_NAME
from stepwise.local.dynamodb_local import DynamoDBLocal

DATA_DIR_VARIABLE = "STEPWISE_DATA_DIR"


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The store options every command that runs the agent takes."""
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        help="DynamoDB endpoint URL to use instead of the embedded DynamoDB Local (e.g. http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--table-name",
        default=DEFAULT_TABLE_NAME,
        help=f"the conversation table, created if missing (default {DEFAULT_TABLE_NAME})",
    )
    parser.add_argument(
        "--data-dir",
        type=Path,
        default=Path(os.environ.get(DATA_DIR_VARIABLE) or DEFAULT_DATA_DIR),
        help=f"where the embedded DynamoDB Local keeps its data (default ${DATA_DIR_VARIABLE} or {DEFAULT_DATA_DIR})",
    )


@contextmanager
def store_endpoint(args: argparse.Namespace) -> Iterator[str]:
    """The DynamoDB endpoint of a command: the one given, or DynamoDB Local on `--data-dir` while it runs."""
    if args.dynamodb_endpoint:
        yield args.dynamodb_endpoint
        return
    with DynamoDBLocal(args.data_dir) as engine:
        yield engine.endpoint_url
