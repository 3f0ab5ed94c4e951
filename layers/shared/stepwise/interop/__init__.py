"""Other agents' protocols served on the API: A2A (each profile an A2A agent) and MCP (each profile a tool).

Each protocol is an ASGI app built by its official SDK (`protocol_apps`), mounted on paths of its own by
`stepwise serve`'s front and, on AWS, by the streaming function (behind the Lambda Web Adapter, so answers
may stream). The apps hold no logic of runs: they translate the protocol into calls of the API function,
made in process as the calling client (`api_calls.ApiCaller`), so ownership, validation, limits and
idempotency are the API's own.
"""
