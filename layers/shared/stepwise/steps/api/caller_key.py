"""The API key a caller presents: `x-api-key`, as API Gateway reads it, or `Authorization: Bearer`, as
OpenAI clients send their `api_key`.

On AWS a request authorizer (`authorize`) hands the presented key to API Gateway as the usage-plan key
(API key source `AUTHORIZER`), so API Gateway still checks it against the usage plan and fills in the
key's id as the caller's identity; `stepwise serve` maps the same key to the identity itself.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

_BEARER = "bearer"


def presented_api_key(headers: Iterable[tuple[str, str]]) -> str | None:
    """The key in `x-api-key`, else the token of an `Authorization: Bearer` header; None without either.

    Another `Authorization` scheme (a SigV4 signature) is not a key.
    """
    pairs = [(name.lower(), value.strip()) for name, value in headers]
    api_key = next((value for name, value in pairs if name == "x-api-key" and value), None)
    if api_key:
        return api_key
    for name, value in pairs:
        scheme, _, token = value.partition(" ")
        if name == "authorization" and scheme.lower() == _BEARER and token.strip():
            return token.strip()
    return None


def authorize(event: Mapping[str, Any]) -> dict[str, Any]:
    """A REQUEST authorizer's answer: allow the method, with the presented key as the usage-plan key.

    The authorizer does not judge the key: API Gateway refuses (403) a key that is not in the usage plan,
    exactly as it does for `x-api-key`. Without any key the answer is a deny, which API Gateway sends
    as 403 too.
    """
    headers = (event.get("headers") or {}).items()
    key = presented_api_key(headers)
    method_arn = str(event.get("methodArn") or "")
    effect = "Allow" if key else "Deny"
    answer: dict[str, Any] = {
        "principalId": "api-key-caller" if key else "anonymous",
        "policyDocument": {
            "Version": "2012-10-17",
            "Statement": [{"Action": "execute-api:Invoke", "Effect": effect, "Resource": method_arn}],
        },
    }
    if key:
        answer["usageIdentifierKey"] = key
    return answer
