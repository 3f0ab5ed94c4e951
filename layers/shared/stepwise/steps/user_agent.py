"""The User-Agent Stepwise's own AWS clients send."""

from __future__ import annotations

import functools


@functools.cache
def fixed_user_agent() -> str:
    """The User-Agent of the store's and the state machine's clients, given so that botocore does not rebuild
    it, sanitising every component, twice per request: 13% of the steps' CPU in a `stepwise serve` burst
    (docs/performance.md)."""
    import platform

    import boto3
    import botocore

    return (
        f"Boto3/{boto3.__version__} md/Botocore#{botocore.__version__} ua/2.1 "
        f"lang/python#{platform.python_version()} app/stepwise"
    )
