"""Something done at the wire just before a DynamoDB request leaves: how a test orders two writers at the store.

Hooked on botocore's `before-call` event of every botocore session created while the hook is installed (the
store's client has a session of its own, made when a handler first needs it), as `bench/dynamodb_meter.py`
counts requests, so the code under test is not touched.

    with before_store_call("TransactWriteItems", cancel_the_run) as ran:
        ...  # the API's answer: the run is cancelled just before the answer's transaction is sent
    assert ran == ["TransactWriteItems"]
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any


@contextmanager
def before_store_call(operation: str, action: Callable[[], None]) -> Iterator[list[str]]:
    """Run `action` once, just before the first `operation` request of a DynamoDB client whose session is
    created inside the block; yields the operations it ran before (empty until it has)."""
    import botocore.session

    ran: list[str] = []
    hooked: list[Any] = []
    original_init = botocore.session.Session.__init__

    def before(model: Any, **_: Any) -> None:
        if not ran:
            ran.append(model.name)
            action()

    def hooked_init(session: Any, *args: Any, **kwargs: Any) -> None:
        original_init(session, *args, **kwargs)
        session.register(f"before-call.dynamodb.{operation}", before)
        hooked.append(session)

    botocore.session.Session.__init__ = hooked_init  # type: ignore[method-assign,assignment]
    try:
        yield ran
    finally:
        botocore.session.Session.__init__ = original_init  # type: ignore[method-assign]
        for session in hooked:
            session.unregister(f"before-call.dynamodb.{operation}", before)
