"""Which store a `stepwise` command uses: `--dynamodb-endpoint`, `--table-name`, `--data-dir`."""

from __future__ import annotations

import argparse
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from stepwise.errors import UsageError
from stepwise.local.defaults import DEFAULT_DATA_DIR, DEFAULT_TABLE_NAME
from stepwise.local.dynamodb_local import DynamoDBLocal

DATA_DIR_VARIABLE = "STEPWISE_DATA_DIR"
# DynamoDB's rule for table names (CreateTable's TableName)
_TABLE_NAME = re.compile(r"[A-Za-z0-9_.-]{3,255}")


def table_name(text: str) -> str:
    """`--table-name`: a name DynamoDB accepts, checked before any store starts (argparse says why in one line)."""
    if not _TABLE_NAME.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a DynamoDB table name: 3 to 255 of the letters a-z and A-Z, digits, '_', '-' and '.'"
        )
    return text


def add_store_arguments(parser: argparse.ArgumentParser) -> None:
    """The store options every command that runs the agent takes."""
    parser.add_argument(
        "--dynamodb-endpoint",
        default=None,
        help="DynamoDB endpoint URL to use instead of the embedded DynamoDB Local (e.g. http://127.0.0.1:8000)",
    )
    parser.add_argument(
        "--table-name",
        type=table_name,
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
    ensure_data_dir(args.data_dir)
    with DynamoDBLocal(args.data_dir) as engine:
        yield engine.endpoint_url


def ensure_data_dir(path: Path) -> None:
    """Create `--data-dir` if missing; `UsageError` naming the option when it cannot be the store's folder."""
    if path.exists() and not path.is_dir():
        raise UsageError(f"--data-dir {path}: not a folder")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"--data-dir {path}: cannot create the folder: {exc.strerror or exc}") from None
