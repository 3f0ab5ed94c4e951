"""The (method, API Gateway resource path) of every API route, with no imports.

Kept apart from `routes` (Powertools' resolver, the API models) so that what only needs the table, the
streaming function's proxy events and the local HTTP front, does not load the whole API to read it.
"""

# template.yaml declares the same ones.
ROUTES: tuple[tuple[str, str], ...] = (
    ("POST", "/v1/runs"),
    ("GET", "/v1/runs"),
    ("GET", "/v1/runs/{run_id}"),
    ("POST", "/v1/runs/{run_id}/cancel"),
    ("POST", "/v1/runs/{run_id}/replay"),
    ("POST", "/v1/runs/{run_id}/approvals/{call_id}"),
    ("GET", "/v1/approvals"),
    ("POST", "/v1/runs/{run_id}/budget"),
    ("GET", "/v1/runs/{run_id}/steps/{iteration}/{call_id}"),
    ("POST", "/v1/runs/{run_id}/messages"),
    ("POST", "/v1/runs/{run_id}/pause"),
    ("POST", "/v1/runs/{run_id}/resume"),
    ("GET", "/v1/runs/{run_id}/events"),
    ("GET", "/v1/overview"),
    ("POST", "/v1/chat/completions"),
    ("GET", "/v1/models"),
    ("GET", "/v1/models/{model_id}"),
    ("GET", "/v1/openapi.json"),
)

# The console's page and files (`console_routes`): public, and not part of the API's OpenAPI document.
CONSOLE_ROUTES: tuple[tuple[str, str], ...] = (
    ("GET", "/ui"),
    ("GET", "/ui/{asset}"),
)
